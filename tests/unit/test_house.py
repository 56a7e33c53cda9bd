"""The house rules, read from the source: no import circle, sans-I/O managers and data-only events, no package
importing one above it, each package on its thread (the order and the threads are in ``docs/design.md``), and every
module with logic tested in a file of its own name (``tests/unit/<package>/test_<module>.py``)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "asyncconsumer"

LAYERS: list[set[str]] = [
    {
        "errors",
        "records",
        "config",
        "_config_checks",
        "metrics",
        "listener",
        "_clock",
        "_logs",
        "_patterns",
        "_offset_reset",
    },
    {"protocol"},
    {"events"},
    {"_state"},
    {"managers", "assignors"},
    {"network"},
    {"plugins"},
    {"_background"},
    {"stores"},
    {"_caller"},
    {"consumer", "sync", "share", "admin"},
    {"tools", "spark", "otel", "__init__"},
]
"""Low to high: a module may import its own layer or a lower one, never a higher one."""

LAYER_OF = {part: i for i, parts in enumerate(LAYERS) for part in parts}

THREADS: dict[str, set[str]] = {
    "caller": {"_caller", "stores", "consumer", "sync", "share", "admin", "otel"},
    "background": {"_background", "managers", "network", "assignors", "plugins"},
    "both": {"_state", "events"},
}
"""Which thread runs each package. ``_state`` and ``events`` are what crosses between the two; the foundation and
``protocol`` are plain data and functions either may use; ``tools`` and ``spark`` are applications of the faces."""

CALLER_MAY_IMPORT_FROM_BACKGROUND = {"asyncconsumer._background.builder"}
"""The doors, one per kind of client: the caller's side builds its parts and holds the thread's handle, nothing
more."""


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path, *, module_level_only: bool, type_only: bool = False) -> Iterator[str]:
    """The modules ``name`` imports, resolved to absolute names; ``TYPE_CHECKING`` blocks too with ``type_only``."""
    tree = ast.parse(path.read_text())
    is_package = path.name == "__init__.py"

    def visit(nodes: list[ast.stmt]) -> Iterator[str]:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                yield from visit(node.body if type_only else node.orelse)
                continue
            if isinstance(node, ast.Import):
                yield from (alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = name.split(".")
                    keep = len(parts) - node.level + (1 if is_package else 0)
                    base = ".".join([*parts[:keep], *([base] if base else [])])
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    yield full if full in MODULES else base
            for field in ("body", "orelse", "finalbody", "handlers"):
                children = getattr(node, field, None)
                if not children:
                    continue
                if not module_level_only or isinstance(node, (ast.If, ast.Try, ast.ExceptHandler)):
                    yield from visit(children)

    yield from visit(tree.body)


def _part(module: str) -> str:
    """The top-level piece of the package a module belongs to (``managers``, ``config``, ``__init__``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_piece_of_the_package_has_a_layer() -> None:
    assert {_part(m) for m in MODULES} == set(LAYER_OF)


@pytest.mark.parametrize("type_only", [False, True], ids=["run-time", "type-only"])
def test_no_package_imports_one_above_it(type_only: bool) -> None:
    """A type-only import counts too: the floor above is then one a reader of the module must know."""
    wrong = [
        f"{module} imports {target}"
        for module, path in MODULES.items()
        for target in _imports(module, path, module_level_only=False, type_only=type_only)
        if target in MODULES and LAYER_OF[_part(target)] > LAYER_OF[_part(module)]
    ]
    assert wrong == []


@pytest.mark.parametrize("piece", ["managers", "events"])
def test_managers_and_events_do_no_io(piece: str) -> None:
    forbidden = ("anyio", "asyncio", "socket", "ssl", "selectors", "asyncconsumer.network")
    wrong = [
        f"{module} imports {target}"
        for module, path in MODULES.items()
        if _part(module) == piece
        for target in _imports(module, path, module_level_only=False)
        if target.startswith(forbidden)
    ]
    assert wrong == []


def test_events_hold_data_only() -> None:
    for module, path in MODULES.items():
        if _part(module) == "events":
            targets = {t for t in _imports(module, path, module_level_only=False) if t.startswith("asyncconsumer")}
            assert {_part(t) for t in targets} <= {"records", "errors", "events"}, (module, targets)


def test_no_import_circle() -> None:
    graph = {
        module: {t for t in _imports(module, path, module_level_only=True) if t in MODULES and t != module}
        for module, path in MODULES.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def strong(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in graph:
        if module not in index:
            strong(module)
    assert circles == []


def test_the_caller_side_reaches_the_background_only_through_the_builder() -> None:
    background = THREADS["background"]
    wrong = [
        f"{module} imports {target}"
        for module, path in MODULES.items()
        if _part(module) in THREADS["caller"]
        for target in _imports(module, path, module_level_only=False)
        if target in MODULES and _part(target) in background and target not in CALLER_MAY_IMPORT_FROM_BACKGROUND
    ]
    assert wrong == []


def test_the_caller_side_never_touches_what_the_background_owns() -> None:
    """``parts.owned`` holds the background's objects: no caller-side code names it (at run time,
    ``_background/owned.py`` checks every access in its debug mode)."""
    wrong = [
        f"{module}:{node.lineno}"
        for module, path in MODULES.items()
        if _part(module) in THREADS["caller"]
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr == "owned"
    ]
    assert wrong == []


def test_every_package_has_a_thread_or_is_plain_data() -> None:
    placed = set().union(*THREADS.values())
    plain = {"protocol", "tools", "spark", "__init__", *LAYERS[0]}
    assert {_part(m) for m in MODULES} <= placed | plain


def test_at_most_twelve_public_top_level_modules() -> None:
    public = sorted(p.name for p in PACKAGE.glob("*.py") if not p.name.startswith("_"))
    assert len(public) <= 12, public


# --- tests mirror the source -------------------------------------------------------------------------------------

UNIT_TESTS = Path(__file__).resolve().parent

MIRROR_MIN_LINES = 40
"""A module of this many non-blank lines or more has logic worth a test file of its own."""

MIRROR_EXCEPTIONS: dict[str, str] = {}
"""Modules with logic that may lack their mirror for now, each with the reason (path relative to the package)."""


def _mirror(module: Path) -> Path:
    """Where ``asyncconsumer/<package>/<module>.py``'s tests live: ``tests/unit/<package>/test_<module>.py``, the
    leading underscore of a private module dropped (``_state/subscription.py`` -> ``_state/test_subscription.py``)."""
    relative = module.relative_to(PACKAGE)
    return UNIT_TESTS / relative.parent / f"test_{relative.stem.lstrip('_')}.py"


def _with_logic() -> list[Path]:
    return [
        path
        for path in MODULES.values()
        if path.name != "__init__.py"
        and sum(1 for line in path.read_text().splitlines() if line.strip()) >= MIRROR_MIN_LINES
    ]


def test_every_module_with_logic_has_its_own_test_file() -> None:
    missing = [
        f"{path.relative_to(PACKAGE)} -> {_mirror(path).relative_to(UNIT_TESTS.parent.parent)}"
        for path in _with_logic()
        if not _mirror(path).exists() and path.relative_to(PACKAGE).as_posix() not in MIRROR_EXCEPTIONS
    ]
    assert missing == []


def test_every_mirror_exception_is_still_needed() -> None:
    """An exception whose module gained its mirror, shrank below the threshold or went away is struck off."""
    needing = {path.relative_to(PACKAGE).as_posix() for path in _with_logic() if not _mirror(path).exists()}
    assert sorted(set(MIRROR_EXCEPTIONS) - needing) == []
    assert all(reason.strip() for reason in MIRROR_EXCEPTIONS.values())
