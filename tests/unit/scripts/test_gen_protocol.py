"""The protocol generator's own logic (``scripts/gen_protocol.py``) on small synthetic definitions: no jar needed.

Names, version ranges and the conditions simplified to the versions a struct is used at; which fields are generated;
structs of one name shared when identical and prefixed when not; and generated code that runs: defaults, Kafka's
rules for what a version cannot carry, tagged fields, merged fixed-width runs.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from asyncconsumer.protocol.wire import Reader, Writer
from scripts import gen_protocol as gen

# --- small pieces -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pascal", "snake"),
    [
        ("PartitionIndex", "partition_index"),
        ("IsrNodes", "isr_nodes"),
        ("ThrottleTimeMs", "throttle_time_ms"),
        ("TopicId", "topic_id"),
        ("ApiVersions", "api_versions"),
        ("ZkMigrationReady", "zk_migration_ready"),
        ("GenerationIdOrMemberEpoch", "generation_id_or_member_epoch"),
        ("DescribeACLs", "describe_ac_ls"),
        ("SaslHandshake", "sasl_handshake"),
    ],
)
def test_snake_case_of_kafkas_names(pascal: str, snake: str) -> None:
    assert gen.snake(pascal) == snake


def test_version_ranges() -> None:
    assert gen.Versions.parse("3+") == gen.Versions(3, gen.INF)
    assert gen.Versions.parse("1-4") == gen.Versions(1, 4)
    assert gen.Versions.parse("7") == gen.Versions(7, 7)
    assert not gen.Versions.parse("none").within(range(10))
    assert gen.Versions.parse(None).within(range(10)) == frozenset()
    assert gen.Versions.parse("2-5").within(range(4, 13)) == {4, 5}
    assert [str(gen.Versions.parse(t)) for t in ("3+", "1-4", "7", "none")] == ["3+", "1-4", "7", "none"]


def test_comment_lines_are_stripped_before_json() -> None:
    text = '// Licensed to the Apache Software Foundation\n  // more\n{ "name": "X", "about": "see http://x" }\n'
    assert json.loads(gen.strip_comments(text)) == {"name": "X", "about": "see http://x"}


@pytest.mark.parametrize(
    ("versions", "domain", "expected"),
    [
        (range(4, 13), range(4, 13), None),  # "0+" in a 4-12 range: unconditional
        (range(5, 13), range(4, 13), "version >= 5"),
        (range(1, 4), range(1, 5), "version <= 3"),
        (range(8, 11), range(1, 13), "8 <= version <= 10"),
        ([7], range(1, 13), "version == 7"),
        ([1, 2, 5], range(1, 7), "version <= 2 or version == 5"),
        ([12], [12], None),  # a struct used at v12 only: its "12+" fields need no test
        ([], range(0, 3), "False"),
    ],
)
def test_conditions_are_simplified_to_the_domain(versions: Any, domain: Any, expected: str | None) -> None:
    assert gen.cond(versions, domain) == expected


def test_branches_newest_first_with_else_and_elif() -> None:
    domain = frozenset(range(1, 6))
    lines = gen.branches(domain, [(frozenset({1, 2}), ["old()"]), (frozenset({3, 4, 5}), ["new()"])])
    assert lines == ["if version >= 3:", "    new()", "else:", "    old()"]
    assert gen.branches(domain, [(domain, ["always()"])]) == ["always()"]
    lone = gen.branches(domain, [(frozenset({1}), ["if x:", "    raise E"])])
    assert lone == ["if (version <= 1) and x:", "    raise E"]  # no nested if for a lone check
    chained = gen.branches(domain, [(frozenset({2, 3, 4, 5}), ["a()"]), (frozenset({1}), ["if x:", "    raise E"])])
    assert chained == ["if version >= 2:", "    a()", "elif x:", "    raise E"]
    assert gen.merge_ifs(["if c:", "    a()", "if c:", "    b()", "if d:", "    e()"]) == [
        "if c:",
        "    a()",
        "    b()",
        "if d:",
        "    e()",
    ]


# --- whole modules from synthetic definitions ---------------------------------------------------------------------

REQUEST = {
    "apiKey": 99,
    "type": "request",
    "name": "WidgetRequest",
    "validVersions": "0-6",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "GroupId", "type": "string", "versions": "0+"},
        {"name": "Gone", "type": "int32", "versions": "0-1", "about": "only before what we speak"},
        {"name": "Count", "type": "int32", "versions": "0+", "default": "-1"},
        {"name": "Epoch", "type": "int16", "versions": "3+", "default": "-1"},
        {"name": "Mode", "type": "int8", "versions": "3+", "ignorable": True},
        {"name": "Label", "type": "string", "versions": "2+", "nullableVersions": "5+"},
        {
            "name": "Items",
            "type": "[]Item",
            "versions": "2+",
            "fields": [
                {"name": "Id", "type": "int32", "versions": "2+"},
                {"name": "Extra", "type": "int64", "versions": "5+", "default": "-1"},
            ],
        },
        {
            "name": "Hint",
            "type": "string",
            "versions": "4+",
            "taggedVersions": "4+",
            "tag": 0,
            "default": "null",
            "nullableVersions": "4+",
            "ignorable": True,
        },
    ],
}
RESPONSE = {
    "apiKey": 99,
    "type": "response",
    "name": "WidgetResponse",
    "validVersions": "0-6",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {
            "name": "Items",
            "type": "[]Item",
            "versions": "2+",
            "nullableVersions": "2+",
            "fields": [
                {"name": "Id", "type": "int32", "versions": "2+"},
                {"name": "Name", "type": "string", "versions": "2+"},
            ],
        },
        {
            "name": "Shared",
            "type": "[]Part",
            "versions": "0+",
            "fields": [{"name": "P", "type": "int32", "versions": "0+"}],
        },
        {"name": "Records", "type": "records", "versions": "0+", "nullableVersions": "0+"},
    ],
}
REQUEST["fields"].append(  # type: ignore[attr-defined]
    {"name": "Shared", "type": "[]Part", "versions": "0+", "fields": [{"name": "P", "type": "int32", "versions": "0+"}]}
)


def definitions(tmp_path: Path, *schemas: dict[str, Any], version: str = "9.9.9") -> gen.Definitions:
    jar = tmp_path / "kafka-clients.jar"
    with zipfile.ZipFile(jar, "w") as zf:
        for schema in schemas:
            text = "// Licensed to the ASF\n" + json.dumps(schema, indent=2)
            zf.writestr(f"common/message/{schema['name']}.json", text)
        zf.writestr("kafka/kafka-version.properties", f"commitId=abc\nversion={version}\n")
    return gen.Definitions.from_jar(jar)


def widget_module(tmp_path: Path) -> tuple[gen.Module, ModuleType]:
    defs = definitions(tmp_path, REQUEST, RESPONSE)
    module = gen.build_module(gen.Api("widget", ("WidgetRequest", "WidgetResponse"), (2, 6)), defs)
    source = (
        gen.Emitter(module)
        .render()
        .replace(
            "from asyncconsumer.protocol.messages.api_keys import ApiKey",
            "from enum import IntEnum\nApiKey = IntEnum('ApiKey', {'WIDGET': 99})",  # a key Kafka does not have
        )
    )
    namespace = ModuleType("widget")
    exec(compile(source, "widget.py", "exec"), namespace.__dict__)
    return module, namespace


def test_definitions_come_from_the_jar(tmp_path: Path) -> None:
    defs = definitions(tmp_path, REQUEST, RESPONSE)
    assert defs.version == "9.9.9"
    assert set(defs.schemas) == {"WidgetRequest", "WidgetResponse"}
    assert defs.schemas["WidgetRequest"].api_key == 99


def test_only_fields_of_the_spoken_versions_are_generated(tmp_path: Path) -> None:
    ns = widget_module(tmp_path)[1]
    request = ns.WidgetRequest
    assert "gone" not in {a.name for a in request.__attrs_attrs__}
    assert (request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (2, 6, 4)
    assert ns.__doc__.startswith("Generated from Apache Kafka's WidgetRequest.json/WidgetResponse.json")


def test_struct_name_collisions(tmp_path: Path) -> None:
    """Two different ``Item`` structs get their message's name in front; the identical ``Part`` is one class."""
    module, ns = widget_module(tmp_path)
    names = [s.name for s in module.structs]
    assert {"WidgetRequestItem", "WidgetResponseItem", "Part"} <= set(names)
    assert "Item" not in names
    assert names.index("WidgetResponse") < names.index("WidgetRequest")  # responses first: RESPONSE names one
    assert ns.WidgetRequest.__attrs_attrs__.shared.type == "tuple[Part, ...]"


def test_two_different_structs_of_one_name_in_one_message_are_refused(tmp_path: Path) -> None:
    twice = json.loads(json.dumps(RESPONSE))
    twice["fields"].append(
        {
            "name": "More",
            "type": "[]Item",
            "versions": "0+",
            "fields": [{"name": "X", "type": "bool", "versions": "0+"}],
        }
    )
    defs = definitions(tmp_path, REQUEST, twice)
    with pytest.raises(SystemExit, match="two different structs named Item"):
        gen.build_module(gen.Api("widget", ("WidgetRequest", "WidgetResponse"), (2, 6)), defs)


def test_defaults_types_and_round_trips(tmp_path: Path) -> None:
    _, ns = widget_module(tmp_path)
    request = ns.WidgetRequest(group_id="g")
    assert (request.count, request.epoch, request.label, request.items, request.hint) == (-1, -1, "", (), None)
    full = ns.WidgetRequest(
        group_id="g", count=3, epoch=4, mode=1, label="l", items=(ns.WidgetRequestItem(id=1, extra=2),), hint="h"
    )
    for version in range(5, 7):
        w = Writer()
        full.encode(w, version)
        assert ns.WidgetRequest.decode(Reader(w.getvalue()), version) == full
    response = ns.WidgetResponse(error_code=1, items=None, shared=(ns.Part(p=5),), records=memoryview(b"rs"))
    for version in range(2, 7):
        w = Writer()
        response.encode(w, version)
        assert ns.WidgetResponse.decode(Reader(w.getvalue()), version) == response


def test_kafkas_rules_for_what_a_version_cannot_carry(tmp_path: Path) -> None:
    _, ns = widget_module(tmp_path)
    w = Writer()
    with pytest.raises(ValueError, match=r"WidgetRequest\.epoch needs v3\+, not v2"):
        ns.WidgetRequest(epoch=4).encode(w, 2)
    ns.WidgetRequest(mode=1).encode(Writer(), 2)  # ignorable: dropped
    with pytest.raises(ValueError, match="extra needs v5\\+, not v4"):
        ns.WidgetRequest(items=(ns.WidgetRequestItem(extra=1),)).encode(Writer(), 4)
    with pytest.raises(ValueError, match="null, which v4 cannot carry"):
        ns.WidgetRequest(label=None).encode(Writer(), 4)
    for version in (2, 3):  # responses drop what the version lacks
        ns.WidgetResponse(items=(ns.WidgetResponseItem(id=1, name="n"),)).encode(Writer(), version)


def test_tagged_fields_written_only_away_from_their_default(tmp_path: Path) -> None:
    _, ns = widget_module(tmp_path)
    plain, hinted = Writer(), Writer()
    ns.WidgetRequest(label="").encode(plain, 4)
    ns.WidgetRequest(label="", hint="h").encode(hinted, 4)
    assert plain.getvalue().endswith(b"\x00")
    assert hinted.getvalue() == plain.getvalue()[:-1] + bytes.fromhex("01 00 02 02 68")
    assert ns.WidgetRequest.decode(Reader(hinted.getvalue()), 4).hint == "h"
    unknown = plain.getvalue()[:-1] + bytes.fromhex("01 05 01 ff")  # tag 5: not the JSON's, skipped
    assert ns.WidgetRequest.decode(Reader(unknown), 4) == ns.WidgetRequest(label="")


def test_fixed_width_runs_are_one_struct_per_layout(tmp_path: Path) -> None:
    module = widget_module(tmp_path)[0]
    source = gen.Emitter(module).render()
    assert '_ihb = struct.Struct(">ihb")' in source  # Count, Epoch, Mode at v3+
    assert "count, epoch, mode = r.unpack(_ihb)" in source
    assert "count = r.int32() if version <= 2 else" not in source


def test_the_api_key_enum_names_every_request(tmp_path: Path) -> None:
    defs = definitions(tmp_path, REQUEST, RESPONSE)
    text = gen.render_api_keys(defs)
    assert "    WIDGET = 99" in text
    assert text.startswith('"""Generated from Apache Kafka')


def test_check_names_the_files_that_differ(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "asyncconsumer" / "protocol" / "messages"
    out.mkdir(parents=True)
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    monkeypatch.setattr(gen, "OUT", out)
    (out / "same.py").write_text("x = 1\n")
    (out / "stale.py").write_text("x = 1\n")
    (out / "stray.py").write_text("x = 1\n")
    files = {
        "asyncconsumer/protocol/messages/same.py": "x = 1\n",
        "asyncconsumer/protocol/messages/stale.py": "x = 2\n",
        "asyncconsumer/protocol/messages/new.py": "x = 3\n",
    }
    assert sorted(gen.differences(files)) == [
        "asyncconsumer/protocol/messages/new.py",
        "asyncconsumer/protocol/messages/stale.py",
        "asyncconsumer/protocol/messages/stray.py",
    ]


# --- layouts: for_version ---------------------------------------------------------------------------------------

BATCHED_REQUEST: dict[str, Any] = {
    "apiKey": 99,
    "type": "request",
    "name": "WidgetRequest",
    "validVersions": "0-5",
    "flexibleVersions": "none",
    "fields": [
        {"name": "GroupId", "type": "string", "versions": "0-2"},
        {
            "name": "Topics",
            "type": "[]OldTopic",
            "versions": "0-2",
            "nullableVersions": "1-2",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0-2"},
                {"name": "Parts", "type": "[]int32", "versions": "0-2"},
            ],
        },
        {
            "name": "Groups",
            "type": "[]Group",
            "versions": "3+",
            "fields": [
                {"name": "GroupId", "type": "string", "versions": "3+"},
                {"name": "Epoch", "type": "int32", "versions": "4+", "default": "-1", "ignorable": True},
                {
                    "name": "Topics",
                    "type": "[]NewTopic",
                    "versions": "3+",
                    "nullableVersions": "3+",
                    "fields": [
                        {"name": "Name", "type": "string", "versions": "3+"},
                        {"name": "Parts", "type": "[]int32", "versions": "3+"},
                    ],
                },
            ],
        },
        {"name": "Stable", "type": "bool", "versions": "0+"},
    ],
}
BATCHED_RESPONSE: dict[str, Any] = {
    "apiKey": 99,
    "type": "response",
    "name": "WidgetResponse",
    "validVersions": "0-5",
    "flexibleVersions": "none",
    "fields": [{"name": "ErrorCode", "type": "int16", "versions": "0+"}],
}


def batched_module(tmp_path: Path, request: dict[str, Any]) -> ModuleType:
    defs = definitions(tmp_path, request, BATCHED_RESPONSE)
    api = gen.Api("widget", ("WidgetRequest", "WidgetResponse"), (1, 5), batched="Groups")
    source = gen.Emitter(gen.build_module(api, defs)).render()
    source = source.replace(
        "from asyncconsumer.protocol.messages.api_keys import ApiKey",
        "from enum import IntEnum\nApiKey = IntEnum('ApiKey', {'WIDGET': 99})",
    )
    namespace = ModuleType("widget")
    exec(compile(source, "widget.py", "exec"), namespace.__dict__)
    return namespace


def test_a_request_without_layout_changes_is_its_own_layout_at_every_version(tmp_path: Path) -> None:
    ns = widget_module(tmp_path)[1]
    request = ns.WidgetRequest(group_id="g")
    assert all(request.for_version(v) is request for v in range(2, 7))


def test_one_item_fields_and_their_batch_are_rewritten_for_the_version(tmp_path: Path) -> None:
    """The batch's items take the fields before them by name, nested structs rebuilt field by field, null kept;
    the batch wins when both are given, and an older version refuses more than one item."""
    ns = batched_module(tmp_path, BATCHED_REQUEST)
    old = ns.WidgetRequest(group_id="g", topics=(ns.OldTopic(name="t", parts=(0, 1)),), stable=True)
    new = ns.WidgetRequest(groups=(ns.Group(group_id="g", topics=(ns.NewTopic(name="t", parts=(0, 1)),)),), stable=True)
    assert old.for_version(3) == new and new.for_version(2) == old
    assert old.for_version(2) is old and new.for_version(5) is new
    every = ns.WidgetRequest(group_id="g", topics=None)
    assert every.for_version(4) == ns.WidgetRequest(groups=(ns.Group(group_id="g", topics=None),))
    assert every.for_version(4).for_version(1) == every
    assert ns.WidgetRequest(group_id="stale", groups=new.groups, stable=True).for_version(3) == new
    two = ns.WidgetRequest(groups=(ns.Group(group_id="a"), ns.Group(group_id="b")))
    with pytest.raises(ValueError, match="WidgetRequest v2 takes one of groups, not 2"):
        two.for_version(2)


def test_a_batch_whose_items_lack_a_field_before_it_is_refused(tmp_path: Path) -> None:
    broken = json.loads(json.dumps(BATCHED_REQUEST))
    broken["fields"][2]["fields"] = broken["fields"][2]["fields"][1:]  # the items lose GroupId
    with pytest.raises(SystemExit, match=r"WidgetRequest: Groups items lack \['GroupId'\]"):
        batched_module(tmp_path, broken)
