"""The offset-store contract's pure parts: the verdict after a guarded write matched no row (fenced, already
stored, or another writer), the claim's lease, the table name check, the password kept out of names, and stores
resolved by URL scheme through the entry-point group or taken as objects of the right side."""

from __future__ import annotations

from collections.abc import Collection
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any

import pytest

from asyncconsumer.errors import ConfigError, OffsetStoreError, OffsetStoreFencedError
from asyncconsumer.records import TopicPartition
from asyncconsumer.stores import base
from asyncconsumer.stores.base import Lease, OffsetAlreadyStored, check_table, check_write, claimed, open_store, redact

TP = TopicPartition("orders", 3)
LEASE = Lease("g", TP, epoch=4, offset=100)


def test_a_write_under_a_newer_epoch_is_fenced_naming_the_partition_and_both_epochs() -> None:
    with pytest.raises(OffsetStoreFencedError) as caught:
        check_write("sqlite:x.db", LEASE, 120, (5, 130))
    assert (caught.value.partition, caught.value.held_epoch, caught.value.current_epoch) == (TP, 4, 5)
    assert "orders-3" in str(caught.value) and "epoch 4" in str(caught.value) and "5" in str(caught.value)
    assert caught.value.store == "sqlite:x.db"


def test_a_write_whose_row_is_gone_is_fenced_too() -> None:
    with pytest.raises(OffsetStoreFencedError) as caught:
        check_write("s", LEASE, 120, None)
    assert caught.value.current_epoch is None


def test_an_offset_already_where_it_was_to_go_under_the_same_epoch_is_already_stored() -> None:
    with pytest.raises(OffsetAlreadyStored):
        check_write("s", LEASE, 120, (4, 120))


def test_another_offset_under_the_same_epoch_is_a_store_error_not_a_fence() -> None:
    with pytest.raises(OffsetStoreError) as caught:
        check_write("s", LEASE, 120, (4, 90))
    assert not isinstance(caught.value, OffsetStoreFencedError)
    assert "next offset 90" in str(caught.value) and "expected 100" in str(caught.value)


def test_a_claim_row_becomes_a_lease() -> None:
    assert claimed("g", TP, (None, 1)) == Lease("g", TP, 1, None)
    assert claimed("g", TP, (42, 7)) == Lease("g", TP, 7, 42)
    with pytest.raises(OffsetStoreError, match="orders-3"):
        claimed("g", TP, None)


@pytest.mark.parametrize("table", ["offsets", "app.offsets", "_x1"])
def test_table_names_that_are_identifiers_pass(table: str) -> None:
    assert check_table(table) == table


@pytest.mark.parametrize("table", ["", "1x", "o; DROP TABLE x", "a.b.c", "with space"])
def test_other_table_names_are_a_config_error(table: str) -> None:
    with pytest.raises(ConfigError, match="table"):
        check_table(table)


@pytest.mark.parametrize(
    ("dsn", "shown"),
    [
        ("postgresql://app:s3cret@db:5432/x", "postgresql://app:***@db:5432/x"),
        ("host=db password=s3cret dbname=x", "host=db password=*** dbname=x"),
        ("postgresql://app@db/x", "postgresql://app@db/x"),
    ],
)
def test_passwords_never_reach_a_name(dsn: str, shown: str) -> None:
    assert redact(dsn) == shown


def test_a_url_resolves_through_the_entry_point_named_by_its_scheme(tmp_path: Any) -> None:
    from asyncconsumer.stores.sqlite import BlockingSQLiteOffsetStore, SQLiteOffsetStore

    assert "sqlite" in base.installed_stores()
    async_side = open_store(f"sqlite:///{tmp_path}/a.db", blocking=False)
    blocking_side = open_store(f"sqlite:///{tmp_path}/a.db", blocking=True)
    assert isinstance(async_side, SQLiteOffsetStore) and isinstance(blocking_side, BlockingSQLiteOffsetStore)
    assert async_side.name == blocking_side.name == f"sqlite:{tmp_path}/a.db"


def test_an_unknown_scheme_is_a_config_error_listing_what_is_installed() -> None:
    with pytest.raises(ConfigError, match=r"offsets: no offset store for 'mysql://u:\*\*\*@h/x'.*sqlite"):
        open_store("mysql://u:pw@h/x", blocking=False)


class _AsyncSide:
    name = "fake"

    async def open(self) -> None: ...
    async def claim(self, group: str, partitions: Collection[TopicPartition]) -> dict[TopicPartition, Lease]:
        return {}

    def transaction(self) -> AbstractAsyncContextManager[Any]:
        raise NotImplementedError

    async def write(self, tx: Any, lease: Lease, next_offset: int) -> None: ...
    def unavailable(self, error: BaseException) -> bool:
        return False

    async def close(self) -> None: ...


class _BlockingSide:
    name = "fake"

    def open(self) -> None: ...
    def claim(self, group: str, partitions: Collection[TopicPartition]) -> dict[TopicPartition, Lease]:
        return {}

    def transaction(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def write(self, tx: Any, lease: Lease, next_offset: int) -> None: ...
    def unavailable(self, error: BaseException) -> bool:
        return False

    def close(self) -> None: ...


def test_an_object_of_the_right_side_is_taken_as_it_is() -> None:
    store, blocking = _AsyncSide(), _BlockingSide()
    assert open_store(store, blocking=False) is store
    assert open_store(blocking, blocking=True) is blocking


def test_an_object_of_the_other_side_or_no_store_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"other face's side.*BlockingOffsetStore"):
        open_store(_AsyncSide(), blocking=True)
    with pytest.raises(ConfigError, match=r"other face's side.*an OffsetStore"):
        open_store(_BlockingSide(), blocking=False)
    with pytest.raises(ConfigError, match="got int"):
        open_store(3, blocking=False)  # type: ignore[arg-type]


def test_backoffs_double_up_to_their_cap() -> None:
    waits = base.backoffs(100, 500)
    assert [next(waits) for _ in range(5)] == [0.1, 0.2, 0.4, 0.5, 0.5]
