"""The admin client's core (``_caller/admin_core.py``): one event per request, answered by the background thread
by the deadline; a closed client refuses."""

from __future__ import annotations

import pytest

from asyncconsumer._caller.admin_core import AdminCore
from asyncconsumer.config import AdminConfig
from asyncconsumer.errors import ClientClosedError, KafkaError
from asyncconsumer.protocol.messages.metadata import MetadataRequest
from tests.support.no_broker import REFUSED


def test_a_request_no_broker_answers_fails_by_its_deadline_naming_what_was_asked() -> None:
    core = AdminCore(AdminConfig.from_settings(REFUSED))
    try:
        future = core.send(MetadataRequest(topics=()), None, core.clock.now_ms() + 300, delay_ms=0)
        with pytest.raises(KafkaError, match="Metadata to a broker"):
            core.wait(future, 300)
    finally:
        closing = core.close(1_000)
        assert closing is not None
        closing.result(5)
        core.finish_close(5)
    with pytest.raises(ClientClosedError, match="the admin client is closed"):
        core.send(MetadataRequest(topics=()), None, 0)
