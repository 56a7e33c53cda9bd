"""Generates ``asyncconsumer/protocol/messages/`` from Apache Kafka's own JSON message definitions.

The definitions are read from the ``kafka-clients`` jar (``common/message/*.json``), never copied into the
repository: by default the jar the Kafka leg of the tests fetches (``tests.support.kafka_broker.fetch_jars``).

    python scripts/gen_protocol.py                # write the modules
    python scripts/gen_protocol.py --check        # exit 1, naming the modules that differ
    python scripts/gen_protocol.py --jar PATH     # read another kafka-clients jar

What comes out, for the versions of each API we speak (``APIS``):

- one module per API holding its request, its response and every struct they use, as frozen attrs classes; only
  fields present in a spoken version are generated, and conditions are simplified to those versions;
- names: classes keep Kafka's names, fields are the snake_case of Kafka's; two different structs of the same name
  in one module (a request's and its response's, say) are both prefixed with their message's name, identical ones
  are one class;
- types: ``string`` is ``str`` (``str | None`` where a spoken version allows null), ``bytes`` ``bytes``, ``records``
  a ``memoryview`` of the response (no copy, compared by content), ``uuid`` ``uuid.UUID``, arrays tuples (``None``
  for null where allowed), a struct field its class (``None`` where nullable or tagged);
- defaults: the JSON's, else Kafka's (zero, empty, null where the JSON says so); null arrays, null records and
  absent struct fields default to ``None``, so a class can be built by keyword with only the fields that matter;
- encoding: what a version lacks is left out, except a request's non-ignorable field holding a non-default value,
  which raises ``ValueError`` as Kafka's own writers do (responses, which only test brokers write, drop it); null
  where the version does not allow it raises too; tagged fields are written when not at their default; decoding
  reads null leniently into ``| None`` fields, skips unknown tags, and treats null in a non-nullable array as corrupt;
- speed: consecutive fixed-width fields are read and written with one precompiled ``struct.Struct`` per layout
  of the versions (a fetch response's partition head is one unpack);
- layouts: every request has ``for_version(version)``, which framing calls; where one-item fields became a batch
  inside the versions we speak (``Api.batched``: FindCoordinator, LeaveGroup, OffsetFetch), it rewrites a request
  built in either layout into the one the version has, matching the batch's item fields to the old ones by name.
"""

from __future__ import annotations

import argparse
import itertools
import json
import keyword
import re
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "asyncconsumer" / "protocol" / "messages"
PACKAGE = "asyncconsumer.protocol.messages"
INF = 0x7FFF
NEVER_FLEXIBLE = 1 << 15
"""``FLEXIBLE_FROM`` of a request that is never flexible (larger than any version)."""


def snake(name: str) -> str:
    """Kafka's PascalCase as snake_case: ``PartitionIndex`` -> ``partition_index``, ``IsrNodes`` -> ``isr_nodes``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


@attrs.frozen
class Api:
    """One generated module: Kafka's message definitions (a request and its response, or one data schema) and the
    versions we speak, ``None`` for every version Kafka defines; ``batched``: the request's field (Kafka's name)
    that, from a version we speak on, batches what fields before it said of one item (``Emitter.for_version``)."""

    module: str
    schemas: tuple[str, ...]
    versions: tuple[int, int] | None
    batched: str | None = None


def _api(name: str, versions: tuple[int, int] | None, batched: str | None = None) -> Api:
    return Api(snake(name), (f"{name}Request", f"{name}Response"), versions, batched)


APIS: tuple[Api, ...] = (
    _api("ApiVersions", (0, 3)),
    _api("Metadata", (1, 13)),
    _api("Fetch", (4, 12)),
    _api("ListOffsets", (1, 9)),
    _api("OffsetCommit", (2, 9)),
    _api("OffsetFetch", (1, 9), batched="Groups"),
    _api("FindCoordinator", (1, 4), batched="CoordinatorKeys"),
    _api("JoinGroup", (2, 9)),
    _api("SyncGroup", (1, 5)),
    _api("Heartbeat", (1, 4)),
    _api("LeaveGroup", (1, 5), batched="Members"),
    _api("DescribeGroups", (0, 5)),
    _api("SaslHandshake", (1, 1)),
    _api("SaslAuthenticate", (0, 2)),
    _api("OffsetForLeaderEpoch", (2, 4)),
    _api("ConsumerGroupHeartbeat", (0, 1)),
    _api("ConsumerGroupDescribe", None),
    _api("GetTelemetrySubscriptions", (0, 0)),
    _api("PushTelemetry", (0, 0)),
    _api("ShareGroupHeartbeat", None),
    _api("ShareGroupDescribe", None),
    _api("ShareFetch", None),
    _api("ShareAcknowledge", None),
    _api("DescribeShareGroupOffsets", None),
    _api("IncrementalAlterConfigs", None),
    _api("ListGroups", None),
    _api("DeleteGroups", None),
    _api("OffsetDelete", None),
    _api("CreateTopics", None),
    _api("DeleteTopics", (1, 5)),  # v6 names topics by id or name in another field: names are enough
    _api("CreatePartitions", None),
    _api("DescribeCluster", None),
    _api("DescribeConfigs", None),
    Api("consumer_protocol", ("ConsumerProtocolSubscription", "ConsumerProtocolAssignment"), (0, 3)),
)
"""The APIs we generate and the versions we speak: today's ranges, all inside what Kafka 4.4 defines."""


# --- Kafka's definitions ---------------------------------------------------------------------------------------


@attrs.frozen
class Versions:
    """An inclusive version range as Kafka writes it: ``"3+"``, ``"1-4"``, ``"7"`` or ``"none"``."""

    low: int
    high: int

    @classmethod
    def parse(cls, text: str | None) -> Versions:
        if text is None or text == "none":
            return cls(1, 0)
        if text.endswith("+"):
            return cls(int(text[:-1]), INF)
        low, _, high = text.partition("-")
        return cls(int(low), int(high or low))

    def __contains__(self, version: int) -> bool:
        return self.low <= version <= self.high

    def __str__(self) -> str:
        if self.low > self.high:
            return "none"
        if self.high == INF:
            return f"{self.low}+"
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"

    def within(self, domain: Iterable[int]) -> frozenset[int]:
        return frozenset(v for v in domain if v in self)


@attrs.frozen
class FieldSpec:
    """One field as Kafka's JSON declares it (``fields``: the struct it declares inline, if any)."""

    name: str
    type: str
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    default: object
    ignorable: bool
    about: str
    fields: tuple[FieldSpec, ...]

    @classmethod
    def parse(cls, raw: dict[str, object]) -> FieldSpec:
        tag = raw.get("tag")
        return cls(
            name=str(raw["name"]),
            type=str(raw["type"]),
            versions=Versions.parse(_opt_str(raw.get("versions"))),
            nullable=Versions.parse(_opt_str(raw.get("nullableVersions"))),
            tagged=Versions.parse(_opt_str(raw.get("taggedVersions"))),
            tag=None if tag is None else int(str(tag)),
            default=raw.get("default"),
            ignorable=bool(raw.get("ignorable", False)),
            about=str(raw.get("about", "")),
            fields=tuple(cls.parse(f) for f in _dicts(raw.get("fields"))),
        )


@attrs.frozen
class Schema:
    """One JSON definition: a request, a response or a data schema."""

    name: str
    kind: str
    api_key: int | None
    valid: Versions
    flexible: Versions
    fields: tuple[FieldSpec, ...]
    common: dict[str, tuple[FieldSpec, ...]]

    @classmethod
    def parse(cls, raw: dict[str, object]) -> Schema:
        key = raw.get("apiKey")
        return cls(
            name=str(raw["name"]),
            kind=str(raw["type"]),
            api_key=None if key is None else int(str(key)),
            valid=Versions.parse(_opt_str(raw.get("validVersions"))),
            flexible=Versions.parse(_opt_str(raw.get("flexibleVersions"))),
            fields=tuple(FieldSpec.parse(f) for f in _dicts(raw.get("fields"))),
            common={
                str(s["name"]): tuple(FieldSpec.parse(f) for f in _dicts(s.get("fields")))
                for s in _dicts(raw.get("commonStructs"))
            },
        )


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


def _dicts(value: object) -> list[dict[str, object]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def strip_comments(text: str) -> str:
    """Kafka's definitions carry ``//`` comment lines (the license header, notes), which JSON does not allow."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


@attrs.frozen
class Definitions:
    """Every definition in a kafka-clients jar, by name, and the jar's Kafka version."""

    version: str
    schemas: dict[str, Schema]

    @classmethod
    def from_jar(cls, jar: Path) -> Definitions:
        with zipfile.ZipFile(jar) as zf:
            schemas = {}
            for name in sorted(zf.namelist()):
                if re.fullmatch(r"common/message/\w+\.json", name):
                    schema = Schema.parse(json.loads(strip_comments(zf.read(name).decode("utf-8"))))
                    schemas[schema.name] = schema
            props = zf.read("kafka/kafka-version.properties").decode("utf-8")
        found = re.search(r"^version=(\S+)", props, re.MULTILINE)
        if found is None:
            raise SystemExit(f"{jar}: no version in kafka/kafka-version.properties")
        return cls(found.group(1), schemas)


# --- the model of a generated module ------------------------------------------------------------------------------

FIXED = {
    "bool": "?",
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "uint32": "I",
    "int64": "q",
    "float64": "d",
}
SCALARS = {**dict.fromkeys(FIXED, "int"), "bool": "bool", "float64": "float", "uuid": "uuid.UUID"}
SCALARS.update({"string": "str", "bytes": "bytes", "records": "memoryview"})
LOCALS = frozenset({"r", "w", "cls", "self", "version", "flexible", "tags", "tag", "end", "t"})


def _relative(chosen: frozenset[int], within: frozenset[int]) -> object:
    return "all" if chosen == within else chosen


def signature(fields: Iterable[FieldSpec], reachable: frozenset[int]) -> tuple[object, ...]:
    """What makes two structs of one name the same struct: their fields at the versions each is reachable at
    (a field "1+" of a struct used only from v1 on is the same as a field "0+")."""
    out: list[object] = []
    for f in fields:
        present = f.versions.within(reachable)
        if present:
            nested = signature(f.fields, present) if f.fields else ()
            nullable, tagged = (
                _relative(f.nullable.within(present), present),
                _relative(f.tagged.within(present), present),
            )
            out.append((f.name, f.type, _relative(present, reachable), nullable, tagged, f.tag, f.default, f.ignorable))
            out.append(nested)
    return tuple(out)


@attrs.define
class Field:
    """A field of a generated class: where it is on the wire (``present``), tagged, nullable, and its struct."""

    spec: FieldSpec
    attr: str
    local: str
    present: frozenset[int]
    tagged: frozenset[int]
    nullable: frozenset[int]
    struct: Struct | None = None

    @property
    def inline(self) -> frozenset[int]:
        return self.present - self.tagged

    @property
    def array(self) -> bool:
        return self.spec.type.startswith("[]")

    @property
    def base(self) -> str:
        return self.spec.type.removeprefix("[]")

    @property
    def optional(self) -> bool:
        if self.struct is not None and not self.array:
            return bool(self.nullable or self.tagged)
        return bool(self.nullable)

    @property
    def fixed(self) -> str | None:
        """The struct format character of a fixed-width field that is never tagged, else None."""
        return None if self.array or self.tagged else FIXED.get(self.base)


@attrs.define(eq=False)
class Struct:
    """A generated class: a message (``schema`` set) or a struct inside one, and the places it is used from."""

    name: str
    kafka_name: str
    about: str
    owner: Schema
    schema: Schema | None = None
    uses: list[tuple[tuple[FieldSpec, ...], frozenset[int]]] = attrs.Factory(list)
    """Each definition it stands for (identical ones share a class) and the versions it is reachable at there."""
    request_side: bool = False
    flexible: frozenset[int] = frozenset()
    fields: list[Field] = attrs.Factory(list)

    @property
    def domain(self) -> frozenset[int]:
        """Every version the struct is decoded at: its conditions are simplified to these."""
        return frozenset().union(*(reachable for _, reachable in self.uses))


@attrs.define
class Module:
    """What one generated module holds: its classes, children first, for the versions we speak."""

    api: Api
    schemas: list[Schema]
    spoken: tuple[int, int]
    structs: list[Struct]
    kafka_version: str


def build_module(api: Api, defs: Definitions) -> Module:
    schemas = [defs.schemas[name] for name in api.schemas]
    first = schemas[0]
    low, high = api.versions or (first.valid.low, first.valid.high)
    if any(not (low in s.valid and high in s.valid) for s in schemas):
        raise SystemExit(f"{api.module}: versions {low}-{high} are outside Kafka's {first.valid}")
    spoken = frozenset(range(low, high + 1))

    # Every struct definition used in a spoken version: where, and at which versions.
    found: dict[str, list[tuple[Schema, FieldSpec, tuple[FieldSpec, ...], frozenset[int]]]] = {}

    def visit(schema: Schema, specs: tuple[FieldSpec, ...], reachable: frozenset[int]) -> None:
        for f in specs:
            present = f.versions.within(reachable)
            base = f.type.removeprefix("[]")
            if not present or base in SCALARS:
                continue
            nested = f.fields or schema.common.get(base)
            if nested is None:
                raise SystemExit(f"{schema.name}.{f.name}: unknown type {f.type}")
            found.setdefault(base, []).append((schema, f, nested, present))
            visit(schema, nested, present)

    for schema in schemas:
        visit(schema, schema.fields, spoken)

    # One class per distinct definition; when one name stands for different definitions, each is prefixed with
    # the name of the message it is in (a request's struct and its response's, say).
    structs: list[Struct] = []
    by_spec: dict[int, Struct] = {}
    for kafka_name, uses in found.items():
        clash = len({signature(nested, reachable) for _, _, nested, reachable in uses}) > 1
        mine: dict[str, Struct] = {}
        for schema, spec, nested, reachable in uses:
            key = schema.name if clash else ""
            struct = mine.get(key)
            if struct is None:
                struct = mine[key] = Struct(f"{key}{kafka_name}", kafka_name, spec.about, schema)
                structs.append(struct)
            elif clash and signature(nested, reachable) != signature(*struct.uses[0]):
                raise SystemExit(f"{schema.name}: two different structs named {kafka_name}")
            struct.uses.append((nested, reachable))
            struct.request_side |= schema.kind == "request"
            by_spec[id(spec)] = struct
    tops = [Struct(s.name, s.name, "", s, s, [(s.fields, spoken)], s.kind == "request") for s in schemas]
    names = [s.name for s in [*structs, *tops]]
    clashes = sorted({n for n in names if names.count(n) > 1} | (set(names) & RESERVED_NAMES))
    if clashes:
        raise SystemExit(f"{api.module}: class names clash: {', '.join(clashes)}")
    for struct in [*structs, *tops]:
        struct.flexible = struct.owner.flexible.within(struct.domain)
        struct.fields = list(merged_fields(struct, by_spec))

    # Children before parents (class-level defaults name them), responses before requests.
    ordered: list[Struct] = []

    def place(struct: Struct) -> None:
        if struct not in ordered:
            for f in struct.fields:
                if f.struct is not None:
                    place(f.struct)
            ordered.append(struct)

    for top in sorted(tops, key=lambda s: s.owner.kind == "request"):
        place(top)
    return Module(api, schemas, (low, high), ordered, defs.version)


def merged_fields(struct: Struct, by_spec: dict[int, Struct]) -> Iterator[Field]:
    """The struct's fields, each present, nullable and tagged at the versions any of its uses has it so."""
    for spec in struct.uses[0][0]:
        present: frozenset[int] = frozenset()
        nullable: frozenset[int] = frozenset()
        tagged: frozenset[int] = frozenset()
        for specs, reachable in struct.uses:
            for other in specs:
                if other.name == spec.name:
                    here = other.versions.within(reachable)
                    present |= here
                    nullable |= other.nullable.within(here)
                    tagged |= other.tagged.within(here) if other.tag is not None else frozenset()
        if not present:
            continue
        if not tagged <= struct.flexible:
            raise SystemExit(f"{struct.name}.{spec.name}: tagged outside flexible versions")
        attr = snake(spec.name)
        attr = f"{attr}_" if keyword.iskeyword(attr) else attr
        local = f"{attr}_" if attr in LOCALS else attr
        yield Field(spec, attr, local, present, tagged, nullable, by_spec.get(id(spec)))


RESERVED_NAMES = frozenset({"Reader", "Writer", "Self", "ClassVar", "ApiKey", "Response", "attrs", "struct", "uuid"})


# --- code ------------------------------------------------------------------------------------------------------


def cond(versions: Iterable[int], domain: Iterable[int]) -> str | None:
    """The test for ``versions`` within ``domain`` (the versions a struct is used at), simplified to that domain:
    ``None`` when it holds for every version there, ``version >= 5`` rather than ``5 <= version <= 12``."""
    chosen = frozenset(versions)
    ordered = sorted(domain)
    if all(v in chosen for v in ordered):
        return None
    runs: list[tuple[int, int]] = []
    for v in ordered:
        if v in chosen:
            if runs and ordered.index(runs[-1][1]) == ordered.index(v) - 1:
                runs[-1] = (runs[-1][0], v)
            else:
                runs.append((v, v))
    parts = []
    for low, high in runs:
        lower, upper = low != ordered[0], high != ordered[-1]
        if lower and upper:
            parts.append(f"version == {low}" if low == high else f"{low} <= version <= {high}")
        elif lower:
            parts.append(f"version >= {low}")
        elif upper:
            parts.append(f"version <= {high}")
    return " or ".join(parts) if parts else "False"


def branches(domain: frozenset[int], cases: Sequence[tuple[frozenset[int], list[str]]]) -> list[str]:
    """An if/elif/else chain over ``cases`` (versions, lines), newest versions first; the last case is ``else``
    when the cases cover ``domain``, and a single case covering it needs no test at all."""
    cases = sorted((c for c in cases if c[0] and c[1]), key=lambda c: -max(c[0]))
    covered = frozenset().union(*(c[0] for c in cases)) == domain if cases else False
    out: list[str] = []
    if len(cases) == 1 and not covered and _lone_if(cases[0][1]):
        test, inner = cond(cases[0][0], domain), cases[0][1]
        return [f"if ({test}) and {inner[0][3:-1]}:", *inner[1:]]
    for i, (versions, lines) in enumerate(cases):
        test = cond(versions, domain)
        if test is None:
            return lines
        if i == len(cases) - 1 and covered and i > 0:
            if _lone_if(lines):  # else: if x: ... is elif x: ...
                out += [f"el{lines[0]}", *lines[1:]]
                break
            out.append("else:")
        else:
            out.append(f"{'elif' if i else 'if'} {test}:")
        out += ["    " + line for line in lines]
    return out


def merge_ifs(lines: list[str]) -> list[str]:
    """Consecutive ``if`` blocks with the same test (and no ``elif``/``else``) as one block."""
    blocks: list[list[str]] = []
    for line in lines:
        if line.startswith(" ") or line.startswith(("elif ", "else:")):
            blocks[-1].append(line)
        else:
            blocks.append([line])
    out: list[str] = []
    previous: list[str] | None = None
    for block in blocks:
        simple = block[0].startswith("if ") and not any(b.startswith(("elif ", "else:")) for b in block)
        if simple and previous is not None and previous[0] == block[0]:
            previous += block[1:]
            out += block[1:]
            continue
        out += block
        previous = block if simple else None
    return out


def ternary(lines: list[str]) -> list[str]:
    """``if c: x = a`` / ``else: x = b`` as ``x = a if c else b``."""
    if len(lines) == 4 and lines[0].startswith("if ") and lines[2] == "else:":
        target, value = lines[1].strip().split(" = ", 1)
        other_target, other = lines[3].strip().split(" = ", 1)
        if target == other_target and "," not in target:
            return [f"{target} = {value} if {lines[0][3:-1]} else {other}"]
    return lines


def _lone_if(lines: list[str]) -> bool:
    """``lines`` are one ``if`` block (which a version test around it would nest)."""
    return lines[0].startswith("if ") and all(line.startswith("    ") for line in lines[1:])


def flex(versions: frozenset[int], struct: Struct) -> str:
    if versions <= struct.flexible:
        return "True"
    return "False" if not versions & struct.flexible else "flexible"


def annotation(f: Field) -> str:
    if f.struct is not None:
        inner = f.struct.name
    elif f.base in SCALARS:
        inner = SCALARS[f.base]
    else:
        raise SystemExit(f"{f.spec.name}: unsupported type {f.spec.type}")
    text = f"tuple[{inner}, ...]" if f.array else inner
    return f"{text} | None" if f.optional else text


def default(f: Field) -> str:
    """The default as a Python expression: the JSON's, else Kafka's."""
    raw = f.spec.default
    if f.array:
        return "None" if f.optional else "()"
    if f.struct is not None:
        return "None" if f.optional else f"{f.struct.name}()"
    if raw == "null" or raw is None:
        return _zero(f)
    if f.base == "bool":
        return "True" if str(raw).lower() == "true" else "False"
    if f.base == "float64":
        return repr(float(str(raw)))
    if f.base in FIXED:
        return repr(int(str(raw), 0))
    if f.base == "string":
        return repr(str(raw))
    raise SystemExit(f"{f.spec.name}: cannot use default {raw!r} for {f.spec.type}")


def _zero(f: Field) -> str:
    if f.spec.default == "null" and f.optional:
        return "None"
    return {
        "bool": "False",
        "float64": "0.0",
        "string": '""',
        "bytes": 'b""',
        "uuid": "ZERO_UUID",
        "records": "None" if f.optional else "EMPTY_VIEW",
    }.get(f.base, "0")


def differs(expr: str, f: Field) -> str:
    """A test that the value ``expr`` is not at the field's default (tagged fields are written only then)."""
    value = default(f)
    if value == "None":
        return f"{expr} is not None"
    if value in ("False", "()", '""', 'b""', "0"):
        return expr
    if value == "True":
        return f"not {expr}"
    return f"{expr} != {value}"


def convert(expr: str, source: Field, target: Field, depth: int = 0) -> str:
    """``expr``, a value of ``source``, as a value of ``target``: the same for a scalar, a struct (or a tuple of
    them) rebuilt with the fields both have, by Kafka's names; ``SystemExit`` where the two cannot match."""
    if source.struct is None or target.struct is None:
        if source.spec.type != target.spec.type or (source.optional and not target.optional):
            raise SystemExit(f"{source.spec.name}: {source.spec.type} cannot become {target.spec.type}")
        return expr
    if source.array != target.array or (source.optional and not target.optional):
        raise SystemExit(f"{source.spec.name}: {source.spec.type} cannot become {target.spec.type}")
    var = f"item{depth}"
    one = var if source.array else expr
    fields = {f.spec.name: f for f in target.struct.fields}
    args = ", ".join(
        f"{fields[f.spec.name].attr}={convert(f'{one}.{f.attr}', f, fields[f.spec.name], depth + 1)}"
        for f in source.struct.fields
        if f.spec.name in fields
    )
    value = f"{target.struct.name}({args})"
    if source.array:
        value = f"tuple({value} for {var} in {expr})"
    return f"None if {expr} is None else {value}" if source.optional else value


def segments(fields: Sequence[Field]) -> Iterator[list[Field]]:
    """The fields in order: each run of consecutive fixed-width ones together (one ``struct`` call), each other
    field alone."""
    for fixed, group in itertools.groupby(fields, key=lambda f: f.fixed is not None):
        if fixed:
            yield list(group)
        else:
            yield from ([f] for f in group)


class Emitter:
    """Writes one module's source: its classes, their ``encode``/``decode``, the structs they unpack with, imports."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.formats: dict[str, str] = {}
        self.uses: set[str] = set()

    def fmt(self, chars: str) -> str:
        """The module-level ``struct.Struct`` of a run of fixed-width fields, named by its format."""
        self.uses.add("struct")
        return self.formats.setdefault(chars, "_" + chars.replace("?", "o"))

    # reading -----------------------------------------------------------------------------------------------------

    def read(self, f: Field, fl: str, nullable: bool) -> str:
        """An expression reading one occurrence of ``f`` (``nullable``: as written by a version allowing null)."""
        base = f.base
        if f.struct is not None:
            name = f.struct.name
            if f.array:
                return f"r.{'nullable_structs' if f.optional else 'structs'}({name}, version, {fl})"
            if nullable:
                return f"({name}.decode(r, version) if r.int8() >= 0 else None)"
            return f"{name}.decode(r, version)"
        if f.array:
            if base == "int32" and not f.optional:
                return f"r.int32s({fl})"
            if base == "string":
                return f"r.{'nullable_strings' if f.optional else 'strings'}({fl})"
            if base not in FIXED and base != "uuid":
                raise SystemExit(f"{f.spec.name}: arrays of {base} are not supported")
            reader = "boolean" if base == "bool" else base
            return f"r.{'nullable_array' if f.optional else 'array'}({fl}, Reader.{reader})"
        if base == "string":
            return f"r.{'nullable_string' if f.optional else 'string'}({fl})"
        if base == "bytes":
            return f"r.{'nullable_bytes' if f.optional else 'bytes_'}({fl})"
        if base == "records":
            return f"r.{'nullable_view' if f.optional else 'view'}({fl})"
        if base == "uuid":
            return "r.uuid()"
        return f"r.{'boolean' if base == 'bool' else base}()"

    def decode(self, struct: Struct) -> list[str]:
        domain = struct.domain
        body: list[str] = []
        uses_flexible = False
        fields = struct.fields
        for run in segments(fields):
            if run[0].fixed is not None:
                body += self.decode_run(run, domain)
            else:
                lines, flexible_used = self.decode_field(run[0], struct)
                uses_flexible |= flexible_used
                body += lines
        tagged = [f for f in fields if f.tagged]
        if struct.flexible:
            test = cond(struct.flexible, domain)
            if tagged:
                loop = ["for _ in range(r.uvarint()):", "    tag, end = r.tag()"]
                cases: list[str] = []
                for f in tagged:
                    extra = cond(f.tagged, struct.flexible)
                    check = f"tag == {f.spec.tag}" + (f" and ({extra})" if extra else "")
                    cases.append(f"if {check}:" if not cases else f"elif {check}:")
                    cases.append(f"    {f.local} = {self.read(f, 'True', False)}")
                loop += ["    " + line for line in cases] + ["    r.skip_to(end)"]
            else:
                loop = ["r.skip_tags()"]
            body += loop if test is None else [f"if {test}:", *("    " + line for line in loop)]
        if uses_flexible:
            body.insert(0, f"flexible = {cond(struct.flexible, domain)}")
        args = ", ".join(f.local for f in fields)
        body.append(f"return cls({args})")
        return body

    def decode_run(self, run: list[Field], domain: frozenset[int]) -> list[str]:
        layouts: dict[tuple[int, ...], set[int]] = {}
        for v in sorted(domain):
            layouts.setdefault(tuple(k for k, f in enumerate(run) if v in f.inline), set()).add(v)
        cases = []
        for layout, versions in layouts.items():
            lines = []
            present = [run[k] for k in layout]
            if len(present) > 1:
                names = ", ".join(f.local for f in present)
                lines.append(f"{names} = r.unpack({self.fmt(''.join(f.fixed or '' for f in present))})")
            elif present:
                lines.append(f"{present[0].local} = {self.read(present[0], 'False', False)}")
            lines += [f"{f.local} = {default(f)}" for k, f in enumerate(run) if k not in layout]
            cases.append((frozenset(versions), lines))
        return ternary(branches(domain, cases))

    def decode_field(self, f: Field, struct: Struct) -> tuple[list[str], bool]:
        domain = struct.domain
        inline = f.inline
        if not inline:  # tagged only: the default, unless the tag appears
            return [f"{f.local}: {annotation(f)} = {default(f)}"], False
        if f.struct is not None and not f.array and f.nullable and inline - f.nullable:
            groups = [(inline & f.nullable, True), (inline - f.nullable, False)]
        else:
            groups = [(inline, f.struct is not None and not f.array and bool(f.nullable))]
        used = False
        cases = []
        for versions, nullable in groups:
            fl = flex(versions, struct)
            used |= fl == "flexible"
            cases.append((versions, [f"{f.local} = {self.read(f, fl, nullable)}"]))
        if inline != domain:
            cases.append((domain - inline, [f"{f.local} = {default(f)}"]))
        return ternary(branches(domain, cases)), used

    # writing -----------------------------------------------------------------------------------------------------

    def write(self, f: Field, value: str, fl: str, nullable: bool, out: str = "w") -> list[str]:
        """Statements writing ``value`` for ``f`` to ``out`` (``nullable``: the version allows null)."""
        base = f.base
        if f.struct is not None:
            if f.array:
                return [f"{out}.structs({value}, version, {fl})"]
            if nullable:
                return [f"{out}.nullable_struct({value}, version)"]
            return [f"{value}.encode({out}, version)"]
        if f.array:
            if base == "int32":
                return [f"{out}.int32s({value}, {fl})"]
            if base == "string":
                return [f"{out}.strings({value}, {fl})"]
            writer = "boolean" if base == "bool" else base
            return [f"{out}.array({value}, {fl}, Writer.{writer})"]
        if base == "string":
            return [f"{out}.{'nullable_string' if nullable else 'string'}({value}, {fl})"]
        if base in ("bytes", "records"):
            return [f"{out}.{'nullable_bytes' if nullable else 'bytes_'}({value}, {fl})"]
        if base == "uuid":
            return [f"{out}.uuid({value})"]
        return [f"{out}.{'boolean' if base == 'bool' else base}({value})"]

    def strict(self, f: Field, struct: Struct) -> list[str]:
        """For a request's non-ignorable field, refusing a value the version cannot carry (Kafka's rule)."""
        if not struct.request_side or f.spec.ignorable:
            return []
        message = f"{struct.name}.{f.attr} needs v{f.spec.versions}, not v{{version}}"
        return [f"if {differs('self.' + f.attr, f)}:", f'    raise ValueError(f"{message}")']

    def encode(self, struct: Struct) -> list[str]:
        domain = struct.domain
        body: list[str] = []
        fields = struct.fields
        for run in segments(fields):
            if run[0].fixed is not None:
                body += self.encode_run(run, struct)
            else:
                body += self.encode_field(run[0], struct)
        tagged = [f for f in fields if f.tagged]
        if struct.flexible:
            test = cond(struct.flexible, domain)
            if tagged:
                section = ["tags: dict[int, bytes] = {}"]
                for f in tagged:
                    check = differs(f"self.{f.attr}", f)
                    extra = cond(f.tagged, struct.flexible)
                    if extra:
                        check = f"({extra}) and {check}"
                    section.append(f"if {check}:")
                    section.append("    t = Writer()")
                    section += ["    " + line for line in self.write(f, f"self.{f.attr}", "True", False, "t")]
                    section.append(f"    tags[{f.spec.tag}] = t.getvalue()")
                section.append("w.tagged_fields(tags)")
            else:
                section = ["w.empty_tags()"]
            body += section if test is None else [f"if {test}:", *("    " + line for line in section)]
        body = merge_ifs(body)
        if any(re.search(r"\bflexible\b", line) for line in body):
            body.insert(0, f"flexible = {cond(struct.flexible, domain)}")
        return body or ["pass"]

    def encode_run(self, run: list[Field], struct: Struct) -> list[str]:
        domain = struct.domain
        layouts: dict[tuple[int, ...], set[int]] = {}
        for v in sorted(domain):
            layouts.setdefault(tuple(k for k, f in enumerate(run) if v in f.inline), set()).add(v)
        cases = []
        for layout, versions in layouts.items():
            lines = []
            for k, f in enumerate(run):
                if k not in layout:
                    lines += self.strict(f, struct)
            present = [run[k] for k in layout]
            if len(present) > 1:
                values = ", ".join(f"self.{f.attr}" for f in present)
                lines.append(f"w.pack({self.fmt(''.join(f.fixed or '' for f in present))}, {values})")
            elif present:
                lines += self.write(present[0], f"self.{present[0].attr}", "False", False)
            cases.append((frozenset(versions), lines))
        return branches(domain, cases)

    def encode_field(self, f: Field, struct: Struct) -> list[str]:
        domain = struct.domain
        inline = f.inline
        cases: list[tuple[frozenset[int], list[str]]] = []
        value = f"self.{f.attr}"
        if f.optional and inline - f.nullable:
            nullable_in = f.spec.nullable
            checked = f'not_null({value}, "{struct.name}.{f.attr}", version, "{nullable_in}")'
            non_null = inline - f.nullable
            cases.append((non_null, self.write(f, checked, flex(non_null, struct), False)))
            if inline & f.nullable:
                both = inline & f.nullable
                cases.append((both, self.write(f, value, flex(both, struct), True)))
        elif inline:
            cases.append((inline, self.write(f, value, flex(inline, struct), bool(f.nullable))))
        absent = domain - f.present
        if absent:
            cases.append((absent, self.strict(f, struct)))
        return branches(domain, cases)

    # layouts -------------------------------------------------------------------------------------------------------

    def for_version(self, struct: Struct) -> list[str]:
        """A request's ``for_version``, which ``base.encode_request`` calls before writing: the request itself, or,
        for an API whose one-item fields became a batch (``Api.batched``), the request rewritten in the layout the
        version has, from whichever it was built in, as Kafka's request builders do."""
        batched = self.module.api.batched
        if batched is None:
            return ['"""Itself: this request has one layout at every version we speak."""', "return self"]
        batch = next((f for f in struct.fields if f.spec.name == batched), None)
        if batch is None or not batch.array:
            raise SystemExit(f"{struct.name}: no array field {batched} to batch with")
        domain = struct.domain
        first = min(batch.present)
        before = frozenset(v for v in domain if v < first)
        if not before or batch.present != domain - before:
            raise SystemExit(f"{struct.name}.{batch.attr}: not present from one version we speak on")
        singles = [f for f in struct.fields if f.present == before]
        if batch.struct is None:
            if len(singles) != 1 or singles[0].spec.type != batch.base:
                raise SystemExit(f"{struct.name}: {batched} batches no one field of type {batch.base}")
            item = f"self.{singles[0].attr}"
            taken = {singles[0].attr: "one"}
        else:
            inner = {f.spec.name: f for f in batch.struct.fields}
            missing = [f.spec.name for f in singles if f.spec.name not in inner]
            if not singles or missing:
                raise SystemExit(f"{struct.name}: {batched} items lack {missing or 'any field before them'}")
            pairs = [(f, inner[f.spec.name]) for f in singles]
            args = ", ".join(f"{b.attr}={convert('self.' + a.attr, a, b)}" for a, b in pairs)
            item = f"{batch.struct.name}({args})"
            taken = {a.attr: convert(f"one.{b.attr}", b, a) for a, b in pairs}
        cleared = ", ".join(f"{f.attr}={default(f)}" for f in singles)
        given = " or ".join(differs(f"self.{f.attr}", f) for f in singles)
        names = ", ".join(f"``{f.attr}``" for f in singles)
        doc = (
            f"The request in the layout ``version`` has, built in either: {names} to v{first - 1}, ``{batch.attr}`` "
            f"from v{first}; ``ValueError`` when an older version cannot carry the batch (Kafka's builders' rule)."
        )
        too_many = f"{struct.name} v{{version}} takes one of {batch.attr}, not {{len(self.{batch.attr})}}"
        back = ", ".join(f"{k}={v}" for k, v in taken.items())
        return [
            *docstring(doc, 8),
            f"if version >= {first}:",
            f"    if not self.{batch.attr}:",
            f"        return attrs.evolve(self, {cleared}, {batch.attr}=({item},))",
            f"    return attrs.evolve(self, {cleared}) if {given} else self",
            f"if not self.{batch.attr}:",
            "    return self",
            f"if len(self.{batch.attr}) != 1:",
            f'    raise ValueError(f"{too_many}")',
            f"(one,) = self.{batch.attr}",
            f"return attrs.evolve(self, {back}, {batch.attr}={default(batch)})",
        ]

    # classes -------------------------------------------------------------------------------------------------------

    def attribute(self, f: Field) -> list[str]:
        note = annotation(f)
        value = default(f)
        if f.base == "records":
            line = f"{f.attr}: {note} = attrs.field(default={value}, eq=records_key, repr=blob_repr)"
            self.uses |= {"records_key", "blob_repr"}
        elif f.base == "bytes" and not f.array:
            line = f"{f.attr}: {note} = attrs.field(default={value}, repr=blob_repr)"
            self.uses.add("blob_repr")
        elif f.struct is not None and not f.array and not f.optional:
            line = f"{f.attr}: {note} = attrs.field(factory={f.struct.name})"
        else:
            line = f"{f.attr}: {note} = {value}"
        for name in ("ZERO_UUID", "EMPTY_VIEW"):
            if name in value:
                self.uses.add(name)
        if "uuid.UUID" in note:
            self.uses.add("uuid")
        about = " ".join(f.spec.about.split())
        versions = f"v{f.spec.versions}"
        if f.tagged:
            versions += f", tag {f.spec.tag}"
        doc = f"{about} ({versions})" if about else f"({versions})"
        return [line, *docstring(doc, 4)]

    def klass(self, struct: Struct) -> list[str]:
        out = ["", "", "@attrs.define(frozen=True, slots=True)", f"class {struct.name}:"]
        out += ["    " + line for line in docstring(self.class_doc(struct), 4)]
        schema = struct.schema
        if schema is not None and schema.kind == "request":
            response = schema.name.removesuffix("Request") + "Response"
            flexible_from = schema.flexible.low if schema.flexible.low <= schema.flexible.high else NEVER_FLEXIBLE
            low, high = self.module.spoken
            out += [
                "",
                f"    API_KEY: ClassVar[ApiKey] = ApiKey.{snake(schema.name.removesuffix('Request')).upper()}",
                f"    MIN_VERSION: ClassVar[int] = {low}",
                f"    MAX_VERSION: ClassVar[int] = {high}",
                f"    FLEXIBLE_FROM: ClassVar[int] = {flexible_from}",
                f"    RESPONSE: ClassVar[type[Response]] = {response}",
            ]
            self.uses |= {"ClassVar", "ApiKey", "Response"}
        if struct.fields:
            out.append("")
        for f in struct.fields:
            out += ["    " + line for line in self.attribute(f)]
        out += ["", "    def encode(self, w: Writer, version: int) -> None:"]
        out += ["        " + line for line in self.encode(struct)]
        out += ["", "    @classmethod", "    def decode(cls, r: Reader, version: int) -> Self:"]
        out += ["        " + line for line in self.decode(struct)]
        if schema is not None and schema.kind == "request":
            out += ["", "    def for_version(self, version: int) -> Self:"]
            out += ["        " + line for line in self.for_version(struct)]
        return out

    def class_doc(self, struct: Struct) -> str:
        schema = struct.schema
        if schema is None:
            about = " ".join(struct.about.split()) or f"Kafka's {struct.kafka_name}."
            return about if about.endswith(".") else about + "."
        low, high = self.module.spoken
        spoken = f"v{low}" if low == high else f"v{low}-{high}"
        if schema.kind == "data":
            return f"Kafka's {schema.name}, {spoken}; its bytes carry no version (the consumer protocol prefixes one)."
        what = schema.kind
        return f"The {schema.name.removesuffix(what.capitalize())} {what} (API key {schema.api_key}), {spoken}."

    def render(self) -> str:
        module = self.module
        classes: list[str] = []
        for struct in module.structs:
            classes += self.klass(struct)
        text = "\n".join(classes)
        for name in ("not_null", "Reader", "Writer"):
            if re.search(rf"\b{name}\b", text):
                self.uses.add(name)
        names = [s.name for s in module.structs]
        typing = ["TYPE_CHECKING", "ClassVar", "Self"] if "Response" in self.uses else ["Self"]
        wire = ("EMPTY_VIEW", "ZERO_UUID", "Reader", "Writer", "blob_repr", "not_null", "records_key")  # isort's order
        imports = [
            "from __future__ import annotations",
            "",
            *(f"import {m}" for m in ("struct", "uuid") if m in self.uses),
            f"from typing import {', '.join(typing)}",
            "",
            "import attrs",
            "",
            *([f"from {PACKAGE}.api_keys import ApiKey"] if "ApiKey" in self.uses else []),
            f"from asyncconsumer.protocol.wire import {', '.join(n for n in wire if n in self.uses)}",
        ]
        if "Response" in self.uses:
            imports += ["", "if TYPE_CHECKING:", "    from asyncconsumer.protocol.base import Response"]
        consts = [f'{name} = struct.Struct(">{chars}")' for chars, name in sorted(self.formats.items())]
        all_ = ["__all__ = [", *(f'    "{n}",' for n in sorted(names)), "]"]
        parts = [header(module), "\n".join(imports), "\n".join(all_)]
        if consts:
            parts.append("\n".join(consts))
        return "\n\n".join(parts) + "\n" + text + "\n"


def docstring(text: str, indent: int) -> list[str]:
    width = 120 - indent - 6
    lines = wrap(text.replace("\\", "\\\\").replace('"""', "'''"), width) or [""]
    if len(lines) == 1:
        return [f'"""{lines[0]}"""']
    return [f'"""{lines[0]}', *lines[1:], '"""']


def wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False)


def header(module: Module) -> str:
    """The module docstring: what it was generated from, by what, and the versions it speaks."""
    names = "/".join(f"{s.name}.json" for s in module.schemas)
    first = module.schemas[0]
    low, high = module.spoken
    lines = wrap(
        f"Generated from Apache Kafka's {names} (kafka-clients {module.kafka_version}) by scripts/gen_protocol.py; "
        "do not edit.",
        116,
    )
    spoken = f"v{low}" if low == high else f"v{low}-{high}"
    flexible = f"flexible from v{first.flexible.low}" if first.flexible.low <= first.flexible.high else "never flexible"
    what = " and ".join(s.name for s in module.schemas)
    if first.api_key is not None:
        what = f"{first.name.removesuffix('Request')} (API key {first.api_key})"
    lines += ["", *wrap(f"{what} at {spoken} of the v{first.valid} Kafka defines; {flexible}.", 116)]
    return '"""' + "\n".join(lines) + '\n"""'


def render_api_keys(defs: Definitions) -> str:
    requests = sorted(
        (s for s in defs.schemas.values() if s.kind == "request" and s.api_key is not None),
        key=lambda s: s.api_key or 0,
    )
    body = [
        '"""Generated from Apache Kafka\'s *Request.json (kafka-clients '
        f"{defs.version}) by scripts/gen_protocol.py; do not edit.",
        "",
        "Every API key Kafka defines, by Kafka's name.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from enum import IntEnum",
        "",
        '__all__ = ["ApiKey"]',
        "",
        "",
        "class ApiKey(IntEnum):",
        '    """The API key of each request, as the request header carries it."""',
        "",
    ]
    body += [f"    {snake(s.name.removesuffix('Request')).upper()} = {s.api_key}" for s in requests]
    return "\n".join(body) + "\n"


def render_package(modules: Sequence[Module], version: str) -> str:
    rows = []
    for module in modules:
        low, high = module.spoken
        first = module.schemas[0]
        key = "" if first.api_key is None else f" (API key {first.api_key})"
        spoken = f"v{low}" if low == high else f"v{low}-{high}"
        rows.append(f"- ``{module.api.module}``{key}: {spoken} of Kafka's {first.valid}")
    return (
        f'"""Generated from Apache Kafka\'s message definitions (kafka-clients {version}) by scripts/gen_protocol.py;\n'
        "do not edit.\n\nOne module per API, at the versions we speak; ``api_keys`` holds every API key.\n\n"
        + "\n".join(rows)
        + '\n"""\n'
    )


def render_all(defs: Definitions) -> dict[str, str]:
    """Every generated file's text, by its path relative to the repository root."""
    modules = [build_module(api, defs) for api in APIS]
    files = {f"{module.api.module}.py": Emitter(module).render() for module in modules}
    files["api_keys.py"] = render_api_keys(defs)
    files["__init__.py"] = render_package(modules, defs.version)
    return {str((OUT / name).relative_to(ROOT)): ruff_format(text, OUT / name) for name, text in sorted(files.items())}


def ruff_format(text: str, path: Path) -> str:
    """The text as ``ruff format`` leaves it, with the repository's settings (line length 120)."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(path), "-"],
        input=text,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"ruff format failed on {path}:\n{done.stderr}")
    return done.stdout


def default_jar() -> Path:
    """The kafka-clients jar among the broker's jars the tests fetch (with Maven, once)."""
    sys.path.insert(0, str(ROOT))
    from tests.support.kafka_broker import fetch_jars

    jars = sorted(fetch_jars().glob("kafka-clients-*.jar"))
    if not jars:
        raise SystemExit("no kafka-clients jar among the fetched Kafka jars")
    return jars[-1]


def differences(files: dict[str, str]) -> Iterator[str]:
    """The generated files whose text differs from what is on disk, and stray modules nothing generates."""
    for path, text in files.items():
        target = ROOT / path
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            yield path
    for stray in sorted(OUT.glob("*.py")):
        if str(stray.relative_to(ROOT)) not in files:
            yield str(stray.relative_to(ROOT))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jar", type=Path, help="the kafka-clients jar to read (default: the tests' Maven cache)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming the files that differ")
    args = parser.parse_args(argv)
    files = render_all(Definitions.from_jar(args.jar or default_jar()))
    if args.check:
        stale = list(differences(files))
        for path in stale:
            print(f"differs from the generator's output: {path}", file=sys.stderr)
        return 1 if stale else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for stray in differences(files):
        if stray not in files:
            (ROOT / stray).unlink()
    for path, text in files.items():
        (ROOT / path).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
