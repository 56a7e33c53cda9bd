"""A share consumer's records are locked for it by the broker until it acknowledges them, so it fetches only for a
caller that is close to them: when nothing is buffered (``record_limit``), or at most one response ahead of the
caller (``batch_optimized``). A fetch in flight to one broker does not hold back another broker's (there is one per
broker at most), but every fetch is sized within the buffer's room (``room``/``reserve``): ``fetch_buffer_bytes``
bounds what a share consumer holds exactly as it bounds a consumer's.
"""

from __future__ import annotations

from asyncconsumer._state.fetch_buffer import FetchBuffer


class ShareFetchBuffer(FetchBuffer):
    """``FetchBuffer`` plus the share consumer's admission rules (background side)."""

    def empty_or_wait(self) -> bool:
        """True when nothing is buffered; otherwise the caller's next release wakes the background (``record_limit``
        fetches only then, so it never holds locks on records the caller has not reached)."""
        with self._lock:
            if self._bytes == 0:
                return True
            self._background_waiting = True
            return False

    def one_response_ahead(self, caller_holds: bool) -> bool:
        """True when a fetch now would put the caller at most one response behind (nothing buffered or, if the caller
        holds no decoded record, the one response it has not started); otherwise the caller's next release wakes the
        background. Fetching on arrival, before the caller decodes, keeps the next fetch from waiting for a GIL the
        caller holds."""
        with self._lock:
            if self._bytes == 0 or (not caller_holds and self._responses == 1):
                return True
            self._background_waiting = True
            return False
