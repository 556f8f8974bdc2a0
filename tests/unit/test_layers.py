"""Each layer imports only the layers below it (README, "Where things are"), and no modules import
each other in a circle.

Read from the source (every `import` and `from … import`, relative ones resolved, those under
TYPE_CHECKING and inside functions too), so a new dependency upwards fails here before it makes a
circle. ``from headwater import store`` counts as an import of ``headwater.store``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "backend" / "headwater"

# The package itself (its __version__), errors, settings and times: every layer may import them.
BASE = {"", "errors", "settings", "times", "__init__"}
# What each library layer may import, besides itself and BASE. Commands (cli, server, app,
# command_base, the `command` modules, pipeline, consume, imports, embedded, export_schemas) sit on
# top of them all.
ALLOWED = {
    "db": set(),
    "sql_lineage": set(),
    "lineage": {"db"},
    "store": {"db", "lineage"},
    "ingest": {"db", "lineage", "store", "sql_lineage"},
    "integrations": {"db", "lineage", "store", "sql_lineage", "ingest"},
    "feed": {"db", "lineage", "store"},
    "access": {"db", "store"},
    # Classifications and policy checks, applied from the change log the feed settles.
    "governance": {"db", "lineage", "store", "feed"},
    "api": {
        "db",
        "lineage",
        "store",
        "sql_lineage",
        "ingest",
        "integrations",
        "feed",
        "access",
        "governance",
    },
    # An edge beside the REST API, whose documents its answers share.
    "mcp": {"db", "lineage", "store", "sql_lineage", "ingest", "api"},
}

# Modules that may import each other: GraphQL object types whose fields name each other (a Dataset's
# runs are Runs, a Run's job is a Job), which strawberry resolves once the schema is built.
CIRCLES_ALLOWED_UNDER = "headwater.api.graphql.types."

# Circles that stand today, each to be removed where it is made; a new circle, or one of these
# grown by a module, fails. A listed circle that no longer stands fails too, to be struck off here.
KNOWN_CIRCLES: set[frozenset[str]] = set()


def _layer(module: str) -> str:
    """The layer of ``headwater.x.y``: ``x``; '' for the package itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _modules() -> list[tuple[str, Path]]:
    modules = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules.append((name, path))
    return modules


MODULES = dict(_modules())


def _known(name: str) -> str:
    """``name``, or the nearest package or module above it that exists (``headwater.x.CONSTANT``
    is an import of ``headwater.x``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _imports(source: str, module: str, *, package: bool = False) -> set[str]:
    """The headwater modules ``source`` (the text of ``module``, a package's __init__ when
    ``package``) imports: relative imports resolved, ``from a import b`` read as ``a.b`` when b is
    a module."""
    here = module if package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = here.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                origin = f"{base}.{node.module}" if node.module else base
            else:
                origin = node.module or ""
            for alias in node.names:
                found.add(_known(f"{origin}.{alias.name}") or origin)
        elif isinstance(node, ast.Import):
            found.update(_known(alias.name) or alias.name for alias in node.names)
    return {m for m in found if m == "headwater" or m.startswith("headwater.")}


def _imports_of(module: str) -> set[str]:
    path = MODULES[module]
    return _imports(path.read_text(), module, package=path.name == "__init__.py") - {module}


def _upward(module: str, imported: set[str]) -> list[str]:
    """What of ``imported`` lies in a layer above ``module``'s."""
    layer = _layer(module)
    if layer not in ALLOWED or module.endswith(".command"):
        return []  # a command: it may use every layer
    allowed = ALLOWED[layer] | BASE | {layer}
    return sorted(m for m in imported if _layer(m) not in allowed)


@pytest.mark.parametrize("module", list(MODULES))
def test_a_library_module_imports_no_layer_above_its_own(module: str) -> None:
    upward = _upward(module, _imports_of(module))
    assert not upward, f"{module} ({_layer(module)}) imports from layers above it: {upward}"


@pytest.mark.parametrize(
    "statement",
    [
        "from headwater.api import app",
        "import headwater.api.app",
        "from headwater import api",
        "from ...api import app",
        "from ... import ingest",
        "if TYPE_CHECKING:\n    from headwater.ingest.queue import IngestQueue",
        "def f():\n    from headwater.feed import hub",
    ],
)
def test_every_spelling_of_an_upward_import_is_caught(statement: str) -> None:
    # As if written in headwater/store/catalog/search.py (the layer store, a package two deep).
    module = "headwater.store.catalog.search"
    assert _upward(module, _imports(statement, module))


@pytest.mark.parametrize(
    "statement",
    [
        "from headwater import __version__",
        "from headwater.errors import NotFoundError",
        "from ..changes import Change",
        "from . import records",
        "from headwater.lineage.node_ids import format_node_id",
    ],
)
def test_imports_of_the_layer_and_below_pass(statement: str) -> None:
    module = "headwater.store.catalog.search"
    assert not _upward(module, _imports(statement, module))


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others."""
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(graph.get(m, ()))
    return seen


def _circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The sets of more than one module that each import all the others, directly or not."""
    reach = {m: _reachable(graph, m) for m in graph}
    found = {
        frozenset({m} | {o for o in reach[m] if m in reach.get(o, ())}) for m in graph if m in reach[m]
    }
    return sorted((c for c in found if len(c) > 1), key=sorted)


def _import_graph() -> dict[str, set[str]]:
    """Each module's imports of other modules (an import of a package is of its __init__; the
    parents a module's own import runs first are not counted)."""
    return {m: _imports_of(m) & set(MODULES) for m in MODULES}


def test_no_modules_import_each_other_in_a_circle() -> None:
    circles = [c for c in _circles(_import_graph()) if not _allowed_circle(c)]
    unknown = [sorted(c) for c in circles if not any(c <= known for known in KNOWN_CIRCLES)]
    assert not unknown, f"modules that import each other in a circle: {unknown}"


def test_every_known_circle_still_stands() -> None:
    circles = _circles(_import_graph())
    gone = [sorted(k) for k in KNOWN_CIRCLES if not any(len(c & k) > 1 for c in circles)]
    assert not gone, f"no longer circles: strike them off KNOWN_CIRCLES: {gone}"


def _allowed_circle(circle: frozenset[str]) -> bool:
    return all(m.startswith(CIRCLES_ALLOWED_UNDER) for m in circle)


def test_a_circle_is_found_however_long() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert _circles(graph) == [frozenset({"a", "b", "c"})]


def test_the_graphql_types_circle_is_the_only_one_allowed() -> None:
    assert _allowed_circle(frozenset({f"{CIRCLES_ALLOWED_UNDER}run", f"{CIRCLES_ALLOWED_UNDER}job"}))
    assert not _allowed_circle(
        frozenset({f"{CIRCLES_ALLOWED_UNDER}run", "headwater.api.graphql.loaders"})
    )


def test_the_rules_name_only_layers_that_exist() -> None:
    layers = {_layer(m) for m in MODULES}
    assert set(ALLOWED) <= layers
    assert all(allowed <= layers for allowed in ALLOWED.values())


def test_the_layers_themselves_stand_in_an_order() -> None:
    """No layer may import one that may import it back (directly or through others)."""
    layer_circles = _circles({layer: set(allowed) for layer, allowed in ALLOWED.items()})
    assert not layer_circles, f"layers allowed to import each other: {layer_circles}"
