"""The admin client on the chassis (``_background/admin_kind.py``): its parts built, never run: the managers the
loop polls, and the processor that hands each request to the request manager."""

from __future__ import annotations

import pytest

from asyncconsumer._background.builder import build_admin
from asyncconsumer._background.chassis import polled_managers
from asyncconsumer._clock import ManualClock
from asyncconsumer._state.snapshot import AdminMetrics
from asyncconsumer.config import AdminConfig
from asyncconsumer.events.admin import AdminRequestEvent
from asyncconsumer.events.application import ApplicationEvent, CloseEvent
from asyncconsumer.managers.admin_requests import AdminRequestsManager
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.protocol.messages.metadata import MetadataRequest


def test_the_loop_polls_metadata_then_the_request_manager_and_there_is_no_fetch_buffer() -> None:
    parts = build_admin(AdminConfig.from_settings("h:1"), ManualClock())
    managers = polled_managers(parts.owned)
    assert [type(m) for m in managers] == [MetadataManager, AdminRequestsManager]
    assert not hasattr(parts, "buffer")


def test_the_processor_hands_a_request_over_tracks_its_deadline_and_takes_the_close() -> None:
    parts = build_admin(AdminConfig.from_settings("h:1"), ManualClock())
    processor, requests = parts.owned.processor, parts.owned.requests
    event = AdminRequestEvent(request=MetadataRequest(topics=()), deadline_ms=100)
    processor.process(event)
    (unsent,) = requests.poll(0).unsent_requests
    assert unsent.request == MetadataRequest(topics=())
    assert processor.next_deadline_ms() == 100
    processor.reap(100)
    with pytest.raises(TimeoutError, match="Metadata to a broker"):
        event.future.result(0)
    close = CloseEvent(deadline_ms=10)
    processor.process(close)
    assert not close.future.done()  # the loop's close work completes it
    odd = ApplicationEvent(deadline_ms=10)
    processor.process(odd)
    with pytest.raises(TypeError, match="unknown application event"):
        odd.future.result(0)


def test_a_snapshot_publishes_the_connections_as_the_caller_reads_them() -> None:
    parts = build_admin(AdminConfig.from_settings("h:1"), ManualClock())
    assert parts.published.current == AdminMetrics()  # nothing published before the loop runs
    parts.owned.delegate.connection_errors = 2
    parts.owned.publish_snapshot(0)
    published = parts.published.current
    assert published.connection_errors == 2 and published.connection_count == 0
    assert published.last_connection_error is None
