"""Connection security (``network/security.py``): what the configuration makes of TLS and SASL, certificate files,
no password in any repr; and the SASL messages on the wire, which ``protocol/sasl.py`` encodes."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
import trustme

from asyncconsumer import ConfigError, ConsumerConfig
from asyncconsumer.network.sasl import mechanism_for
from asyncconsumer.network.security import ConnectionSecurity, SaslCredentials
from asyncconsumer.protocol.base import decode_request_frame, decode_response, encode_request, encode_response
from asyncconsumer.protocol.messages.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from asyncconsumer.protocol.messages.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse


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
