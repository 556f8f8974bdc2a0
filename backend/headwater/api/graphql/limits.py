"""Limits on what one operation may ask: depth, aliases, tokens and an estimated cost.

The cost counts the objects an operation may resolve: a list multiplies what is under it by its
page size (``first`` or ``limit``, else a guess of 10), so nested pages are expensive and a wide
but flat query is cheap. A lineage answer's lists count as many objects as its node cap
(``maxNodes``, else the server's HEADWATER_MAX_LINEAGE_NODES): that is what a deep walk fills.
Scalars are free: they come with their object.
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
from graphql.validation import ASTValidationRule
from strawberry.extensions import (
    AddValidationRules,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    QueryDepthLimiter,
)
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

    def __init__(self, cost: int, maximum: int) -> None:
        super().__init__(
            f"The operation may resolve about {cost} objects; the maximum is {maximum}. "
            "Ask for smaller pages, fewer nested lists or a smaller lineage maxNodes."
        )


class _CodedContext:
    """A validation context whose reported errors get ``extensions.code``."""

    def __init__(self, context: ValidationContext, code: str) -> None:
        self._context = context
        self._code = code

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)

    def report_error(self, error: GraphQLError) -> None:
        error.extensions = {**(error.extensions or {}), "code": self._code}
        self._context.report_error(error)


def _coded(rule: type[ASTValidationRule], code: str) -> type[ASTValidationRule]:
    """``rule`` (one that checks the whole document when built) reporting with ``code``."""

    class Coded(ValidationRule):
        def __init__(self, context: ValidationContext) -> None:
            rule(_CodedContext(context, code))  # type: ignore[arg-type]
            super().__init__(context)

    return Coded


def _page_size(node: FieldNode, field: Any, variables: dict[str, Any], node_cap: int) -> int | None:
    for arg in node.arguments or ():
        if arg.name.value in _PAGE_ARGS or arg.name.value == _CAP_ARG:
            if isinstance(arg.value, IntValueNode):
                return int(arg.value.value)
            if isinstance(arg.value, VariableNode):
                value = variables.get(arg.value.name.value)
                if isinstance(value, int):
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
    multiplier: int = 1,
    paged: bool = False,
    node_cap: int = DEFAULT_MAX_NODES,
) -> int:
    """The estimated number of objects resolved under ``selection_set`` (scalars are free).

    ``paged`` says the parent field took a page size, so the list under it (a connection's
    ``nodes``, a lineage graph's ``nodes`` and ``edges``) is that page and is not multiplied again.
    ``node_cap`` is the server's cap on lineage answers.
    """
    total = 0
    for sel in selection_set.selections:
        if isinstance(sel, FieldNode):
            fields = getattr(parent, "fields", None) or {}
            field = fields.get(sel.name.value)
            if field is None or sel.selection_set is None:
                continue  # __typename, introspection and scalars
            output = field.type.of_type if isinstance(field.type, GraphQLNonNull) else field.type
            page = _page_size(sel, field, variables, node_cap)
            if page is not None and sel.name.value in _CAPPED_FIELDS:
                page = min(page, node_cap)
            factor = _factor(page, isinstance(output, GraphQLList), paged)
            if isinstance(output, GraphQLList):
                total += multiplier * max(factor, 1)
            elif page is None:
                total += multiplier  # a paged object (a connection, a lineage answer) is its items
            total += operation_cost(
                schema,
                sel.selection_set,
                get_named_type(field.type),
                fragments,
                variables,
                multiplier * max(factor, 1),
                paged=page is not None and not isinstance(output, GraphQLList),
                node_cap=node_cap,
            )
        elif isinstance(sel, InlineFragmentNode):
            target = schema.get_type(sel.type_condition.name.value) if sel.type_condition else parent
            total += operation_cost(
                schema, sel.selection_set, target, fragments, variables, multiplier, paged, node_cap
            )
        elif isinstance(sel, FragmentSpreadNode) and sel.name.value in fragments:
            fragment = fragments[sel.name.value]
            target = schema.get_type(fragment.type_condition.name.value)
            total += operation_cost(
                schema, fragment.selection_set, target, fragments, variables, multiplier, paged, node_cap
            )
    return total


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
                    raise QueryTooComplexError(cost, self.max_cost)
        yield


def limit_extensions() -> list[Any]:
    """Factories of the schema extensions that bound an operation (one instance per operation)."""
    rules = [
        *(_coded(r, "query_too_deep") for r in QueryDepthLimiter(max_depth=MAX_DEPTH).validation_rules),
        *(_coded(r, "too_many_aliases") for r in MaxAliasesLimiter(MAX_ALIASES).validation_rules),
    ]
    return [
        lambda: MaxTokensLimiter(MAX_TOKENS),
        lambda: AddValidationRules(rules),
        CostLimiter,
    ]
