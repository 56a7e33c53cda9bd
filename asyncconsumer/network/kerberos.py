"""SASL/GSSAPI (Kerberos v5, RFC 4752) as Kafka speaks it: the GSS-API context's tokens, then the security-layer
message, in SaslAuthenticate requests.

``GssapiMechanism`` is sans-I/O like the mechanisms of ``sasl.py``, over a ``GssContext``; the real context comes from
the optional ``gssapi`` package (the ``[gssapi]`` extra), imported only when a GSSAPI connection logs in. Its steps
may ask the KDC for tickets (blocking network I/O), so the connection runs them in a worker thread. Failures become
``AuthenticationError`` saying what to do, with the ``gssapi`` exception chained. Nothing here logs.
"""

from __future__ import annotations

import enum
import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, ClassVar, Protocol

import attrs

from asyncconsumer.errors import AuthenticationError

if TYPE_CHECKING:
    import gssapi
    from gssapi.raw.misc import GSSError

__all__ = ["GssContext", "GssapiMechanism", "KerberosLogin"]

NO_SECURITY_LAYER = 0x01
"""RFC 4752's bit for "no security layer": Kafka's brokers offer only this (QOP ``auth``), as Java's clients pick."""

# MIT krb5 error codes (com_err table krb5, base -1765328384), as the unsigned minor status gssapi reports.
_KRB5_BASE = -1765328384  # KRB5KDC_ERR_NONE
_C_PRINCIPAL_UNKNOWN = (_KRB5_BASE + 6) & 0xFFFFFFFF  # "Client not found in Kerberos database"
_S_PRINCIPAL_UNKNOWN = (_KRB5_BASE + 7) & 0xFFFFFFFF  # "Server not found in Kerberos database"
_TKT_EXPIRED = (_KRB5_BASE + 32) & 0xFFFFFFFF  # "Ticket expired"
_NO_TICKET = frozenset(
    {
        _TKT_EXPIRED,
        -1765328189 & 0xFFFFFFFF,  # KRB5_FCC_NOFILE: "No credentials cache found"
        -1765328243 & 0xFFFFFFFF,  # KRB5_CC_NOTFOUND: "Matching credential not found"
        -1765328242 & 0xFFFFFFFF,  # KRB5_CC_END: "End of credential cache reached"
    }
)


class GssContext(Protocol):
    """What the mechanism needs of a GSS-API initiator context (``gssapi.SecurityContext`` behind an adapter)."""

    @property
    def complete(self) -> bool: ...

    @property
    def initiator(self) -> str:
        """The client's principal name (``client@REALM``), known once the context is complete."""
        ...

    def step(self, token: bytes | None) -> bytes | None: ...

    def unwrap(self, message: bytes) -> bytes: ...

    def wrap(self, message: bytes) -> bytes:
        """Integrity-protected, not encrypted (as Java's client wraps its security-layer reply)."""
        ...


class _Gss(enum.Enum):
    START = "start"
    CONTEXT = "context"
    """Exchanging context tokens (the client's AP-REQ, the broker's AP-REP for mutual authentication)."""
    LAYER = "layer"
    """The context is established: waiting for the broker's wrapped security-layer offer."""
    DONE = "done"


class GssapiMechanism:
    """RFC 4752's client side over a context made by ``open_context`` on the first step: context tokens until it
    is established (an empty reply then, as Java's client sends), and the reply to the broker's security-layer
    offer: no layer, no maximum size, the client's own principal as authorization id."""

    name = "GSSAPI"

    def __init__(self, open_context: Callable[[], GssContext]) -> None:
        self._open = open_context
        self._context: GssContext | None = None
        self._state = _Gss.START

    def __repr__(self) -> str:
        return f"<GssapiMechanism {self._state.value}>"

    @property
    def done(self) -> bool:
        return self._state is _Gss.DONE

    def initial(self) -> bytes:
        if self._state is not _Gss.START:
            raise AuthenticationError("GSSAPI: the exchange has already started")
        self._context = self._open()
        self._state = _Gss.CONTEXT
        return self._context_step(None)

    def respond(self, challenge: bytes) -> bytes | None:
        context = self._context
        if self._state is _Gss.CONTEXT and context is not None:
            return self._context_step(challenge)
        if self._state is _Gss.LAYER and context is not None:
            return self._security_layer(context, challenge)
        if self._state is _Gss.DONE:
            return None
        raise AuthenticationError(f"GSSAPI: unexpected broker message in state {self._state.value}")

    def _context_step(self, token: bytes | None) -> bytes:
        assert self._context is not None
        out = self._context.step(token)
        if self._context.complete:
            self._state = _Gss.LAYER
        return out or b""

    def _security_layer(self, context: GssContext, challenge: bytes) -> bytes:
        offer = context.unwrap(challenge)
        if len(offer) != 4:
            raise AuthenticationError(f"GSSAPI: the broker's security-layer message has {len(offer)} bytes, not 4")
        if not offer[0] & NO_SECURITY_LAYER:
            raise AuthenticationError(
                f"GSSAPI: the broker offers security layers {offer[0]:#04x} without 'none'; Kafka clients use no "
                "SASL security layer (use SASL_SSL for encryption)"
            )
        self._state = _Gss.DONE
        return context.wrap(bytes([NO_SECURITY_LAYER, 0, 0, 0]) + context.initiator.encode("utf-8"))


@attrs.define(frozen=True, slots=True)
class KerberosLogin:
    """The consumer's Kerberos identity: initiator credentials from a keytab (kept in a memory credentials cache
    of this consumer's own, refreshed from the keytab by the library) or the default credentials cache (``kinit``),
    and the broker's service name."""

    mechanism: ClassVar[str] = "GSSAPI"

    service_name: str = "kafka"
    principal: str | None = None
    keytab: str | None = None
    domain_name: str | None = None
    """The host part of the broker's service principal; None: the host the connection was made to."""
    ccache: str = attrs.field(factory=lambda: f"MEMORY:asyncconsumer-{uuid.uuid4().hex}")
    """Where tickets got with the keytab are kept: never the user's own cache."""

    def target(self, host: str) -> str:
        """The broker's host-based service name (``kafka@broker1.example.com``: ``kafka/broker1.example.com``)."""
        return f"{self.service_name}@{self.domain_name or host}"

    def mechanism_for(self, host: str) -> GssapiMechanism:
        """A fresh exchange with the broker at ``host``; its first step acquires the credentials (blocking)."""
        return GssapiMechanism(lambda: _RealContext(self, self.target(host)))

    def acquire(self) -> gssapi.Credentials:
        """Initiator credentials, as configured; blocking (may read a keytab or a cache)."""
        import gssapi

        name = gssapi.Name(self.principal, gssapi.NameType.kerberos_principal) if self.principal else None
        if self.keytab is not None:
            store = {"client_keytab": self.keytab, "ccache": self.ccache}
            return gssapi.Credentials(name=name, usage="initiate", store=store)  # type: ignore[arg-type]
        return gssapi.Credentials(name=name, usage="initiate")


class _RealContext:
    """A ``gssapi.SecurityContext`` behind ``GssContext``, its failures turned into ``AuthenticationError``."""

    def __init__(self, login: KerberosLogin, target: str) -> None:
        import gssapi

        self._login = login
        self._target = target
        with _translated(login, target):
            credentials = login.acquire()
            flags = (
                gssapi.RequirementFlag.mutual_authentication
                | gssapi.RequirementFlag.integrity
                | gssapi.RequirementFlag.confidentiality
            )
            self._context = gssapi.SecurityContext(
                name=gssapi.Name(target, gssapi.NameType.hostbased_service),
                creds=credentials,
                usage="initiate",
                flags=flags,
            )

    @property
    def complete(self) -> bool:
        return bool(self._context.complete)

    @property
    def initiator(self) -> str:
        return str(self._context.initiator_name)

    def step(self, token: bytes | None) -> bytes | None:
        with _translated(self._login, self._target):
            out: bytes | None = self._context.step(token)
            return out

    def unwrap(self, message: bytes) -> bytes:
        with _translated(self._login, self._target):
            return bytes(self._context.unwrap(message).message)

    def wrap(self, message: bytes) -> bytes:
        with _translated(self._login, self._target):
            return bytes(self._context.wrap(message, False).message)


@contextmanager
def _translated(login: KerberosLogin, target: str) -> Iterator[None]:
    """Turns a ``gssapi`` failure into one ``AuthenticationError`` that says what to change, the failure chained."""
    from gssapi.raw.misc import GSSError

    try:
        yield
    except GSSError as exc:
        raise describe_failure(login, target, exc) from exc


def describe_failure(login: KerberosLogin, target: str, exc: GSSError) -> AuthenticationError:
    """The error for a failed GSS-API call: no credentials, an unknown service or client principal, or as is."""
    import gssapi.exceptions

    said = _gss_message(exc)
    minor = (exc.min_code or 0) & 0xFFFFFFFF
    service, _, host = target.partition("@")
    principal = f"{service}/{host}"
    if minor == _S_PRINCIPAL_UNKNOWN:
        return AuthenticationError(
            f"SASL GSSAPI: the KDC knows no service principal {principal} (service {target!r}); check "
            f"sasl_kerberos_service_name ({login.service_name!r}) and the broker's host name"
            + (" (sasl_kerberos_domain_name)" if login.domain_name else "")
            + f" ({said})"
        )
    if minor == _C_PRINCIPAL_UNKNOWN:
        return AuthenticationError(
            f"SASL GSSAPI: the KDC knows no client principal {login.principal or '(the cache default)'}; check "
            f"sasl_kerberos_principal ({said})"
        )
    no_credentials = isinstance(
        exc, (gssapi.exceptions.MissingCredentialsError, gssapi.exceptions.ExpiredCredentialsError)
    )
    if login.keytab is not None and no_credentials:
        return AuthenticationError(
            f"SASL GSSAPI: no credentials for {login.principal!r} from sasl_kerberos_keytab {login.keytab!r}; "
            f"check that the keytab holds keys for sasl_kerberos_principal ({said})"
        )
    if no_credentials or minor in _NO_TICKET:
        return AuthenticationError(
            "SASL GSSAPI: no valid Kerberos ticket"
            + (f" for {login.principal!r}" if login.principal else "")
            + f" in the credentials cache; run kinit, or set sasl_kerberos_keytab and sasl_kerberos_principal ({said})"
        )
    return AuthenticationError(f"SASL GSSAPI with {principal}: {said}")


def _gss_message(exc: GSSError) -> str:
    """The library's own words: the minor (Kerberos) message when there is one, else the major."""
    try:
        text = str(exc.gen_message())
    except Exception:  # a message that cannot be made must not hide the failure itself
        text = str(exc)
    return " ".join(re.split(r"Minor \(\d+\): ", text)[-1].split())
