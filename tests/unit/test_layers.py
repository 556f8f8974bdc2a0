"""Each layer imports only the layers below it (README, "Where things are").

Read from the source (every `import` and `from … import`, those under TYPE_CHECKING and inside
functions too), so a new dependency upwards fails here before it makes a circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "backend" / "headwater"

BASE = {"errors", "settings", "__init__"}
# What each library layer may import, besides itself and BASE. Commands (cli, server, app, the
# `command` modules, pipeline, consume, imports, embedded, export_schemas) sit on top of them all.
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


def _layer(module: str) -> str:
    """The layer of ``headwater.x.y``: ``x``; None-like '' for the package itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m.startswith("headwater.")}


def _modules() -> list[tuple[str, Path]]:
    modules = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules.append((name, path))
    return modules


@pytest.mark.parametrize(("module", "path"), _modules(), ids=[m for m, _ in _modules()])
def test_a_library_module_imports_no_layer_above_its_own(module: str, path: Path) -> None:
    layer = _layer(module)
    if layer not in ALLOWED or module.endswith(".command"):
        return  # a command: it may use every layer
    allowed = ALLOWED[layer] | BASE | {layer}
    upward = sorted(m for m in _imports(path) if _layer(m) not in allowed)
    assert not upward, f"{module} ({layer}) imports from layers above it: {upward}"


def test_the_rules_name_only_layers_that_exist() -> None:
    layers = {_layer(m) for m, _ in _modules()}
    assert set(ALLOWED) <= layers
    assert all(allowed <= layers for allowed in ALLOWED.values())
