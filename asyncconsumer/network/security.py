"""What a connection needs to be secure: the TLS context and the SASL credentials, built once per consumer.

Building the context here (at construction, not at the first connection) makes a missing CA file a
``ConfigError`` from the constructor rather than a connection failure later.
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

import attrs

from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import ConfigError

if TYPE_CHECKING:
    from asyncconsumer.network.kerberos import KerberosLogin
    from asyncconsumer.network.oauthbearer import OAuthBearerLogin

__all__ = ["ConnectionSecurity"]


@attrs.define(frozen=True, slots=True)
class SaslCredentials:
    """Who to authenticate as; the password never appears in a repr."""

    mechanism: str
    username: str
    password: str = attrs.field(repr=lambda _: "'***'")


@attrs.define(frozen=True, slots=True)
class ConnectionSecurity:
    """TLS (when ``ssl_context`` is set) and SASL (when ``sasl`` is set) for every broker connection."""

    ssl_context: ssl.SSLContext | None = None
    sasl: SaslCredentials | OAuthBearerLogin | KerberosLogin | None = None

    @classmethod
    def from_config(cls, config: ConsumerConfig) -> ConnectionSecurity:
        protocol = config.security_protocol
        context = None
        if protocol.endswith("SSL"):
            context = config.ssl_context or _default_context(config)
        sasl: SaslCredentials | OAuthBearerLogin | KerberosLogin | None = None
        if protocol.startswith("SASL_") and config.sasl_mechanism == "GSSAPI":
            from asyncconsumer.network.kerberos import KerberosLogin  # late: only GSSAPI needs it

            sasl = KerberosLogin(
                config.sasl_kerberos_service_name,
                config.sasl_kerberos_principal,
                config.sasl_kerberos_keytab,
                config.sasl_kerberos_domain_name,
            )
        elif protocol.startswith("SASL_") and config.sasl_mechanism == "OAUTHBEARER":
            from asyncconsumer.network.oauthbearer import OAuthBearerLogin  # late: only OAUTHBEARER needs it

            provider = config.sasl_oauthbearer_token_provider
            if provider is None:
                from asyncconsumer.network.oidc import ClientCredentialsProvider

                url = config.sasl_oauthbearer_token_endpoint_url
                client_id = config.sasl_oauthbearer_client_credentials_client_id
                secret = config.sasl_oauthbearer_client_credentials_client_secret
                assert url is not None and client_id is not None and secret is not None  # the config checked
                provider = ClientCredentialsProvider(
                    url,
                    client_id,
                    secret,
                    scope=config.sasl_oauthbearer_scope,
                    extensions=config.sasl_oauthbearer_extensions,
                    timeout_s=config.request_timeout_ms / 1000,
                )
            sasl = OAuthBearerLogin(provider)
        elif protocol.startswith("SASL_"):
            assert config.sasl_username is not None and config.sasl_password is not None  # the config checked
            sasl = SaslCredentials(config.sasl_mechanism, config.sasl_username, config.sasl_password)
        return cls(context, sasl)

    @property
    def description(self) -> str:
        """For logs: "plaintext", "tls", "sasl SCRAM-SHA-256 over tls"..."""
        transport = "tls" if self.ssl_context is not None else "plaintext"
        return transport if self.sasl is None else f"sasl {self.sasl.mechanism} over {transport}"


def _default_context(config: ConsumerConfig) -> ssl.SSLContext:
    """Certificate and host name checks on, like Java's defaults; TLS 1.2 at least."""
    try:
        context = ssl.create_default_context(cafile=config.ssl_cafile)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError("ssl_cafile", f"cannot load {config.ssl_cafile!r}: {exc}") from exc
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = config.ssl_check_hostname
    if config.ssl_certfile is not None:
        try:
            context.load_cert_chain(config.ssl_certfile, config.ssl_keyfile)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError("ssl_certfile", f"cannot load {config.ssl_certfile!r}: {exc}") from exc
    return context
