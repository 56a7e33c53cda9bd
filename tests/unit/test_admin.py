"""``asyncconsumer.admin``, the admin clients' public module: every name it exports is there, the two faces offer
the same methods (awaited on ``AsyncAdmin``, blocking on ``Admin``, which adds ``wakeup``), and bad settings fail
where the client is made, naming the key, before any thread starts. What the methods do against brokers is in
``tests/integration/test_admin.py``."""

from __future__ import annotations

import inspect

import pytest

import asyncconsumer
from asyncconsumer import admin
from asyncconsumer.errors import ConfigError


def test_every_exported_name_is_there_and_the_package_offers_the_same_clients() -> None:
    assert all(hasattr(admin, name) for name in admin.__all__)
    assert asyncconsumer.Admin is admin.Admin and asyncconsumer.AsyncAdmin is admin.AsyncAdmin


def _methods(cls: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(cls, callable) if not name.startswith("_")}


def test_both_faces_offer_the_same_methods_awaited_on_one_and_blocking_on_the_other() -> None:
    assert _methods(admin.Admin) - _methods(admin.AsyncAdmin) == {"wakeup"}  # a blocked call's way out
    assert _methods(admin.AsyncAdmin) <= _methods(admin.Admin)
    for name in ("describe_configs", "incremental_alter_configs", "list_groups", "describe_cluster"):
        assert inspect.iscoroutinefunction(getattr(admin.AsyncAdmin, name)), name
        assert not inspect.iscoroutinefunction(getattr(admin.Admin, name)), name


def test_a_setting_the_admin_does_not_take_is_named_before_anything_starts() -> None:
    with pytest.raises(ConfigError, match="group_id"):
        admin.Admin("localhost:9092", group_id="g")  # type: ignore[call-arg]
