"""Example plugins for asyncconsumer, written only against ``asyncconsumer.plugins`` and ``asyncconsumer.protocol``.

``api-probe`` asks a broker for its API versions every ``interval_ms`` and publishes what it learnt. The other two
entry points are broken on purpose: ``fails-on-response`` raises when its answer arrives, and ``missing-factory``
names an object this module does not have.
"""

from __future__ import annotations

from typing import Any

from asyncconsumer.errors import KafkaError
from asyncconsumer.plugins import PluginContext, PollResult, UnsentRequest
from asyncconsumer.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse

FETCH_API_KEY = 1


class ApiProbe:
    """One ApiVersions request in flight at a time, to the least-loaded broker."""

    def __init__(self, context: PluginContext, interval_ms: int, fail_on_response: bool = False) -> None:
        self._ctx = context
        self._interval_ms = interval_ms
        self._fail_on_response = fail_on_response
        self._next_ms = 0
        self._in_flight = False
        self.probes = 0
        self.errors = 0

    def poll(self, now_ms: int) -> PollResult:
        if self._in_flight or now_ms < self._next_ms:
            return PollResult(max(self._next_ms - now_ms, 1))
        self._in_flight = True
        self._next_ms = now_ms + self._interval_ms
        sent_ms = now_ms

        def on_response(result: Any, answered_ms: int) -> None:
            self._in_flight = False
            if self._fail_on_response:
                raise RuntimeError("fails-on-response always fails")
            if isinstance(result, KafkaError) or not isinstance(result, ApiVersionsResponse):
                self.errors += 1
                self._ctx.set_metric("errors", self.errors)
                return
            self.probes += 1
            versions = {r.api_key: r.max_version for r in result.api_keys}
            self._ctx.set_metric("probes", self.probes)
            self._ctx.set_metric("round_trip_ms", answered_ms - sent_ms)
            self._ctx.set_metric("fetch_max_version", versions.get(FETCH_API_KEY, -1))
            self._ctx.set_metric("assigned_partitions", len(self._ctx.assignment()))
            self._ctx.log.info("api_probe.answered", apis=len(versions), probes=self.probes)

        # ApiVersions v3+ names the client: Kafka answers INVALID_REQUEST to empty names (the definitions' default).
        request = ApiVersionsRequest(client_software_name="api-probe", client_software_version="1.0")
        return PollResult(self._interval_ms, (UnsentRequest(request, None, on_response),))

    def poll_on_close(self, now_ms: int) -> PollResult:
        return PollResult()


def create_api_probe(context: PluginContext) -> ApiProbe:
    return ApiProbe(context, int(context.options.get("interval_ms", 1_000)))


def create_failing_probe(context: PluginContext) -> ApiProbe:
    return ApiProbe(context, int(context.options.get("interval_ms", 100)), fail_on_response=True)
