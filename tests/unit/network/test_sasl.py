"""The SASL mechanisms (``network/sasl.py``): SCRAM against RFC 7677's own exchange and against the test servers'
side, the server-side errors it reports, and PLAIN's single RFC 4616 token."""

from __future__ import annotations

import pytest

from asyncconsumer import AuthenticationError
from asyncconsumer.network.sasl import PlainMechanism, ScramMechanism, mechanism_for
from asyncconsumer.network.security import SaslCredentials
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


def test_scram_starts_once_and_takes_no_message_after_it_is_done() -> None:
    client = rfc_client()
    client.initial()
    with pytest.raises(AuthenticationError, match="already started"):
        client.initial()
    client.respond(RFC_SERVER_FIRST)
    client.respond(RFC_SERVER_FINAL)
    with pytest.raises(AuthenticationError, match="unexpected server message"):
        client.respond(RFC_SERVER_FINAL)


def test_scram_escapes_the_user_name_as_rfc_5802_says() -> None:
    client = ScramMechanism(SaslCredentials("SCRAM-SHA-512", "a=b,c", "pw"), nonce="n0nce")
    assert client.initial() == b"n,,n=a=3Db=2Cc,r=n0nce"


def test_a_server_message_that_is_not_utf8_is_an_authentication_error() -> None:
    client = rfc_client()
    client.initial()
    with pytest.raises(AuthenticationError, match="not UTF-8"):
        client.respond(b"r=\xff\xfe")


def test_each_mechanism_name_gets_its_own_kind() -> None:
    for name in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        assert isinstance(mechanism_for(SaslCredentials(name, "u", "p")), ScramMechanism)
    assert isinstance(mechanism_for(SaslCredentials("PLAIN", "u", "p")), PlainMechanism)
