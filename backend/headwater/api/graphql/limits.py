"""Limits on what one operation may ask: depth, aliases, tokens and an estimated cost.

The cost counts the objects an operation may resolve: a list multiplies what is under it by its
page size (``first`` or ``limit``, else a guess of 10), so nested pages are expensive and a wide
but flat query is cheap. A lineage answer's lists count as many objects as its node cap
(``maxNodes``, else the server's HEADWATER_MAX_LINEAGE_NODES): that is what a deep walk fills.
Scalars are free: they come with their object.

Every walk over an operation expands its fragment spreads, and a fragment may spread another
several times: thirty fragments each spreading the next twice are a document of under 1 KB that
expands to a billion fields. So each walk here computes a fragment once and reuses its figure
wherever it is spread (depth, aliases and cost all compose), and stays linear in the document.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLList,
    GraphQLNonNull,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationContext,
    ValidationRule,
    VariableNode,
    get_named_type,
)
from strawberry.extensions import AddValidationRules, MaxTokensLimiter
from strawberry.extensions.base_extension import SchemaExtension

from headwater.errors import InvalidRequestError
from headwater.lineage.graph import DEFAULT_MAX_NODES

MAX_DEPTH = 15
MAX_ALIASES = 30
MAX_TOKENS = 5_000
MAX_COST = 20_000
LIST_GUESS = 10
_PAGE_ARGS = ("first", "limit")
_CAP_ARG = "maxNodes"
_CAPPED_FIELDS = ("lineage", "columnLineage")  # the server cuts their maxNodes to its own cap


class QueryTooComplexError(InvalidRequestError):
    code = "query_too_complex"

    def __init__(self, cost: str, maximum: int) -> None:
        super().__init__(
            f"The operation may resolve about {cost} objects; the maximum is {maximum}. "
            "Ask for smaller pages, fewer nested lists or a smaller lineage maxNodes."
        )


# Counts past this are reported as "at least" this: a document's fragments can make them
# astronomically large, and the figure is only there to say by how much a limit was passed.
_SATURATED = 1_000_000


def _figure(count: int) -> str:
    return f"at least {_SATURATED}" if count >= _SATURATED else str(count)


def _spreads(selection_set: SelectionSetNode | None) -> Iterator[str]:
    """The names of the fragments spread in a selection set, at any depth (not through them)."""
    for sel in selection_set.selections if selection_set else ():
        if isinstance(sel, FragmentSpreadNode):
            yield sel.name.value
        else:
            yield from _spreads(getattr(sel, "selection_set", None))


def _fragments_in_order(fragments: dict[str, FragmentDefinitionNode]) -> list[str]:
    """Every fragment, each after the fragments it spreads (a cycle, which validation refuses, is
    cut anywhere). Iterative: a chain of hundreds of fragments spreading the next is a short
    document, and must not exhaust Python's stack."""
    order: list[str] = []
    placed: set[str] = set()
    for root in fragments:
        if root in placed:
            continue
        placed.add(root)
        stack = [(root, _spreads(fragments[root].selection_set))]
        while stack:
            name, spreads = stack[-1]
            spread = next(spreads, None)
            if spread is None:
                order.append(name)
                stack.pop()
            elif spread in fragments and spread not in placed:
                placed.add(spread)
                stack.append((spread, _spreads(fragments[spread].selection_set)))
    return order


class _Shape:
    """The depth and aliases of each operation's selections with its fragments expanded, each
    fragment measured once (see the module)."""

    def __init__(self, fragments: dict[str, FragmentDefinitionNode]) -> None:
        # fragment name -> (depth, aliases), each measured after the fragments it spreads; one not
        # measured (unknown, or in a cycle) counts as empty
        self._measured: dict[str, tuple[int, int]] = {}
        for name in _fragments_in_order(fragments):
            self._measured[name] = self.measure(fragments[name].selection_set)

    def measure(self, selection_set: SelectionSetNode | None) -> tuple[int, int]:
        """(depth, aliases) of a selection set: depth counts nested fields that have selections
        (introspection fields are not counted, nor is what is under them)."""
        depth = aliases = 0
        for sel in selection_set.selections if selection_set else ():
            if isinstance(sel, FieldNode):
                aliases += sel.alias is not None
                if sel.selection_set is None or sel.name.value.startswith("__"):
                    continue
                below, below_aliases = self.measure(sel.selection_set)
                depth, aliases = max(depth, below + 1), aliases + below_aliases
            else:
                below, below_aliases = (
                    self.measure(sel.selection_set)
                    if isinstance(sel, InlineFragmentNode)
                    else self._measured.get(sel.name.value, (0, 0))  # type: ignore[attr-defined]
                )
                depth, aliases = max(depth, below), aliases + below_aliases
        return depth, min(aliases, _SATURATED)


class OperationShapeLimiter(ValidationRule):
    """Refuse operations nested deeper than ``MAX_DEPTH`` fields (code ``query_too_deep``) and
    documents with more than ``MAX_ALIASES`` aliases in all (``too_many_aliases``), fragments
    expanded."""

    def __init__(self, context: ValidationContext) -> None:
        super().__init__(context)
        definitions = context.document.definitions
        shape = _Shape({d.name.value: d for d in definitions if isinstance(d, FragmentDefinitionNode)})
        total_aliases = 0
        for op in definitions:
            if not isinstance(op, OperationDefinitionNode):
                continue
            depth, aliases = shape.measure(op.selection_set)
            total_aliases += aliases
            if depth > MAX_DEPTH:
                name = op.name.value if op.name else "anonymous"
                context.report_error(
                    GraphQLError(
                        f"'{name}' exceeds maximum operation depth of {MAX_DEPTH}",
                        op,
                        extensions={"code": "query_too_deep"},
                    )
                )
        if total_aliases > MAX_ALIASES:
            context.report_error(
                GraphQLError(
                    f"{_figure(total_aliases)} aliases found. Allowed: {MAX_ALIASES}",
                    extensions={"code": "too_many_aliases"},
                )
            )


# GraphQL's Int: a variable outside it is refused when the operation's variables are coerced,
# after this estimate, with GraphQL's own message; until then it is no page size.
_INT_RANGE = range(-(2**31), 2**31)


def _page_size(node: FieldNode, field: Any, variables: dict[str, Any], node_cap: int) -> int | None:
    for arg in node.arguments or ():
        if arg.name.value in _PAGE_ARGS or arg.name.value == _CAP_ARG:
            if isinstance(arg.value, IntValueNode):
                return int(arg.value.value)
            if isinstance(arg.value, VariableNode):
                value = variables.get(arg.value.name.value)
                if isinstance(value, int) and not isinstance(value, bool) and value in _INT_RANGE:
                    return value
    for name in _PAGE_ARGS:
        if name in field.args and isinstance(field.args[name].default_value, int):
            return int(field.args[name].default_value)
    if _CAP_ARG in field.args:
        return node_cap  # the server's cap; a larger maxNodes is cut to it
    return None


def _factor(page: int | None, is_list: bool, paged: bool) -> int:
    """How many times a field's selection is resolved per parent object."""
    if page is not None:
        return page
    return LIST_GUESS if is_list and not paged else 1


def operation_cost(
    schema: GraphQLSchema,
    selection_set: SelectionSetNode,
    parent: Any,
    fragments: dict[str, FragmentDefinitionNode],
    variables: dict[str, Any],
    node_cap: int = DEFAULT_MAX_NODES,
) -> int:
    """The estimated number of objects resolved under an operation's ``selection_set`` (scalars are
    free); ``node_cap`` is the server's cap on lineage answers."""
    return _Cost(schema, fragments, variables, node_cap).of(selection_set, parent, paged=False)


class _Cost:
    """The cost walk of ``operation_cost``. A selection's cost is proportional to how many times
    it is resolved, so each fragment is costed once for one parent object (per ``paged``) and
    multiplied wherever it is spread."""

    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: dict[str, FragmentDefinitionNode],
        variables: dict[str, Any],
        node_cap: int,
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self.node_cap = node_cap
        # (fragment name, paged) -> its cost for one parent object, each costed after the
        # fragments it spreads; one not costed (unknown, or in a cycle) costs nothing
        self._fragment_costs: dict[tuple[str, bool], int] = {}
        for name in _fragments_in_order(fragments):
            fragment = fragments[name]
            target = schema.get_type(fragment.type_condition.name.value)
            for paged in (False, True):
                self._fragment_costs[(name, paged)] = self.of(fragment.selection_set, target, paged)

    def of(self, selection_set: SelectionSetNode, parent: Any, paged: bool) -> int:
        """The objects resolved under ``selection_set`` for one ``parent`` object.

        ``paged`` says the parent field took a page size, so the list under it (a connection's
        ``nodes``, a lineage graph's ``nodes`` and ``edges``) is that page and is not multiplied
        again.
        """
        total = 0
        for sel in selection_set.selections:
            if isinstance(sel, FieldNode):
                total += self._field(sel, parent, paged)
            elif isinstance(sel, InlineFragmentNode):
                target = (
                    self.schema.get_type(sel.type_condition.name.value) if sel.type_condition else parent
                )
                total += self.of(sel.selection_set, target, paged)
            elif isinstance(sel, FragmentSpreadNode):
                total += self._fragment_costs.get((sel.name.value, paged), 0)
        return total

    def _field(self, sel: FieldNode, parent: Any, paged: bool) -> int:
        fields = getattr(parent, "fields", None) or {}
        field = fields.get(sel.name.value)
        if field is None or sel.selection_set is None:
            return 0  # __typename, introspection and scalars
        output = field.type.of_type if isinstance(field.type, GraphQLNonNull) else field.type
        page = _page_size(sel, field, self.variables, self.node_cap)
        if page is not None and sel.name.value in _CAPPED_FIELDS:
            page = min(page, self.node_cap)
        times = max(_factor(page, isinstance(output, GraphQLList), paged), 1)
        # A list is its items; a paged object (a connection, a lineage answer) is its items too.
        own = times if isinstance(output, GraphQLList) else int(page is None)
        below = self.of(
            sel.selection_set,
            get_named_type(field.type),
            paged=page is not None and not isinstance(output, GraphQLList),
        )
        return own + times * below


class CostLimiter(SchemaExtension):
    """Refuse an operation whose estimated cost is above ``max_cost`` (needs the variables)."""

    def __init__(self, max_cost: int = MAX_COST) -> None:
        self.max_cost = max_cost

    def on_execute(self) -> Iterator[None]:
        ctx = self.execution_context
        document = ctx.graphql_document
        if document is not None:
            schema = ctx.schema._schema
            fragments = {
                d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
            }
            settings = getattr(ctx.context, "settings", None)
            node_cap = settings.max_lineage_nodes if settings is not None else DEFAULT_MAX_NODES
            for op in document.definitions:
                if not isinstance(op, OperationDefinitionNode):
                    continue
                if ctx.operation_name and op.name and op.name.value != ctx.operation_name:
                    continue
                root = schema.get_root_type(op.operation)
                cost = operation_cost(
                    schema, op.selection_set, root, fragments, ctx.variables or {}, node_cap=node_cap
                )
                if cost > self.max_cost:
                    raise QueryTooComplexError(_figure(cost), self.max_cost)
        yield


def limit_extensions() -> list[Any]:
    """Factories of the schema extensions that bound an operation (one instance per operation)."""
    return [
        lambda: MaxTokensLimiter(MAX_TOKENS),
        lambda: AddValidationRules([OperationShapeLimiter]),
        CostLimiter,
    ]
