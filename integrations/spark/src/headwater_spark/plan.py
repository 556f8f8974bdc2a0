"""Column lineage from a Spark logical plan serialized with ``LogicalPlan.toJSON()``.

Pure Python, no JVM: everything here works on the decoded JSON, so it can be tested on recorded plans.

The JSON is a pre-order list of plan nodes. Each node names its class and its ``num-children``; fields
that point at children hold child positions. Expressions are serialized the same way, as flattened
pre-order lists. Plans that are not children (the query of a CTAS command, subquery plans inside
expressions) are inlined as their own flattened lists.

Column lineage follows attribute ids (``exprId``):

* Project, Aggregate and Window: an ``Alias`` id depends on every attribute in its expression.
* Union: output position i of every child feeds output i, which reuses the first child's ids.
* Expand and Generate: their new output attributes depend on the expressions that produce them.
* Join and Filter conditions, grouping keys and sort keys are indirect dependencies of every output
  column; window partition and order keys are indirect dependencies of the window's own column;
  CASE WHEN / IF conditions are indirect (CONDITIONAL) dependencies of the value they choose.
* Leaves (relations) map an attribute id to a dataset column.
* A write command maps query output i to the written column ``outputColumnNames[i]``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeGuard

DIRECT = "DIRECT"
INDIRECT = "INDIRECT"
IDENTITY = "IDENTITY"
TRANSFORMATION = "TRANSFORMATION"
AGGREGATION = "AGGREGATION"
JOIN = "JOIN"
FILTER = "FILTER"
GROUP_BY = "GROUP_BY"
SORT = "SORT"
WINDOW = "WINDOW"
CONDITIONAL = "CONDITIONAL"

_DIRECT_RANK = {IDENTITY: 0, TRANSFORMATION: 1, AGGREGATION: 2}
_INDIRECT_ORDER = {JOIN: 0, FILTER: 1, GROUP_BY: 2, SORT: 3, WINDOW: 4, CONDITIONAL: 5}

# Functions whose output hides the input value.
MASKING_FUNCTIONS = frozenset(
    {"Sha1", "Sha2", "Md5", "Crc32", "Murmur3Hash", "XxHash64", "HiveHash", "AesEncrypt"}
)

# Leaf relations that stand for a dataset.
RELATION_CLASSES = frozenset(
    {
        "LogicalRelation",
        "HiveTableRelation",
        "DataSourceV2Relation",
        "DataSourceV2ScanRelation",
        "StreamingDataSourceV2Relation",
        "StreamingExecutionRelation",
        # An RDD's rows: a dataset only as a streaming query's micro-batch (see micro_batches).
        "LogicalRDD",
    }
)

# Nodes whose "query" field is an inline plan (not a child) that produces the written rows.
INLINE_QUERY_COMMANDS = frozenset(
    {
        "CreateDataSourceTableAsSelectCommand",
        "SaveAsV1TableCommand",
        "CreateHiveTableAsSelectCommand",
        "OptimizedCreateHiveTableAsSelectCommand",
        "InsertIntoHiveDirCommand",
        "InsertIntoDataSourceDirCommand",
        "SaveIntoDataSourceCommand",
        "CreateViewCommand",
    }
)


def simple_name(class_name: str) -> str:
    """``org.apache.spark.sql.catalyst.plans.logical.Project`` -> ``Project`` (``Foo$`` -> ``Foo``)."""
    return class_name.rsplit(".", 1)[-1].rstrip("$")


@dataclass(frozen=True, order=True)
class Transformation:
    """One entry of an input field's ``transformations`` list in the column lineage facet."""

    type: str
    subtype: str
    masking: bool = False

    def sort_key(self) -> tuple[int, int, bool]:
        if self.type == DIRECT:
            return (0, _DIRECT_RANK.get(self.subtype, 9), self.masking)
        return (1, _INDIRECT_ORDER.get(self.subtype, 9), self.masking)

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, "subtype": self.subtype, "masking": self.masking}


_IDENTITY = Transformation(DIRECT, IDENTITY)


def _compose(outer: Transformation, inner: Transformation) -> Transformation:
    """The transformation from a source column to an output through an intermediate column."""
    if outer.type == INDIRECT:
        return outer
    if inner.type == INDIRECT:
        return inner
    subtype = (
        outer.subtype if _DIRECT_RANK[outer.subtype] >= _DIRECT_RANK[inner.subtype] else inner.subtype
    )
    return Transformation(DIRECT, subtype, outer.masking or inner.masking)


def _upgrade(ctx: Transformation, subtype: str, masking: bool = False) -> Transformation:
    if ctx.type == INDIRECT:
        return ctx
    if _DIRECT_RANK[subtype] > _DIRECT_RANK[ctx.subtype]:
        return Transformation(DIRECT, subtype, ctx.masking or masking)
    if masking and not ctx.masking:
        return Transformation(DIRECT, ctx.subtype, True)
    return ctx


# --------------------------------------------------------------------------- tree decoding


@dataclass
class Node:
    """A decoded plan node or expression: its class, its own JSON fields and its children."""

    cls: str
    data: dict[str, Any]
    children: list[Node] = field(default_factory=list)

    @property
    def name(self) -> str:
        return simple_name(self.cls)

    def child_at(self, key: str) -> Node | None:
        pos = self.data.get(key)
        if isinstance(pos, int) and 0 <= pos < len(self.children):
            return self.children[pos]
        return None

    def children_at(self, key: str) -> list[Node]:
        pos = self.data.get(key)
        if isinstance(pos, int):
            pos = [pos]
        if not isinstance(pos, list):
            return []
        return [self.children[p] for p in pos if isinstance(p, int) and 0 <= p < len(self.children)]

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            yield from child.walk()


def unflatten(flat: list[dict[str, Any]]) -> Node:
    """Rebuild the tree of a pre-order list whose items carry ``class`` and ``num-children``."""
    pos = 0

    def build() -> Node:
        nonlocal pos
        if pos >= len(flat):
            raise ValueError("truncated plan JSON")
        item = flat[pos]
        pos += 1
        node = Node(cls=str(item.get("class", "")), data=item)
        for _ in range(int(item.get("num-children", 0) or 0)):
            node.children.append(build())
        return node

    return build()


def parse_plan(plan_json: str | list[dict[str, Any]]) -> Node:
    """Decode the output of ``LogicalPlan.toJSON()`` into a tree."""
    flat = json.loads(plan_json) if isinstance(plan_json, str) else plan_json
    if not isinstance(flat, list) or not flat:
        raise ValueError("plan JSON must be a non-empty list")
    return unflatten(flat)


def _is_flat_tree(value: Any) -> TypeGuard[list[dict[str, Any]]]:
    return (
        isinstance(value, list)
        and bool(value)
        and isinstance(value[0], dict)
        and "class" in value[0]
        and "num-children" in value[0]
    )


def _is_expression_class(cls: str) -> bool:
    return ".expressions." in cls or cls.endswith("Expression")


def expressions(node: Node, key: str) -> list[Node]:
    """The expressions in field ``key``: a list of flattened expressions, or a single one."""
    value = node.data.get(key)
    if _is_flat_tree(value):
        return [unflatten(value)]
    if isinstance(value, list):
        return [unflatten(v) for v in value if _is_flat_tree(v)]
    return []


def inline_plan(node: Node, key: str) -> Node | None:
    """A plan inlined in field ``key`` (a CTAS query), if that field holds one."""
    value = node.data.get(key)
    if _is_flat_tree(value) and not _is_expression_class(str(value[0].get("class", ""))):
        return unflatten(value)
    return None


def command_query(node: Node) -> Node | None:
    """The plan whose rows a write command writes: its ``query`` child or inline ``query``."""
    child = node.child_at("query")
    if child is not None:
        return child
    return inline_plan(node, "query")


# --------------------------------------------------------------------------- attributes


@dataclass(frozen=True)
class Attribute:
    expr_id: int
    name: str
    data_type: Any = None


def expr_id(expr: Node) -> int | None:
    raw = expr.data.get("exprId")
    ident = raw.get("id") if isinstance(raw, dict) else None
    return ident if isinstance(ident, int) else None


def named_attribute(expr: Node) -> Attribute | None:
    """The attribute a named expression (AttributeReference, Alias) defines."""
    eid = expr_id(expr)
    if eid is None:
        return None
    data_type = expr.data.get("dataType")
    if data_type is None and expr.name == "Alias" and expr.children:
        data_type = _expression_type(expr.children[0])
    return Attribute(eid, str(expr.data.get("name", "")), data_type)


def _expression_type(expr: Node) -> Any:
    if "dataType" in expr.data:
        return expr.data["dataType"]
    return None


def attributes(node: Node, key: str) -> list[Attribute]:
    return [a for a in (named_attribute(e) for e in expressions(node, key)) if a is not None]


def _first_child_output(node: Node) -> list[Attribute]:
    return output(node.children[0]) if node.children else []


def _join_output(node: Node) -> list[Attribute]:
    left = _first_child_output(node)
    join_type = simple_name(str((node.data.get("joinType") or {}).get("object", "")))
    if join_type in ("LeftSemi", "LeftAnti") or join_type.startswith("ExistenceJoin"):
        return left
    right = output(node.children[1]) if len(node.children) > 1 else []
    return left + right


def _generate_output(node: Node) -> list[Attribute]:
    child_out = _first_child_output(node)
    unrequired = node.data.get("unrequiredChildIndex") or []
    if isinstance(unrequired, list):
        child_out = [a for i, a in enumerate(child_out) if i not in unrequired]
    return child_out + attributes(node, "generatorOutput")


_OUTPUT_RULES: dict[str, Callable[[Node], list[Attribute]]] = {
    "Project": lambda n: attributes(n, "projectList"),
    "Aggregate": lambda n: attributes(n, "aggregateExpressions"),
    "Window": lambda n: _first_child_output(n) + attributes(n, "windowExpressions"),
    "Join": _join_output,
    "Union": _first_child_output,
    "Intersect": _first_child_output,
    "Except": _first_child_output,
    "Generate": _generate_output,
    "HiveTableRelation": lambda n: attributes(n, "dataCols") + attributes(n, "partitionCols"),
}


def output(node: Node) -> list[Attribute]:
    """The output attributes of a plan node, as Spark's ``LogicalPlan.output`` computes them."""
    rule = _OUTPUT_RULES.get(node.name)
    if rule is not None:
        return rule(node)
    if "output" in node.data:
        return attributes(node, "output")
    return _first_child_output(node)


def parse_column_names(raw: Any) -> list[str] | None:
    """``outputColumnNames`` is serialized as ``"[a, b, c]"``; also accept a real list."""
    if isinstance(raw, list):
        return [str(x) for x in raw]
    if isinstance(raw, str) and raw.startswith("[") and raw.endswith("]"):
        body = raw[1:-1]
        return [] if not body else [part.strip() for part in body.split(", ")]
    return None


# --------------------------------------------------------------------------- relations


@dataclass
class Relation:
    """A leaf relation of the plan, as found in the JSON."""

    node: Node
    attributes: list[Attribute]
    # (catalog, database, table) when the JSON names a catalog table.
    table: tuple[str | None, str | None, str] | None
    in_subquery: bool = False

    @property
    def key(self) -> int | None:
        """The id of the first output attribute: matches the JVM leaf that produced it."""
        return self.attributes[0].expr_id if self.attributes else None


def table_identifier(catalog_table: Any) -> tuple[str | None, str | None, str] | None:
    """(catalog, database, table) of a serialized ``CatalogTable``."""
    if not isinstance(catalog_table, dict):
        return None
    ident = catalog_table.get("identifier")
    if not isinstance(ident, dict) or not ident.get("table"):
        return None
    return (ident.get("catalog"), ident.get("database"), str(ident["table"]))


def _relation_table(node: Node) -> tuple[str | None, str | None, str] | None:
    for key in ("catalogTable", "tableMeta"):
        value = node.data.get(key)
        if isinstance(value, list) and value:  # Option serialized as a one-item list
            value = value[0]
        ident = table_identifier(value)
        if ident is not None:
            return ident
    return None


def _subquery_plans(expr: Node) -> Iterator[Node]:
    for e in expr.walk():
        plan = inline_plan(e, "plan")
        if plan is not None:
            yield plan


def _plan_expressions(node: Node) -> Iterator[Node]:
    for key, value in node.data.items():
        if key in ("class", "num-children"):
            continue
        if _is_flat_tree(value) and _is_expression_class(str(value[0].get("class", ""))):
            yield unflatten(value)
        elif isinstance(value, list) and value and _is_flat_tree(value[0]):
            for v in value:
                if _is_flat_tree(v) and _is_expression_class(str(v[0].get("class", ""))):
                    yield unflatten(v)


def subquery_holders(plan: Node) -> list[tuple[int, ...]]:
    """Child-index paths (from ``plan``) of the nodes whose expressions hold subquery plans."""
    found: list[tuple[int, ...]] = []

    def visit(node: Node, path: tuple[int, ...]) -> None:
        if any(True for expr in _plan_expressions(node) for _ in _subquery_plans(expr)):
            found.append(path)
        for i, child in enumerate(node.children):
            visit(child, (*path, i))

    visit(plan, ())
    return found


def relations(plan: Node, in_subquery: bool = False) -> list[Relation]:
    """Leaf relations in pre-order, including those of inline queries and subquery plans."""
    found: list[Relation] = []

    def visit(node: Node, sub: bool) -> None:
        if node.name in RELATION_CLASSES:
            found.append(Relation(node, output(node), _relation_table(node), sub))
        inner = inline_plan(node, "query")
        if inner is not None:
            visit(inner, sub)
        for expr in _plan_expressions(node):
            for sub_plan in _subquery_plans(expr):
                visit(sub_plan, True)
        for child in node.children:
            visit(child, sub)

    visit(plan, in_subquery)
    return found


# --------------------------------------------------------------------------- lineage graph


Dep = tuple[int, Transformation]
FieldKey = tuple[Any, str]  # (dataset key, column name)


class LineageGraph:
    """Attribute-id dependency graph of one plan."""

    def __init__(self) -> None:
        self.edges: dict[int, list[Dep]] = {}
        self.leaves: dict[int, list[FieldKey]] = {}
        # (attribute id, subtype) pairs that affect every output column.
        self.global_indirect: list[tuple[int, str]] = []
        self._memo: dict[int, dict[FieldKey, set[Transformation]]] = {}

    # ---- building

    @classmethod
    def build(cls, plan: Node, dataset_of: Callable[[Relation], Any]) -> LineageGraph:
        """Build the graph; ``dataset_of`` maps a relation to a list of dataset keys (or None): each
        of the relation's columns is the column of the same name of each of them. A relation can
        stand for several datasets (a read of several paths). Where a relation's columns are not
        its datasets' (a query read over JDBC), ``dataset_of`` gives instead a function from a
        column's name to the dataset columns it copies.
        """
        graph = cls()
        for rel in relations(plan):
            keys = dataset_of(rel)
            if not keys:
                continue
            for attr in rel.attributes:
                copied = keys(attr.name) if callable(keys) else [(key, attr.name) for key in keys]
                bucket = graph.leaves.setdefault(attr.expr_id, [])
                bucket.extend(field for field in copied if field not in bucket)
        graph._visit(plan)
        return graph

    def _add_edges(self, target: int, deps: Iterable[Dep]) -> None:
        bucket = self.edges.setdefault(target, [])
        for dep in deps:
            if dep[0] != target and dep not in bucket:
                bucket.append(dep)

    def _add_global(self, deps: Iterable[Dep]) -> None:
        for eid, tr in deps:
            subtype = tr.subtype if tr.type == INDIRECT else None
            if subtype is None:
                continue
            item = (eid, subtype)
            if item not in self.global_indirect:
                self.global_indirect.append(item)

    def _named_list(self, node: Node, key: str) -> None:
        for expr in expressions(node, key):
            if expr.name == "Alias":
                eid = expr_id(expr)
                if eid is not None and expr.children:
                    self._add_edges(eid, self._collect(expr.children[0], _IDENTITY))

    def _visit(self, node: Node) -> None:
        rule = self._RULES.get(node.name)
        if rule is not None:
            rule(self, node)
        inner = inline_plan(node, "query")
        if inner is not None:
            self._visit(inner)
        for child in node.children:
            self._visit(child)

    def _indirect(self, node: Node, key: str, subtype: str) -> None:
        for expr in expressions(node, key):
            self._add_global(self._collect(expr, Transformation(INDIRECT, subtype)))

    def _aggregate(self, node: Node) -> None:
        self._named_list(node, "aggregateExpressions")
        self._indirect(node, "groupingExpressions", GROUP_BY)

    def _union(self, node: Node) -> None:
        outs = [output(child) for child in node.children]
        if not outs:
            return
        first = outs[0]
        for other in outs[1:]:
            for i, attr in enumerate(other[: len(first)]):
                self._add_edges(first[i].expr_id, [(attr.expr_id, _IDENTITY)])

    def _expand(self, node: Node) -> None:
        outs = attributes(node, "output")
        for projection in node.data.get("projections") or []:
            if not isinstance(projection, list):
                continue
            for i, flat in enumerate(projection[: len(outs)]):
                if _is_flat_tree(flat):
                    self._add_edges(outs[i].expr_id, self._collect(unflatten(flat), _IDENTITY))

    def _generate(self, node: Node) -> None:
        deps: list[Dep] = []
        for expr in expressions(node, "generator"):
            deps.extend(self._collect(expr, Transformation(DIRECT, TRANSFORMATION)))
        for attr in attributes(node, "generatorOutput"):
            self._add_edges(attr.expr_id, deps)

    _RULES: ClassVar[dict[str, Callable[[LineageGraph, Node], None]]] = {
        "Project": lambda g, n: g._named_list(n, "projectList"),
        "Aggregate": _aggregate,
        "Window": lambda g, n: g._named_list(n, "windowExpressions"),
        "Filter": lambda g, n: g._indirect(n, "condition", FILTER),
        "Join": lambda g, n: g._indirect(n, "condition", JOIN),
        "Sort": lambda g, n: g._indirect(n, "order", SORT),
        "Union": _union,
        "Expand": _expand,
        "Generate": _generate,
    }

    def _collect(self, expr: Node, ctx: Transformation) -> list[Dep]:
        """Attribute ids an expression reads, with how each reaches the expression's value."""
        out: list[Dep] = []
        self._collect_into(expr, ctx, out)
        return out

    def _collect_into(self, expr: Node, ctx: Transformation, out: list[Dep]) -> None:  # noqa: C901
        name = expr.name
        if name == "AttributeReference":
            eid = expr_id(expr)
            if eid is not None:
                out.append((eid, ctx))
            return
        if name in ("Alias", "OuterReference"):
            for child in expr.children:
                self._collect_into(child, ctx, out)
            return
        if name == "AggregateExpression":
            for child in expr.children:
                self._collect_into(child, _upgrade(ctx, AGGREGATION), out)
            return
        if name == "WindowExpression":
            function = expr.child_at("windowFunction")
            spec = expr.child_at("windowSpec")
            if function is not None:
                kind = AGGREGATION if function.name == "AggregateExpression" else TRANSFORMATION
                self._collect_into(function, _upgrade(ctx, kind), out)
            if spec is not None:
                window = ctx if ctx.type == INDIRECT else Transformation(INDIRECT, WINDOW)
                for part in spec.children_at("partitionSpec") + spec.children_at("orderSpec"):
                    self._collect_into(part, window, out)
            return
        if name == "CaseWhen":
            branches = expr.data.get("branches")
            n_branches = len(branches) if isinstance(branches, list) else len(expr.children) // 2
            cond = ctx if ctx.type == INDIRECT else Transformation(INDIRECT, CONDITIONAL)
            for i, child in enumerate(expr.children):
                if i < 2 * n_branches and i % 2 == 0:
                    self._collect_into(child, cond, out)
                else:
                    self._collect_into(child, _upgrade(ctx, TRANSFORMATION), out)
            return
        if name == "If":
            cond = ctx if ctx.type == INDIRECT else Transformation(INDIRECT, CONDITIONAL)
            for i, child in enumerate(expr.children):
                self._collect_into(child, cond if i == 0 else _upgrade(ctx, TRANSFORMATION), out)
            return
        if name in ("ScalarSubquery", "Exists", "InSubquery", "ListQuery", "LateralSubquery"):
            plan = inline_plan(expr, "plan")
            if plan is not None:
                self._visit(plan)
                sub_ctx = _upgrade(ctx, TRANSFORMATION)
                for attr in output(plan):
                    out.append((attr.expr_id, sub_ctx))
            for child in expr.children:
                self._collect_into(child, _upgrade(ctx, TRANSFORMATION), out)
            return
        if name == "SortOrder":
            for child in expr.children:
                self._collect_into(child, ctx, out)
            return
        masking = name in MASKING_FUNCTIONS
        for child in expr.children:
            self._collect_into(child, _upgrade(ctx, TRANSFORMATION, masking), out)

    # ---- resolving

    def resolve(self, eid: int) -> dict[FieldKey, set[Transformation]]:
        """Dataset columns an attribute derives from, each with the transformations on the way."""
        return self._resolve(eid, frozenset())

    def _resolve(self, eid: int, visiting: frozenset[int]) -> dict[FieldKey, set[Transformation]]:
        if eid in self._memo:
            return self._memo[eid]
        if eid in visiting:
            return {}
        visiting = visiting | {eid}
        result: dict[FieldKey, set[Transformation]] = {}
        for leaf in self.leaves.get(eid, ()):
            result.setdefault(leaf, set()).add(_IDENTITY)
        for src, tr in self.edges.get(eid, ()):
            for key, trs in self._resolve(src, visiting).items():
                bucket = result.setdefault(key, set())
                for inner in trs:
                    bucket.add(_compose(tr, inner))
        self._memo[eid] = result
        return result

    def indirect_fields(self) -> dict[FieldKey, set[Transformation]]:
        """Dataset columns that affect every output column (joins, filters, grouping, sorting)."""
        result: dict[FieldKey, set[Transformation]] = {}
        for eid, subtype in self.global_indirect:
            for key in self.resolve(eid):
                result.setdefault(key, set()).add(Transformation(INDIRECT, subtype))
        return result


@dataclass
class InputField:
    dataset: Any
    field: str
    transformations: list[Transformation]


def column_lineage(graph: LineageGraph, outputs: list[tuple[str, int]]) -> dict[str, list[InputField]]:
    """Lineage of each written column: ``outputs`` pairs a column name with the query attribute id.

    Columns that depend on no dataset column (literals, a count(*) without grouping) are left out.
    """
    indirect = graph.indirect_fields()
    result: dict[str, list[InputField]] = {}
    for column, eid in outputs:
        merged: dict[FieldKey, set[Transformation]] = {}
        for key, trs in graph.resolve(eid).items():
            merged.setdefault(key, set()).update(trs)
        for key, trs in indirect.items():
            merged.setdefault(key, set()).update(trs)
        fields = [
            InputField(key[0], key[1], sorted(trs, key=Transformation.sort_key))
            for key, trs in sorted(merged.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))
        ]
        if fields:
            result[column] = fields
    return result


# --------------------------------------------------------------------------- types


def type_name(data_type: Any) -> str:
    """OpenLineage schema facet type of a Spark JSON data type (``integer``, ``struct``, ...)."""
    if isinstance(data_type, str):
        return data_type
    if isinstance(data_type, dict):
        return str(data_type.get("type", "unknown"))
    return "unknown"


def schema_fields(data_type: Any) -> list[dict[str, Any]] | None:
    """Nested schema facet fields of a struct type (also through arrays and maps of structs)."""
    if not isinstance(data_type, dict):
        return None
    kind = data_type.get("type")
    if kind == "struct":
        return [schema_field(f.get("name", ""), f.get("type")) for f in data_type.get("fields") or []]
    if kind == "array":
        return schema_fields(data_type.get("elementType"))
    if kind == "map":
        return schema_fields(data_type.get("valueType"))
    return None


def schema_field(name: str, data_type: Any) -> dict[str, Any]:
    result: dict[str, Any] = {"name": name, "type": type_name(data_type)}
    nested = schema_fields(data_type)
    if nested:
        result["fields"] = nested
    return result
