"""The admin client's request manager (``managers/admin_requests.py``), driven with literal times and hand-built
answers: where each request goes, coordinators found once and looked up again when they move, connection errors
retried after a backoff, and errors no retry fixes handed back at once."""

from __future__ import annotations

import pytest

from asyncconsumer.errors import ErrorCode, GroupAuthorizationFailedError, KafkaConnectionError, UnknownServerError
from asyncconsumer.events.admin import AdminAnswer, AdminRequestEvent, CoordinatorOf
from asyncconsumer.managers.admin_requests import AdminRequestsManager
from asyncconsumer.managers.base import UnsentRequest
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.protocol.messages.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from asyncconsumer.protocol.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from asyncconsumer.protocol.messages.metadata import MetadataRequest, MetadataResponse

G = CoordinatorOf("g")
DESCRIBE = DescribeGroupsRequest(groups=("g",))


def manager() -> AdminRequestsManager:
    return AdminRequestsManager(ExponentialBackoff(100, 1_000, jitter=0))


def event(target: object = None, *, deadline_ms: int = 10_000, **fields: object) -> AdminRequestEvent:
    request = DESCRIBE if target is not None else MetadataRequest(topics=())
    return AdminRequestEvent(request=request, target=target, deadline_ms=deadline_ms, **fields)  # type: ignore[arg-type]


def found(node: int = 3) -> FindCoordinatorResponse:
    return FindCoordinatorResponse(error_code=0, node_id=node, host="broker-3", port=9093)


def sent(m: AdminRequestsManager, now: int) -> list[UnsentRequest]:
    return list(m.poll(now).unsent_requests)


def test_a_request_without_a_target_goes_to_the_least_loaded_node_and_completes_with_the_answer() -> None:
    m = manager()
    e = event()
    m.submit(e)
    (unsent,) = sent(m, 0)
    assert unsent.node_id is None and isinstance(unsent.request, MetadataRequest)
    unsent.on_response(MetadataResponse(), 1)
    assert e.future.result(0) == AdminAnswer(-1, MetadataResponse())
    assert sent(m, 2) == []  # answered: nothing left to send


def test_a_coordinators_request_waits_for_one_lookup_then_goes_to_the_node_found() -> None:
    m = manager()
    first, second = event(G), event(G)
    m.submit(first)
    m.submit(second)
    (lookup,) = sent(m, 0)  # one FindCoordinator for both
    assert isinstance(lookup.request, FindCoordinatorRequest) and lookup.request.key == "g"
    assert sent(m, 1) == []  # the lookup is under way
    lookup.on_response(found(), 2)
    assert m.address(3) == ("broker-3", 9093) and m.address(4) is None
    requests = sent(m, 3)
    assert [(u.node_id, u.request) for u in requests] == [(3, DESCRIBE), (3, DESCRIBE)]
    requests[0].on_response(DescribeGroupsResponse(), 4)
    assert first.future.result(0) == AdminAnswer(3, DescribeGroupsResponse()) and not second.future.done()


def test_a_connection_error_is_retried_after_the_backoff_and_the_coordinator_looked_up_again() -> None:
    m = manager()
    e = event(G)
    m.submit(e)
    sent(m, 0)[0].on_response(found(), 1)
    (request,) = sent(m, 2)
    request.on_response(KafkaConnectionError("connection to node 3 closed"), 10)
    assert not e.future.done()
    result = m.poll(50)
    assert result.unsent_requests == () and result.time_until_next_poll_ms == 60  # 100 ms after the failure
    (lookup,) = sent(m, 110)
    assert isinstance(lookup.request, FindCoordinatorRequest)  # forgotten: it may have moved
    lookup.on_response(found(4), 111)
    (again,) = sent(m, 112)
    assert again.node_id == 4


def test_an_error_no_retry_fixes_fails_the_request_at_once() -> None:
    m = manager()
    e = event()
    m.submit(e)
    sent(m, 0)[0].on_response(UnknownServerError("boom"), 1)
    with pytest.raises(UnknownServerError, match="boom"):
        e.future.result(0)
    assert sent(m, 5_000) == []


def test_a_lookup_the_broker_refuses_for_good_fails_every_request_waiting_on_it() -> None:
    m = manager()
    waiting = [event(G), event(G)]
    for e in waiting:
        m.submit(e)
    other = event()
    m.submit(other)
    lookup = next(u for u in sent(m, 0) if isinstance(u.request, FindCoordinatorRequest))
    lookup.on_response(FindCoordinatorResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, error_message="no"), 1)
    for e in waiting:
        assert isinstance(e.future.exception(0), GroupAuthorizationFailedError)
    assert not other.future.done()


def test_a_lookup_that_may_succeed_later_is_asked_again_after_the_backoff() -> None:
    m = manager()
    m.submit(event(G))
    sent(m, 0)[0].on_response(FindCoordinatorResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE), 5)
    assert sent(m, 50) == []
    (again,) = sent(m, 105)
    assert isinstance(again.request, FindCoordinatorRequest)


def test_refresh_forgets_the_coordinator_and_a_closed_connection_forgets_its_node() -> None:
    m = manager()
    m.submit(event(G))
    sent(m, 0)[0].on_response(found(), 1)
    sent(m, 2)
    m.submit(event(G, refresh=True))
    (lookup,) = sent(m, 3)
    assert isinstance(lookup.request, FindCoordinatorRequest)
    lookup.on_response(found(), 4)
    sent(m, 5)
    m.disconnected(3)
    assert m.address(3) is None
    m.submit(event(G))
    assert isinstance(sent(m, 6)[0].request, FindCoordinatorRequest)


def test_a_delayed_request_waits_and_one_past_its_deadline_is_dropped() -> None:
    m = manager()
    later = event(not_before_ms=500)
    m.submit(later)
    result = m.poll(100)
    assert result.unsent_requests == () and result.time_until_next_poll_ms == 400
    assert len(sent(m, 500)) == 1
    gone = event()
    m.submit(gone)
    gone.fail(TimeoutError("past its deadline"))  # what the processor's reap does
    assert sent(m, 600) == []
    assert m.poll_on_close(700).unsent_requests == ()
