"""Statements that move data between tables and files: COPY, LOAD DATA, EXPORT DATA.

Files, stages and directories are named `path:<uri>` and carry no column lineage.
"""

from __future__ import annotations

from sqlglot import exp

from headwater.sql_lineage.names import path_name, table_name
from headwater.sql_lineage.queries import QueryEvaluator
from headwater.sql_lineage.writes import Write


def copy_writes(node: exp.Copy, ev: QueryEvaluator) -> list[Write]:
    """COPY INTO dest FROM src and COPY t FROM 'file' (kind set); COPY t|(query) TO 'file'."""
    this = node.this
    this = this.this if isinstance(this, exp.Schema) else this
    files = node.args.get("files") or []
    destinations, origins = ([this], files) if node.args.get("kind") else (files, [this])
    for origin in origins:
        if isinstance(origin, (exp.Query, exp.Subquery)):
            ev.query(origin, {})
        else:
            name = _location(origin)
            if name:
                ev.read(name)
    names = [_location(destination) for destination in destinations]
    return [Write(name) for name in names if name]


def _location(node: exp.Expr) -> str | None:
    if isinstance(node, exp.Literal):
        return path_name(node.name)
    if isinstance(node, exp.Table):
        return table_name(node)
    return None


def load_writes(node: exp.LoadData, ev: QueryEvaluator) -> list[Write]:
    """Hive's LOAD DATA INPATH '…' INTO TABLE t and BigQuery's LOAD DATA … FROM FILES (uris = […])."""
    inpath = node.args.get("inpath")
    if isinstance(inpath, exp.Literal):
        ev.read(path_name(inpath.name))
    files = node.args.get("files")
    for prop in files.expressions if isinstance(files, exp.Properties) else []:
        if isinstance(prop, exp.Property) and prop.name.lower() == "uris":
            for literal in prop.find_all(exp.Literal):
                ev.read(path_name(literal.name))
    # BigQuery's LOAD DATA [OVERWRITE] t (columns) names t's columns as a Schema around it.
    target = node.this.this if isinstance(node.this, exp.Schema) else node.this
    name = table_name(target) if isinstance(target, exp.Table) else None
    return [Write(name)] if name else []


def export_writes(node: exp.Export, ev: QueryEvaluator) -> list[Write]:
    """BigQuery's EXPORT DATA OPTIONS (uri = '…') AS query."""
    if isinstance(node.this, exp.Expr):
        ev.query(node.this, {})
    options = node.args.get("options")
    for prop in options.expressions if isinstance(options, exp.Properties) else []:
        if isinstance(prop, exp.Property) and prop.name.lower() == "uri":
            return [Write(path_name(prop.args["value"].name))]
    return []


def stage_writes(node: exp.Put | exp.Get, ev: QueryEvaluator) -> list[Write]:
    """Snowflake's `PUT file://… @stage` (local files uploaded to a stage) and `GET @stage
    file://…` (downloaded from it): files to files."""
    local = node.this.name if isinstance(node.this, exp.Literal) else None
    stage = node.args.get("target")
    staged = stage.name if isinstance(stage, (exp.Var, exp.Literal)) else None
    if local is None or staged is None:
        return []
    source, target = (local, staged) if isinstance(node, exp.Put) else (staged, local)
    ev.read(path_name(source))
    return [Write(path_name(target))]
