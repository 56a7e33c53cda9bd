"""SASL/GSSAPI (``network/kerberos.py``): the mechanism's steps over a fake GSS-API context (context tokens, the
RFC 4752 security-layer reply), the errors it makes of ``gssapi`` failures, and the GSSAPI settings' checks. The
exchange with a real KDC and Kafka is in ``tests/integration/test_kerberos_kafka.py``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from asyncconsumer import AuthenticationError, ConfigError, ConsumerConfig
from asyncconsumer.network.kerberos import GssapiMechanism, KerberosLogin, describe_failure
from asyncconsumer.network.security import ConnectionSecurity
from tests.support.extras import requires_extra


@attrs.define
class FakeContext:
    """A context that needs ``rounds`` tokens from the broker, then "wraps" by prefixing ``W:``."""

    rounds: int = 1
    initiator: str = "client@EXAMPLE.COM"
    steps: list[bytes | None] = attrs.field(factory=list)
    wrapped: list[bytes] = attrs.field(factory=list)

    @property
    def complete(self) -> bool:
        return len(self.steps) > self.rounds

    def step(self, token: bytes | None) -> bytes | None:
        self.steps.append(token)
        return None if self.complete else b"token-%d" % len(self.steps)

    def unwrap(self, message: bytes) -> bytes:
        assert message.startswith(b"W:")
        return message[2:]

    def wrap(self, message: bytes) -> bytes:
        self.wrapped.append(message)
        return b"W:" + message


def test_context_tokens_then_the_security_layer_reply_then_done() -> None:
    context = FakeContext()
    mechanism = GssapiMechanism(lambda: context)
    assert mechanism.initial() == b"token-1"
    assert mechanism.respond(b"ap-rep") == b""  # established, nothing to send: an empty reply, as Java's client
    assert context.steps == [None, b"ap-rep"]
    reply = mechanism.respond(b"W:" + bytes([0x01, 0x00, 0x10, 0x00]))  # "no layer" offered, 4 KiB
    assert reply == b"W:" + bytes([0x01, 0, 0, 0]) + b"client@EXAMPLE.COM"
    assert mechanism.done
    assert mechanism.respond(b"") is None  # the broker's empty last answer ends the exchange


def test_the_context_is_made_on_the_first_step_only() -> None:
    made: list[FakeContext] = []
    mechanism = GssapiMechanism(lambda: made.append(FakeContext()) or made[-1])
    assert made == []  # nothing blocking before the worker thread runs the first step
    mechanism.initial()
    assert len(made) == 1
    with pytest.raises(AuthenticationError, match="already started"):
        mechanism.initial()


def test_a_layer_offer_without_none_is_refused() -> None:
    mechanism = GssapiMechanism(lambda: FakeContext(rounds=0))
    mechanism.initial()
    with pytest.raises(AuthenticationError, match="security layers 0x06 without 'none'"):
        mechanism.respond(b"W:" + bytes([0x06, 0, 0x10, 0]))


def test_a_layer_offer_of_another_size_is_refused() -> None:
    mechanism = GssapiMechanism(lambda: FakeContext(rounds=0))
    mechanism.initial()
    with pytest.raises(AuthenticationError, match="5 bytes, not 4"):
        mechanism.respond(b"W:" + bytes(5))


def test_a_broker_message_before_the_exchange_is_refused() -> None:
    with pytest.raises(AuthenticationError, match="state start"):
        GssapiMechanism(lambda: FakeContext()).respond(b"x")


def test_the_service_principal_is_the_service_at_the_host_or_the_domain_name() -> None:
    assert KerberosLogin().target("broker1.example.com") == "kafka@broker1.example.com"
    assert KerberosLogin("kfk", domain_name="kafka.example.com").target("10.0.0.1") == "kfk@kafka.example.com"


def test_each_login_keeps_its_tickets_in_a_memory_cache_of_its_own() -> None:
    first, second = KerberosLogin(keytab="/k"), KerberosLogin(keytab="/k")
    assert first.ccache.startswith("MEMORY:") and first.ccache != second.ccache


def _gss_error(kind: str, major: int, minor: int) -> Any:
    requires_extra("gssapi", "gssapi")
    import gssapi.exceptions
    from gssapi.raw.misc import GSSError

    cls = GSSError if kind == "GSSError" else getattr(gssapi.exceptions, kind)
    return cls(major, minor)


NO_CRED = 7 << 16
FAILURE = 13 << 16
S_PRINCIPAL_UNKNOWN = -1765328377 & 0xFFFFFFFF
C_PRINCIPAL_UNKNOWN = -1765328378 & 0xFFFFFFFF
FCC_NOFILE = -1765328189 & 0xFFFFFFFF


def test_no_credentials_says_to_kinit_or_set_a_keytab() -> None:
    error = describe_failure(KerberosLogin(), "kafka@b1", _gss_error("MissingCredentialsError", NO_CRED, 0))
    assert "GSSAPI" in str(error) and "run kinit" in str(error) and "sasl_kerberos_keytab" in str(error)
    error = describe_failure(KerberosLogin(), "kafka@b1", _gss_error("GSSError", FAILURE, FCC_NOFILE))
    assert "run kinit" in str(error)


def test_no_credentials_from_a_keytab_names_the_keytab() -> None:
    login = KerberosLogin(principal="app@R", keytab="/etc/app.keytab")
    error = describe_failure(login, "kafka@b1", _gss_error("MissingCredentialsError", NO_CRED, 0))
    assert "'/etc/app.keytab'" in str(error) and "sasl_kerberos_principal" in str(error)


def test_an_unknown_service_names_the_principal_and_the_setting() -> None:
    error = describe_failure(KerberosLogin("kfk"), "kfk@b1", _gss_error("GSSError", FAILURE, S_PRINCIPAL_UNKNOWN))
    assert "kfk/b1" in str(error) and "sasl_kerberos_service_name ('kfk')" in str(error)


def test_an_unknown_client_names_the_principal() -> None:
    login = KerberosLogin(principal="ghost@R")
    error = describe_failure(login, "kafka@b1", _gss_error("GSSError", FAILURE, C_PRINCIPAL_UNKNOWN))
    assert "ghost@R" in str(error) and "sasl_kerberos_principal" in str(error)


def gssapi_config(**settings: Any) -> ConsumerConfig:
    return ConsumerConfig.from_kwargs("b:9092", security_protocol="SASL_PLAINTEXT", sasl_mechanism="GSSAPI", **settings)


def test_without_the_gssapi_package_gssapi_is_a_config_error_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "gssapi", None)  # import gssapi raises ImportError
    with pytest.raises(ConfigError, match=r'sasl_mechanism.*pip install "asyncconsumer\[gssapi\]"'):
        gssapi_config()


def test_the_gssapi_settings_and_their_java_spellings(tmp_path: Path) -> None:
    requires_extra("gssapi", "gssapi")
    keytab = tmp_path / "app.keytab"
    keytab.write_bytes(b"\x05\x02")
    config = ConsumerConfig.from_settings(
        {
            "bootstrap.servers": "b:9092",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "gssapi",
            "sasl.kerberos.service.name": "kfk",
            "sasl.kerberos.principal": "app@R",
            "sasl.kerberos.keytab": str(keytab),
            "sasl.kerberos.domain.name": "kafka.example.com",
        }
    )
    login = ConnectionSecurity.from_config(config).sasl
    assert isinstance(login, KerberosLogin)
    assert (login.service_name, login.principal, login.keytab, login.domain_name) == (
        "kfk",
        "app@R",
        str(keytab),
        "kafka.example.com",
    )
    assert ConnectionSecurity.from_config(config).description == "sasl GSSAPI over tls"
    assert gssapi_config().sasl_kerberos_service_name == "kafka"


@pytest.mark.parametrize(
    ("settings", "key", "match"),
    [
        (
            {"sasl_kerberos_keytab": "/no/such.keytab", "sasl_kerberos_principal": "a@R"},
            "sasl_kerberos_keytab",
            "no such file",
        ),
        ({"sasl_kerberos_service_name": ""}, "sasl_kerberos_service_name", "non-empty"),
        ({"sasl_kerberos_principal": 7}, "sasl_kerberos_principal", "non-empty string"),
        ({"sasl_username": "u", "sasl_password": "p"}, "sasl_username", "does not apply to GSSAPI"),
    ],
)
def test_bad_gssapi_settings_are_config_errors_naming_the_key(settings: dict[str, Any], key: str, match: str) -> None:
    requires_extra("gssapi", "gssapi")
    with pytest.raises(ConfigError, match=match) as info:
        gssapi_config(**settings)
    assert info.value.key == key


def test_a_keytab_needs_its_principal(tmp_path: Path) -> None:
    requires_extra("gssapi", "gssapi")
    keytab = tmp_path / "app.keytab"
    keytab.write_bytes(b"\x05\x02")
    with pytest.raises(ConfigError, match="required with sasl_kerberos_keytab") as info:
        gssapi_config(sasl_kerberos_keytab=str(keytab))
    assert info.value.key == "sasl_kerberos_principal"


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SASL_SSL"])
def test_kerberos_settings_without_gssapi_are_config_errors(protocol: str) -> None:
    with pytest.raises(ConfigError, match="applies only to sasl_mechanism GSSAPI") as info:
        ConsumerConfig.from_kwargs(
            "b:9092",
            security_protocol=protocol,
            sasl_mechanism="PLAIN",
            sasl_username="u" if protocol == "SASL_SSL" else None,
            sasl_password="p" if protocol == "SASL_SSL" else None,
            sasl_kerberos_service_name="kfk",
        )
    assert info.value.key == "sasl_kerberos_service_name"
