"""The coordinator manager with literal timestamps and hand-built FindCoordinator answers."""

from __future__ import annotations

from asyncconsumer.errors import KafkaConnectionError
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.coordinator import COORDINATOR_NODE_BASE, CoordinatorManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.protocol.messages.find_coordinator import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)


def manager() -> tuple[CoordinatorManager, list[ErrorEvent]]:
    errors: list[ErrorEvent] = []
    return CoordinatorManager("g", ExponentialBackoff(100, 1000, jitter=0), errors.append), errors


def test_finds_the_coordinator_once_and_gives_it_its_own_connection_id() -> None:
    m, _ = manager()
    (request,) = m.poll(0).unsent_requests
    assert isinstance(request.request, FindCoordinatorRequest)
    assert request.request.key == "g" and request.node_id is None
    assert m.poll(1).unsent_requests == ()  # in flight
    request.on_response(
        FindCoordinatorResponse(error_code=0, node_id=7, host="broker7", port=9092, error_message=None), 2
    )
    assert m.coordinator is not None and m.coordinator.broker_node_id == 7
    assert m.coordinator.node_id == COORDINATOR_NODE_BASE - 7
    assert m.address(COORDINATOR_NODE_BASE - 7) == ("broker7", 9092)
    assert m.address(7) is None  # the broker's own connection is not the coordinator's
    assert m.poll(3).unsent_requests == ()


def test_the_v4_batched_answer_is_read_for_our_group() -> None:
    m, _ = manager()
    (request,) = m.poll(0).unsent_requests
    request.on_response(
        FindCoordinatorResponse(
            coordinators=(Coordinator(key="g", node_id=3, host="h", port=1, error_message=None),),
            node_id=-1,
            port=-1,
            error_message=None,
        ),
        1,
    )
    assert m.coordinator is not None and (m.coordinator.broker_node_id, m.coordinator.host) == (3, "h")


def test_retriable_errors_back_off_then_retry() -> None:
    m, errors = manager()
    (request,) = m.poll(0).unsent_requests
    request.on_response(
        FindCoordinatorResponse(error_code=15, node_id=-1, host="", port=-1, error_message=None), 10
    )  # COORDINATOR_NOT_AVAILABLE
    assert m.poll(50).unsent_requests == ()
    assert m.poll(50).time_until_next_poll_ms == 60
    (again,) = m.poll(110).unsent_requests
    again.on_response(KafkaConnectionError("down"), 120)
    assert m.poll(300).unsent_requests == ()  # second failure: 200 ms
    assert len(m.poll(320).unsent_requests) == 1
    assert errors == []


def test_a_fatal_error_reaches_the_caller_once() -> None:
    m, errors = manager()
    (request,) = m.poll(0).unsent_requests
    request.on_response(
        FindCoordinatorResponse(error_code=30, node_id=-1, host="", port=-1, error_message="not allowed"), 1
    )  # GROUP_AUTHORIZATION_FAILED
    assert len(errors) == 1 and "GROUP_AUTHORIZATION_FAILED" in str(errors[0].error)
    assert m.coordinator is None


def test_a_lost_coordinator_is_looked_up_again() -> None:
    m, _ = manager()
    (request,) = m.poll(0).unsent_requests
    request.on_response(FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=1, error_message=None), 1)
    m.mark_unknown("NOT_COORDINATOR")
    assert m.coordinator is None
    assert len(m.poll(2).unsent_requests) == 1


def test_only_the_coordinators_own_connection_closing_loses_it() -> None:
    m, _ = manager()
    (request,) = m.poll(0).unsent_requests
    request.on_response(FindCoordinatorResponse(error_code=0, node_id=4, host="h", port=1, error_message=None), 1)
    m.disconnected(4)  # the broker's own connection
    assert m.coordinator is not None
    m.disconnected(COORDINATOR_NODE_BASE - 4)
    assert m.coordinator is None
    assert len(m.poll(2).unsent_requests) == 1
