"""What the CLI's commands share: the progress line on a terminal, and off one the single plain line of the first
connection failure; Ctrl-C as a stop."""

from __future__ import annotations

import asyncio
import io
import os
import signal

from asyncconsumer.tools._common import Interrupt, Progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_rewrites_one_line_at_most_every_interval_and_clears_it() -> None:
    now = [0.0]
    stream = _Tty()
    progress = Progress(stream, interval_s=1.0, clock=lambda: now[0])
    now[0] = 2.0
    progress.update(100)
    progress.update(150)  # too soon: not shown
    now[0] = 3.5
    progress.update(300, 1000)
    progress.close()
    shown = stream.getvalue().split("\r\x1b[K")
    assert shown == ["", "  100 records  50/s  2 s", "  300/1,000 (30%) records  86/s  4 s", ""]


def test_progress_says_what_it_waits_for_until_records_flow() -> None:
    now = [0.0]
    stream = _Tty()
    progress = Progress(stream, interval_s=1.0, clock=lambda: now[0])
    progress.waiting("connecting to h:9092")
    now[0] = 2.0
    progress.waiting("joining group G", "cannot connect to broker 1 at h:9092: connection refused")
    now[0] = 2.5
    progress.waiting("joining group G")  # too soon: not shown
    now[0] = 4.0
    progress.update(10)
    shown = stream.getvalue().split("\r\x1b[K")
    assert shown == [
        "",
        "  connecting to h:9092...  0 s",
        "  joining group G...  2 s  (cannot connect to broker 1 at h:9092: connection refused)",
        "  10 records  2/s  4 s",
    ]


def test_progress_is_silent_off_a_terminal() -> None:
    stream = io.StringIO()
    progress = Progress(stream)
    progress.update(1, force=True)
    progress.close()
    assert stream.getvalue() == ""


def test_off_a_terminal_the_first_connection_failure_is_one_plain_line() -> None:
    stream = io.StringIO()
    progress = Progress(stream, timeout_ms=30_000)
    progress.waiting("connecting to h:9092", bounded=True)  # no failure yet: nothing
    progress.waiting(
        "connecting to h:9092", "cannot connect to bootstrap server h:9092: connection refused", bounded=True
    )
    progress.waiting("connecting to h:9092", "cannot connect to bootstrap server h:9092: timed out", bounded=True)
    progress.update(5, force=True)
    progress.close()
    assert stream.getvalue() == (
        "waiting: cannot connect to bootstrap server h:9092: connection refused "
        "(giving up after 30 s; --timeout-ms to change)\n"
    )


def test_a_wait_the_timeout_does_not_bound_says_no_deadline() -> None:
    stream = io.StringIO()
    progress = Progress(stream, timeout_ms=1_500)
    progress.waiting("joining group G", "cannot connect to group coordinator (broker 1) at h:9092: connection refused")
    assert (
        stream.getvalue() == "waiting: cannot connect to group coordinator (broker 1) at h:9092: connection refused\n"
    )
    bounded = io.StringIO()
    Progress(bounded, timeout_ms=1_500).waiting("connecting to h:1", "refused", bounded=True)
    assert bounded.getvalue() == "waiting: refused (giving up after 1.5 s; --timeout-ms to change)\n"


def test_a_terminal_gets_no_plain_line() -> None:
    stream = _Tty()
    progress = Progress(stream, timeout_ms=30_000)
    progress.waiting("connecting to h:9092", "refused", bounded=True)
    progress.close()
    assert "\n" not in stream.getvalue() and "giving up" not in stream.getvalue()


def test_interrupt_turns_the_first_ctrl_c_into_a_stop_and_gives_the_second_back() -> None:
    async def main() -> None:
        interrupt = Interrupt()
        os.kill(os.getpid(), signal.SIGINT)
        await asyncio.wait_for(interrupt.stopped.wait(), 5)
        # the handler is gone: a second Ctrl-C would be Python's KeyboardInterrupt again
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        interrupt.remove()  # a no-op after the first

        untouched = Interrupt()
        untouched.remove()
        assert not untouched.stopped.is_set()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

    asyncio.run(main())
