"""Converters and validators of configuration fields, shared by both consumers' configs.

Each validator raises ``ConfigError`` naming the setting and what it got; each converter takes the forms a setting
is given in (a comma-separated string or a sequence, Java's spellings) and returns the one the config keeps.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from asyncconsumer._offset_reset import check_strategy
from asyncconsumer.errors import ConfigError

if TYPE_CHECKING:
    from asyncconsumer.config import ConsumerConfig

_KERBEROS = ("sasl_kerberos_principal", "sasl_kerberos_keytab", "sasl_kerberos_domain_name")
"""The GSSAPI settings without a default (``sasl_kerberos_service_name`` has "kafka")."""
_EXTRA_GSSAPI = 'pip install "asyncconsumer[gssapi]"'
"""What a user without the ``gssapi`` package is told to run."""
_SSL_FILES = ("ssl_cafile", "ssl_certfile", "ssl_keyfile")


def positive(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(attribute.name, f"must be a positive integer, got {value!r}")


def non_negative(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(attribute.name, f"must be an integer >= 0, got {value!r}")


def one_of(*allowed: str) -> Callable[[object, attrs.Attribute[str], str], None]:
    def check(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
        if value not in allowed:
            raise ConfigError(attribute.name, f"must be one of {', '.join(map(repr, allowed))}; got {value!r}")

    return check


def reset_strategy(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    """``earliest``, ``latest``, ``none`` or ``by_duration:<ISO-8601 duration>`` (KIP-1106)."""
    if not isinstance(value, str):
        raise ConfigError(attribute.name, f"must be a string, got {value!r}")
    try:
        check_strategy(value)
    except ValueError as exc:
        raise ConfigError(attribute.name, str(exc)) from None


def boolean(key: str, text: str) -> bool:
    word = text.strip().lower()
    if word in ("true", "1", "yes"):
        return True
    if word in ("false", "0", "no", ""):
        return False
    raise ConfigError(key, f"must be true or false, got {text!r}")


def lower(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def upper(value: Any) -> Any:
    return value.strip().upper() if isinstance(value, str) else value


def hidden(value: object) -> str:
    return "None" if value is None else "'***'"


def ssl_context_or_none(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not isinstance(value, ssl.SSLContext):
        raise ConfigError(attribute.name, f"must be an ssl.SSLContext or None, got {type(value).__name__}")


def extensions(value: Any) -> dict[str, str]:
    if isinstance(value, str):
        pairs = [item.split("=", 1) for item in value.split(",") if item.strip()]
        if any(len(pair) != 2 for pair in pairs):
            raise ConfigError("sasl_oauthbearer_extensions", f"{value!r} is not 'key=value,key=value'")
        return {key.strip(): val.strip() for key, val in pairs}
    if isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return dict(value)
    raise ConfigError("sasl_oauthbearer_extensions", f"must be a mapping of str to str or 'k=v,...', got {value!r}")


def servers(value: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(s.strip() for s in items if isinstance(s, str) and s.strip())


def check_servers(instance: object, attribute: attrs.Attribute[tuple[str, ...]], value: tuple[str, ...]) -> None:
    if not value:
        raise ConfigError(attribute.name, "at least one 'host:port' is required")
    for server in value:
        host, sep, port = server.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(attribute.name, f"{server!r} is not 'host:port'")


def callable_or_none(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not callable(value):
        raise ConfigError(attribute.name, f"must be callable or None, got {type(value).__name__}")


def non_empty_or_none(instance: object, attribute: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ConfigError(attribute.name, f"must be a non-empty string or None, got {value!r}")


def non_empty(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(attribute.name, f"must be a non-empty string, got {value!r}")


def comma_list(value: Any) -> tuple[Any, ...]:
    if isinstance(value, str):
        return tuple(s.strip() for s in value.split(",") if s.strip())
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return (value,)


def check_strategies(instance: object, attribute: attrs.Attribute[tuple[Any, ...]], value: tuple[Any, ...]) -> None:
    # Only the shape: the names are resolved to assignors where the consumer is built (``assignors.assignor_for``).
    if not value:
        raise ConfigError(attribute.name, "at least one assignor is required")
    for strategy in value:
        if isinstance(strategy, str) and not strategy:
            raise ConfigError(attribute.name, "an assignor name must not be empty")


def plugin_name(item: Any) -> str:
    return item if isinstance(item, str) else str(item.name)


def check_plugin_list(instance: object, attribute: attrs.Attribute[tuple[Any, ...]], value: tuple[Any, ...]) -> None:
    # Only the shape: installed names are looked up where the consumer is built (``plugins.registry``).
    seen: set[str] = set()
    for item in value:
        if not isinstance(item, str) and not (hasattr(item, "name") and hasattr(item, "factory")):
            raise ConfigError(
                "plugins", f"each entry is an installed plugin's name or a Plugin, got {type(item).__name__}"
            )
        name = plugin_name(item)
        if name in seen:
            raise ConfigError("plugins", f"plugin {name!r} is enabled twice")
        seen.add(name)


def plugin_options(value: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(value, Mapping):
        raise ConfigError("plugin_options", f"must map plugin names to option dicts, got {type(value).__name__}")
    options: dict[str, dict[str, Any]] = {}
    for name, opts in value.items():
        if not isinstance(opts, Mapping):
            raise ConfigError("plugin_options", f"options of plugin {name!r} must be a dict, got {type(opts).__name__}")
        options[name] = dict(opts)
    return options


def spelled_like(name: str, given: str) -> str:
    """A setting's Python name in the spelling of the key the user gave: ``bootstrap.servers`` for a Java-style
    key (a mapping's ``"bootstrap.server"``), ``bootstrap_servers`` for a keyword argument."""
    for separator in (".", "-"):
        if separator in given:
            return name.replace("_", separator)
    return name


def check_security(config: ConsumerConfig) -> None:
    """The security settings fit together: each mechanism's own settings, and TLS files only over TLS."""
    protocol = config.security_protocol
    provider = "sasl_oauthbearer_token_provider"
    url = "sasl_oauthbearer_token_endpoint_url"
    client = ("sasl_oauthbearer_client_credentials_client_id", "sasl_oauthbearer_client_credentials_client_secret")
    oidc = [url, *client, "sasl_oauthbearer_scope"]
    kerberos_set = [key for key in _KERBEROS if getattr(config, key) is not None]
    if config.sasl_kerberos_service_name != "kafka":
        kerberos_set.append("sasl_kerberos_service_name")
    if protocol.startswith("SASL_") and config.sasl_mechanism == "GSSAPI":
        _check_kerberos(config)
        for key in ["sasl_username", "sasl_password", provider, *oidc]:
            if getattr(config, key) is not None:
                raise ConfigError(key, "does not apply to GSSAPI: the Kerberos credentials give the identity")
    elif kerberos_set:
        raise ConfigError(kerberos_set[0], "applies only to sasl_mechanism GSSAPI, over SASL_PLAINTEXT or SASL_SSL")
    elif protocol.startswith("SASL_") and config.sasl_mechanism == "OAUTHBEARER":
        if config.sasl_oauthbearer_token_provider is None and config.sasl_oauthbearer_token_endpoint_url is None:
            raise ConfigError(provider, f"or {url} is required when sasl_mechanism is OAUTHBEARER")
        if config.sasl_oauthbearer_token_provider is not None:
            for key in [*oidc, "sasl_oauthbearer_extensions"]:
                if getattr(config, key):
                    raise ConfigError(key, f"is for the built-in token provider, but {provider} is set")
        else:
            for key in client:
                if not getattr(config, key):
                    raise ConfigError(key, f"is required with {url}")
        for key in ("sasl_username", "sasl_password"):
            if getattr(config, key) is not None:
                raise ConfigError(key, "does not apply to OAUTHBEARER: the token provider gives the identity")
    elif protocol.startswith("SASL_"):
        for key in ("sasl_username", "sasl_password"):
            if not getattr(config, key):
                raise ConfigError(key, f"is required when security_protocol is {protocol}")
        for key in [provider, *oidc]:
            if getattr(config, key) is not None:
                raise ConfigError(key, f"applies only to sasl_mechanism OAUTHBEARER, not {config.sasl_mechanism}")
    else:
        for key in ("sasl_username", "sasl_password", provider, *oidc):
            if getattr(config, key) is not None:
                raise ConfigError(key, f"is set but security_protocol is {protocol}; use SASL_SSL or SASL_PLAINTEXT")
    tls_keys = [*_SSL_FILES, "ssl_context"]
    if not protocol.endswith("SSL"):
        for key in tls_keys:
            if getattr(config, key) is not None:
                raise ConfigError(key, f"is set but security_protocol is {protocol}; use SSL or SASL_SSL")
    if config.ssl_context is not None:
        for key in _SSL_FILES:
            if getattr(config, key) is not None:
                raise ConfigError(key, "cannot be combined with ssl_context (load it into the context instead)")
        if not config.ssl_check_hostname:
            raise ConfigError("ssl_check_hostname", "cannot be combined with ssl_context (set check_hostname on it)")
    if config.ssl_keyfile is not None and config.ssl_certfile is None:
        raise ConfigError("ssl_keyfile", "needs ssl_certfile (the certificate the key belongs to)")


def _check_kerberos(config: ConsumerConfig) -> None:
    """The settings first, then the package: a wrong setting is reported the same with or without it."""
    if config.sasl_kerberos_keytab is not None:
        if not os.path.isfile(config.sasl_kerberos_keytab):
            raise ConfigError("sasl_kerberos_keytab", f"no such file: {config.sasl_kerberos_keytab!r}")
        if config.sasl_kerberos_principal is None:
            raise ConfigError("sasl_kerberos_principal", "is required with sasl_kerberos_keytab")
    try:
        import gssapi  # noqa: F401 - only whether it imports (a build without its C library fails here too)
    except (ImportError, OSError) as exc:
        raise ConfigError("sasl_mechanism", f"GSSAPI needs the gssapi package: {_EXTRA_GSSAPI} ({exc})") from exc
