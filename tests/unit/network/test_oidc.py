"""The built-in OAUTHBEARER provider (``network/oidc.py``): the client-credentials request it makes, its retries
of a failing endpoint (with a recorded sleep, no waiting), and what it makes of the answers, against the tests'
small identity provider on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from asyncconsumer import ConfigError, ConsumerConfig
from asyncconsumer.network.oauthbearer import OAuthBearerLogin
from asyncconsumer.network.oidc import RETRY_BACKOFF_MAX_S, ClientCredentialsProvider, TokenEndpointError
from asyncconsumer.network.security import ConnectionSecurity
from tests.support.oidc_server import OidcServer

SECRET = "s3cret:/+= é"


@pytest.fixture
def idp() -> Iterator[OidcServer]:
    server = OidcServer({"app": SECRET}, lifetime_s=600).start()
    yield server
    server.stop()


def provider(idp: OidcServer, secret: str = SECRET, sleeps: list[float] | None = None) -> ClientCredentialsProvider:
    record = sleeps if sleeps is not None else []
    return ClientCredentialsProvider(
        idp.token_url, "app", secret, scope="read write", extensions={"pool": "p1"}, sleep=record.append
    )


def test_it_asks_with_the_client_s_credentials_and_reads_the_jwt(idp: OidcServer) -> None:
    token = provider(idp)()
    assert idp.token_requests == [{"client_id": "app", "grant_type": "client_credentials", "scope": "read write"}]
    assert token.principal == "app" and token.extensions == {"pool": "p1"}
    assert token.issued_at_ms is not None and token.expires_at_ms - token.issued_at_ms == 600_000
    assert SECRET not in repr(provider(idp))


def test_an_opaque_token_lives_as_long_as_expires_in_says(idp: OidcServer) -> None:
    idp.opaque = True
    token = provider(idp)()
    assert token.value == "opaque-token" and token.issued_at_ms is not None
    assert token.expires_at_ms - token.issued_at_ms == 600_000


def test_a_5xx_is_retried_with_a_growing_backoff(idp: OidcServer) -> None:
    idp.fail_next = 3
    sleeps: list[float] = []
    assert provider(idp, sleeps=sleeps)().principal == "app"
    assert sleeps == [0.1, 0.2, 0.4] and len(idp.token_requests) == 4


def test_an_endpoint_that_keeps_failing_is_given_up_within_the_backoff_bound(idp: OidcServer) -> None:
    idp.fail_next = 1_000
    sleeps: list[float] = []
    with pytest.raises(TokenEndpointError, match=r"HTTP 503.*gave up"):
        provider(idp, sleeps=sleeps)()
    assert sum(sleeps) <= RETRY_BACKOFF_MAX_S and len(sleeps) >= 5


def test_a_wrong_secret_fails_at_once_without_retries(idp: OidcServer) -> None:
    sleeps: list[float] = []
    with pytest.raises(TokenEndpointError, match="HTTP 401") as info:
        provider(idp, "wrong", sleeps)()
    assert sleeps == [] and "wrong" not in str(info.value)


def test_the_config_builds_the_built_in_provider_from_java_s_settings(idp: OidcServer) -> None:
    java_style = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.token.endpoint.url": idp.token_url,
        "sasl.oauthbearer.client.credentials.client.id": "app",
        "sasl.oauthbearer.client.credentials.client.secret": SECRET,
        "sasl.oauthbearer.extensions": "logicalCluster=lkc-1,identityPoolId=pool-2",
    }
    config = ConsumerConfig.from_kwargs("h:1", **java_style)
    assert config.sasl_oauthbearer_extensions == {"logicalCluster": "lkc-1", "identityPoolId": "pool-2"}
    assert SECRET not in repr(config)
    assert isinstance(ConnectionSecurity.from_config(config).sasl, OAuthBearerLogin)
    common = {"security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER"}
    with pytest.raises(ConfigError, match="client_secret: is required with sasl_oauthbearer_token_endpoint_url"):
        ConsumerConfig.from_kwargs(
            "h:1",
            sasl_oauthbearer_token_endpoint_url=idp.token_url,
            sasl_oauthbearer_client_credentials_client_id="app",
            **common,
        )
    with pytest.raises(ConfigError, match="is for the built-in token provider"):
        ConsumerConfig.from_kwargs(
            "h:1", sasl_oauthbearer_token_provider=lambda: "t", sasl_oauthbearer_scope="s", **common
        )
    with pytest.raises(ConfigError, match="not 'key=value,key=value'"):
        ConsumerConfig.from_kwargs("h:1", sasl_oauthbearer_extensions="novalue", **common)
