"""SASL mechanisms against the RFC's own exchange, SASL messages on the wire, and the security configuration."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
import trustme

from asyncconsumer import AuthenticationError, ConfigError, ConsumerConfig
from asyncconsumer.network.sasl import PlainMechanism, ScramMechanism, mechanism_for
from asyncconsumer.network.security import ConnectionSecurity, SaslCredentials
from asyncconsumer.protocol.base import decode_request_frame, decode_response, encode_request, encode_response
from asyncconsumer.protocol.messages.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from asyncconsumer.protocol.messages.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from tests.support.secure_front import _ScramServer

# RFC 7677 section 3: user "user", password "pencil", the client nonce and the server's answers.
RFC_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc_client() -> ScramMechanism:
    return ScramMechanism(SaslCredentials("SCRAM-SHA-256", "user", "pencil"), nonce=RFC_NONCE)


def test_scram_sha_256_reproduces_the_rfc_7677_exchange() -> None:
    client = rfc_client()
    assert client.initial() == b"n,,n=user,r=" + RFC_NONCE.encode()
    assert client.respond(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    assert not client.done
    assert client.respond(RFC_SERVER_FINAL) is None
    assert client.done


def test_scram_rejects_a_server_that_does_not_know_the_password() -> None:
    client = rfc_client()
    client.initial()
    client.respond(RFC_SERVER_FIRST)
    with pytest.raises(AuthenticationError, match="signature is wrong"):
        client.respond(b"v=" + b"A" * 44)
    assert not client.done


@pytest.mark.parametrize(
    ("server_first", "match"),
    [
        (b"r=someone-elses-nonce,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "nonce"),
        (b"r=" + RFC_NONCE.encode() + b",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "nonce"),  # not extended
        (b"r=" + RFC_NONCE.encode() + b"x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1024", "1024 iterations"),
        (b"r=" + RFC_NONCE.encode() + b"x,s=!!notbase64,i=4096", "malformed"),
        (b"r=" + RFC_NONCE.encode() + b"x,i=4096", "malformed"),
        (b"e=unknown-user", "authentication failed: unknown-user"),
        (b"\xff\xfe", "not UTF-8"),
        (b"garbage", "malformed"),
    ],
)
def test_scram_refuses_bad_server_first_messages(server_first: bytes, match: str) -> None:
    client = rfc_client()
    client.initial()
    with pytest.raises(AuthenticationError, match=match):
        client.respond(server_first)


def test_scram_reports_the_servers_final_error() -> None:
    client = rfc_client()
    client.initial()
    client.respond(RFC_SERVER_FIRST)
    with pytest.raises(AuthenticationError, match="invalid-proof"):
        client.respond(b"e=invalid-proof")


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize(("user", "password"), [("alice", "pw"), ("a=b,c", "p,=w\u00e9")])
def test_scram_client_and_the_test_servers_side_agree(mechanism: str, user: str, password: str) -> None:
    client = mechanism_for(SaslCredentials(mechanism, user, password))
    server = _ScramServer(mechanism, {user: password})
    error, server_first = server.step(client.initial())
    assert error is None
    client_final = client.respond(server_first)
    assert client_final is not None
    error, server_final = server.step(client_final)
    assert error is None
    assert client.respond(server_final) is None and client.done


def test_scram_with_the_wrong_password_fails_at_the_server() -> None:
    client = mechanism_for(SaslCredentials("SCRAM-SHA-512", "alice", "wrong"))
    server = _ScramServer("SCRAM-SHA-512", {"alice": "right"})
    _, server_first = server.step(client.initial())
    final = client.respond(server_first)
    assert final is not None
    error, _ = server.step(final)
    assert error is not None and "invalid credentials" in error


def test_plain_is_one_rfc_4616_token() -> None:
    plain = mechanism_for(SaslCredentials("PLAIN", "alice", "s3cret"))
    assert isinstance(plain, PlainMechanism)
    assert plain.initial() == b"\0alice\0s3cret"
    assert not plain.done
    assert plain.respond(b"") is None
    assert plain.done


def test_no_repr_shows_a_password() -> None:
    credentials = SaslCredentials("SCRAM-SHA-256", "alice", "s3cret-pw")
    shown = [
        repr(credentials),
        repr(mechanism_for(credentials)),
        repr(mechanism_for(SaslCredentials("PLAIN", "alice", "s3cret-pw"))),
        repr(SaslAuthenticateRequest(auth_bytes=b"\0alice\0s3cret-pw")),
        repr(ConnectionSecurity(sasl=credentials)),
        repr(
            ConsumerConfig.from_kwargs(
                "h:1", security_protocol="SASL_PLAINTEXT", sasl_username="alice", sasl_password="s3cret-pw"
            )
        ),
    ]
    for text in shown:
        assert "s3cret-pw" not in text, text
    assert "alice" in shown[0]


@pytest.mark.parametrize("version", [1])
def test_sasl_handshake_round_trips(version: int) -> None:
    frame = encode_request(SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), version, 7, "cid")
    _, got_version, correlation_id, client_id, request = decode_request_frame(frame[4:], {17: SaslHandshakeRequest})
    assert (got_version, correlation_id, client_id, request) == (
        version,
        7,
        "cid",
        SaslHandshakeRequest(mechanism="SCRAM-SHA-512"),
    )
    response = SaslHandshakeResponse(error_code=33, mechanisms=("SCRAM-SHA-256", "SCRAM-SHA-512"))
    wire = encode_response(response, SaslHandshakeRequest, version, 7)
    assert decode_response(wire[4:], SaslHandshakeRequest, version) == response


@pytest.mark.parametrize("version", [0, 1, 2])
def test_sasl_authenticate_round_trips(version: int) -> None:
    token = bytes(range(256))
    frame = encode_request(SaslAuthenticateRequest(auth_bytes=token), version, 9, None)
    _, _, _, _, request = decode_request_frame(frame[4:], {36: SaslAuthenticateRequest})
    assert request == SaslAuthenticateRequest(auth_bytes=token)
    response = SaslAuthenticateResponse(
        error_code=58, error_message="no", auth_bytes=b"e=other-error", session_lifetime_ms=1000 if version >= 1 else 0
    )
    wire = encode_response(response, SaslAuthenticateRequest, version, 9)
    assert decode_response(wire[4:], SaslAuthenticateRequest, version) == response


def test_sasl_authenticate_v2_is_flexible_and_v0_is_not() -> None:
    v0 = encode_request(SaslAuthenticateRequest(auth_bytes=b"ab"), 0, 1, None)
    v2 = encode_request(SaslAuthenticateRequest(auth_bytes=b"ab"), 2, 1, None)
    assert v0.endswith(b"\x00\x00\x00\x02ab")  # int32 length
    assert v2.endswith(b"\x03ab\x00")  # uvarint length + 1, then no tagged fields


# --- configuration ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"security_protocol": "SASL_SSL"}, "sasl_username"),
        ({"security_protocol": "SASL_PLAINTEXT", "sasl_username": "u"}, "sasl_password"),
        ({"sasl_username": "u", "sasl_password": "p"}, "sasl_username"),
        (
            {"security_protocol": "SASL_SSL", "sasl_username": "u", "sasl_password": "p", "sasl_mechanism": "GSSAPI"},
            "sasl_mechanism",
        ),
        ({"ssl_cafile": "/ca.pem"}, "ssl_cafile"),
        (
            {
                "security_protocol": "SASL_PLAINTEXT",
                "sasl_username": "u",
                "sasl_password": "p",
                "ssl_context": ssl.create_default_context(),
            },
            "ssl_context",
        ),
        (
            {"security_protocol": "SSL", "ssl_context": ssl.create_default_context(), "ssl_cafile": "/ca.pem"},
            "ssl_cafile",
        ),
        (
            {"security_protocol": "SSL", "ssl_context": ssl.create_default_context(), "ssl_check_hostname": False},
            "ssl_check_hostname",
        ),
        ({"security_protocol": "SSL", "ssl_keyfile": "/key.pem"}, "ssl_keyfile"),
        ({"security_protocol": "SSL", "ssl_context": "not a context"}, "ssl_context"),
        ({"security_protocol": "TLS"}, "security_protocol"),
    ],
)
def test_security_settings_that_cannot_work_are_config_errors(settings: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        ConsumerConfig.from_kwargs("h:1", **settings)
    assert info.value.key == key


def test_security_names_are_case_insensitive_and_java_spellings_work() -> None:
    config = ConsumerConfig.from_kwargs(
        "h:1",
        **{"security.protocol": "sasl_ssl", "sasl.mechanism": "scram-sha-512"},
        sasl_username="u",
        sasl_password="p",
    )
    assert (config.security_protocol, config.sasl_mechanism) == ("SASL_SSL", "SCRAM-SHA-512")
    security = ConnectionSecurity.from_config(config)
    assert security.ssl_context is not None and security.ssl_context.check_hostname
    assert security.ssl_context.verify_mode is ssl.CERT_REQUIRED
    assert security.sasl == SaslCredentials("SCRAM-SHA-512", "u", "p")
    assert security.description == "sasl SCRAM-SHA-512 over tls"


def test_plaintext_has_no_tls_and_no_sasl() -> None:
    security = ConnectionSecurity.from_config(ConsumerConfig.from_kwargs("h:1"))
    assert security == ConnectionSecurity()
    assert security.description == "plaintext"


def test_a_missing_ca_file_fails_at_construction_naming_the_key(tmp_path: Path) -> None:
    config = ConsumerConfig.from_kwargs("h:1", security_protocol="SSL", ssl_cafile=str(tmp_path / "missing.pem"))
    with pytest.raises(ConfigError) as info:
        ConnectionSecurity.from_config(config)
    assert info.value.key == "ssl_cafile" and "missing.pem" in str(info.value)


def test_client_certificate_files_are_loaded(tmp_path: Path) -> None:
    ca = trustme.CA()
    leaf = ca.issue_cert("client.example")
    ca_path, cert_path, key_path = tmp_path / "ca.pem", tmp_path / "cert.pem", tmp_path / "key.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    leaf.cert_chain_pems[0].write_to_path(str(cert_path))
    leaf.private_key_pem.write_to_path(str(key_path))
    config = ConsumerConfig.from_kwargs(
        "h:1", security_protocol="SSL", ssl_cafile=str(ca_path), ssl_certfile=str(cert_path), ssl_keyfile=str(key_path)
    )
    assert ConnectionSecurity.from_config(config).ssl_context is not None
    broken = ConsumerConfig.from_kwargs(
        "h:1", security_protocol="SSL", ssl_cafile=str(ca_path), ssl_certfile=str(ca_path), ssl_keyfile=str(ca_path)
    )
    with pytest.raises(ConfigError) as info:
        ConnectionSecurity.from_config(broken)
    assert info.value.key == "ssl_certfile"


def test_the_constructor_raises_the_config_error() -> None:
    from asyncconsumer import AsyncConsumer

    with pytest.raises(ConfigError) as info:
        AsyncConsumer("h:1", security_protocol="SSL", ssl_cafile="/nonexistent/ca.pem")
    assert info.value.key == "ssl_cafile"
