"""Limits on what one operation may ask: its fields, number literals, depth, aliases, tokens and
an estimated cost.

The cost counts the objects an operation may resolve: a list multiplies what is under it by its
page size (``first`` or ``limit``, else a guess of 10), so nested pages are expensive and a wide
but flat query is cheap. A page (a connection, a lineage answer, search results) costs at least
what the server reads for it, whatever is asked of it: its page size, a lineage answer its node cap
(``maxNodes``, else the server's HEADWATER_MAX_LINEAGE_NODES), which its lists also count as. A
count, a search or a find reads every row that matches: each costs ``SCAN_COST``. Introspection is
counted as any other field. Scalars are free: they come with their object.

A list without a page size (a dataset's fields, the namespaces) is guessed at 10 items, but may hold
100,000. So the estimate is settled as the operation runs: each such list is charged for every item
past the guess and credited for every one short of it, as its items are completed, and the
operation is refused once its cost passes the budget (``BudgetedLists``).

Every walk over an operation expands its fragment spreads, and a fragment may spread another
several times: thirty fragments each spreading the next twice are a document of under 1 KB that
expands to a billion fields. So each walk here computes a fragment once and reuses its figure
wherever it is spread (depth, aliases and cost all compose), and stays linear in the document.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cache
from typing import Any

from graphql import (
    ExecutionResult,
    FieldNode,
    FloatValueNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLUnionType,
    InlineFragmentNode,
    IntValueNode,
    ListValueNode,
    OperationDefinitionNode,
    SchemaMetaFieldDef,
    SelectionSetNode,
    TypeMetaFieldDef,
    ValidationContext,
    ValidationRule,
    VariableNode,
    Visitor,
    get_named_type,
    value_from_ast_untyped,
    visit,
)
from graphql.execution import Executor
from graphql.pyutils import AwaitableOrValue, is_iterable
from strawberry.extensions import AddValidationRules, MaxTokensLimiter
from strawberry.extensions.base_extension import SchemaExtension

from headwater.errors import InvalidRequestError
from headwater.lineage.graph import DEFAULT_MAX_NODES

MAX_DEPTH = 15
MAX_ALIASES = 30
MAX_TOKENS = 5_000
MAX_COST = 20_000
# Fields of a document, counted as written (not expanded). Validation compares the fields of a
# selection that share a name two by two, on the event loop: 700 `jobs { nodes { id } }` held it
# for 1.2 s, 100 of them (300 fields) for up to 0.15 s. The console's largest query has 50 fields,
# GraphiQL's schema query 72, and none of the tests' more than 80.
MAX_FIELDS = 300
# Characters of a number literal. No argument takes one longer than a 64-bit float printed in full,
# and graphql-core reads an integer of more than 4,300 digits as an error of its own.
MAX_NUMBER_CHARS = 100
LIST_GUESS = 10
# What a count, a search or a find costs: it reads every row that matches, however few it answers,
# so one operation may make at most 25 of them.
SCAN_COST = MAX_COST // 25
# The least a lineage walk costs, however small its node cap: its roots are looked up and a walk
# begun (thirty walks of one node take 0.13 s).
MIN_WALK_COST = 100
_PAGE_ARGS = ("first", "limit")
_CAP_ARG = "maxNodes"
_CAPPED_FIELDS = ("lineage", "columnLineage")  # the server cuts their maxNodes to its own cap
_SCANS = ("search", "find", "totalCount")
# Fields that read the history of each node id they are given, whatever their page size.
_NODE_LIST_ARGS = {"suspectChanges": "nodeIds"}


class QueryTooComplexError(InvalidRequestError):
    code = "query_too_complex"

    def __init__(self, cost: str, maximum: int, cause: str = "") -> None:
        super().__init__(
            f"The operation may resolve about {cost} objects{cause}; the maximum is {maximum}. "
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


class _DocumentSize(Visitor):
    """How many fields a document holds, as written, and its number literals longer than any
    argument takes, by line."""

    def __init__(self) -> None:
        super().__init__()
        self.fields = 0
        self.long_numbers: list[tuple[int, int]] = []

    def enter_field(self, *_: Any) -> None:
        self.fields += 1

    def enter_int_value(self, node: IntValueNode, *_: Any) -> None:
        self._number(node)

    def enter_float_value(self, node: FloatValueNode, *_: Any) -> None:
        self._number(node)

    def _number(self, node: IntValueNode | FloatValueNode) -> None:
        if len(node.value) > MAX_NUMBER_CHARS:
            self.long_numbers.append((node.loc.start_token.line if node.loc else 0, len(node.value)))


class DocumentLimiter(SchemaExtension):
    """Refuse a document of more than ``MAX_FIELDS`` fields (``too_many_fields``), or with a number
    literal of more than ``MAX_NUMBER_CHARS`` characters, instead of validating it."""

    def on_validate(self) -> Iterator[None]:
        ctx = self.execution_context
        if ctx.graphql_document is not None and ctx.pre_execution_errors is None:
            size = _DocumentSize()
            visit(ctx.graphql_document, size)
            # Reported as validation reports its errors (over HTTP and websockets alike), which
            # also skips validation.
            if size.fields > MAX_FIELDS:
                ctx.pre_execution_errors = [
                    GraphQLError(
                        f"The document holds {size.fields:,} fields; the maximum is {MAX_FIELDS}. "
                        "Ask for fewer, or send them in several operations.",
                        extensions={"code": "too_many_fields"},
                    )
                ]
            elif size.long_numbers:
                line, length = size.long_numbers[0]
                ctx.pre_execution_errors = [
                    GraphQLError(
                        f"The number on line {line} is {length:,} characters long; no argument "
                        f"takes one of more than {MAX_NUMBER_CHARS}."
                    )
                ]
        yield


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


def _list_length(node: FieldNode, argument: str, variables: dict[str, Any]) -> int:
    """How many values a list argument holds (a single value stands for a list of one)."""
    for arg in node.arguments or ():
        if arg.name.value == argument:
            if isinstance(arg.value, ListValueNode):
                return len(arg.value.values)
            if isinstance(arg.value, VariableNode):
                value = variables.get(arg.value.name.value)
                return len(value) if isinstance(value, list) else 1
            return 1
    return 0


def _operation_variables(op: OperationDefinitionNode, sent: dict[str, Any]) -> dict[str, Any]:
    """The variables an operation runs with: those sent, else their defaults in the operation."""
    defaults = {
        d.variable.name.value: value_from_ast_untyped(d.default_value)
        for d in op.variable_definitions or ()
        if d.default_value is not None
    }
    return {**defaults, **sent}


@cache
def _page_types(schema: GraphQLSchema) -> frozenset[str]:
    """The types only ever answered by a field taking a page size (a connection, a lineage graph,
    search results): their lists are the page, as long as its page size."""
    paged: set[str] = set()
    unpaged: set[str] = set()
    for parent in schema.type_map.values():
        if not isinstance(parent, GraphQLObjectType):
            continue
        for field in parent.fields.values():
            output = field.type.of_type if isinstance(field.type, GraphQLNonNull) else field.type
            named = get_named_type(field.type)
            answers = named.types if isinstance(named, GraphQLUnionType) else (named,)
            takes_page = any(arg in field.args for arg in (*_PAGE_ARGS, _CAP_ARG))
            is_page = takes_page and not isinstance(output, GraphQLList)
            (paged if is_page else unpaged).update(t.name for t in answers)
    return frozenset(paged - unpaged)


_INTROSPECTION_ROOTS = {"__schema": SchemaMetaFieldDef, "__type": TypeMetaFieldDef}


def _field_definition(schema: GraphQLSchema, parent: Any, name: str) -> Any:
    """A field of ``parent``, introspection's too; None for __typename or an unknown field."""
    if parent is schema.query_type and name in _INTROSPECTION_ROOTS:
        return _INTROSPECTION_ROOTS[name]
    return (getattr(parent, "fields", None) or {}).get(name)


class _Cost:
    """The estimated number of objects an operation resolves (scalars are free).

    A selection's cost is what it resolves for one parent object, in two parts: ``per_item``, what
    it resolves for each item of the page its parent is (the lists of a connection or a lineage
    graph, which its page size multiplies), and ``once``, the rest. Each fragment is costed once and
    added wherever it is spread.

    For the operation to be charged what it really resolves as it runs, ``guessed_lists`` keeps,
    for each list costed at ``LIST_GUESS`` items, what one of its items costs, and ``null_costs``
    what each field that may be null was costed. An item past a list's guess was in no estimate,
    nor are the lists guessed under it: ``light_costs`` keeps what such an item costs without those
    lists' guesses (they charge what they hold, see ``BudgetedLists``), and ``null_guesses`` the
    part of a field's null cost that is guesses of lists under it.
    """

    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: dict[str, FragmentDefinitionNode],
        variables: dict[str, Any],
        node_cap: int,
    ) -> None:
        self.schema = schema
        self.page_types = _page_types(schema)
        self.variables = variables
        self.node_cap = node_cap
        # id(field node) -> the cost of one item of the list it asks for
        self.guessed_lists: dict[int, int] = {}
        # id(field node) -> the cost of one item of the list it asks for, less the guesses of the
        # lists guessed under it
        self.light_costs: dict[int, int] = {}
        # id(field node) -> its cost for one parent object, when it may be null
        self.null_costs: dict[int, int] = {}
        # id(field node) -> the part of its null cost that is guesses of lists under it
        self.null_guesses: dict[int, int] = {}
        # The guesses of the lists guessed under each field being costed, innermost last: a list
        # (guessed or paged) or a page keeps those under it; any other field passes them on.
        self._guesses: list[int] = []
        # fragment name -> its (per_item, once) and the guesses of lists guessed in it, each costed
        # after the fragments it spreads; one not costed (unknown, or in a cycle) costs nothing
        self._fragment_costs: dict[str, tuple[int, int]] = {}
        self._fragment_guesses: dict[str, int] = {}
        for name in _fragments_in_order(fragments):
            fragment = fragments[name]
            target = schema.get_type(fragment.type_condition.name.value)
            self._guesses.append(0)
            self._fragment_costs[name] = self.of(fragment.selection_set, target)
            self._fragment_guesses[name] = self._guesses.pop()

    def operation(self, op: OperationDefinitionNode) -> int:
        per_item, once = self.of(op.selection_set, self.schema.get_root_type(op.operation))
        return per_item + once

    def _pass_on(self, guesses: int) -> None:
        """Add guesses of lists to those of the field being costed (none at the top)."""
        if self._guesses:
            self._guesses[-1] += guesses

    def of(self, selection_set: SelectionSetNode, parent: Any) -> tuple[int, int]:
        """(per_item, once) of ``selection_set`` for one ``parent`` object."""
        per_item = once = 0
        for sel in selection_set.selections:
            if isinstance(sel, FieldNode):
                item, fixed = self._field(sel, parent)
            elif isinstance(sel, InlineFragmentNode):
                target = (
                    self.schema.get_type(sel.type_condition.name.value) if sel.type_condition else parent
                )
                item, fixed = self.of(sel.selection_set, target)
            elif isinstance(sel, FragmentSpreadNode):
                item, fixed = self._fragment_costs.get(sel.name.value, (0, 0))
                self._pass_on(self._fragment_guesses.get(sel.name.value, 0))
            per_item, once = per_item + item, once + fixed
        return per_item, once

    def _field(self, sel: FieldNode, parent: Any) -> tuple[int, int]:
        name = sel.name.value
        field = _field_definition(self.schema, parent, name)
        scans = SCAN_COST if name in _SCANS else 0
        if field is None or sel.selection_set is None:
            return 0, scans  # scalars, a count, __typename, or a field validation refused
        output = field.type.of_type if isinstance(field.type, GraphQLNonNull) else field.type
        page = _page_size(sel, field, self.variables, self.node_cap)
        if page is not None and name in _CAPPED_FIELDS:
            page = min(page, self.node_cap)
        page = None if page is None else max(page, 1)
        self._guesses.append(0)
        item, fixed = self.of(sel.selection_set, get_named_type(field.type))
        guesses_under = self._guesses.pop()
        keeps_guesses = isinstance(output, GraphQLList) or page is not None
        if not keeps_guesses:
            self._pass_on(guesses_under)
            self.null_guesses[id(sel)] = guesses_under
        if isinstance(output, GraphQLList):
            each = 1 + item + fixed  # an item, and what is under it
            if page is None and getattr(parent, "name", None) in self.page_types:
                return each, 0  # the items of the page: as many as its page size
            if page is None:
                self.guessed_lists[id(sel)] = each
                self.light_costs[id(sel)] = each - guesses_under
                self._pass_on(LIST_GUESS * each)
                self.null_guesses[id(sel)] = LIST_GUESS * each
            cost = (page or LIST_GUESS) * each
        elif page is None:
            cost = 1 + item + fixed
        else:
            # A page: what the server reads for it (its page, every node id it is given, at least
            # MIN_WALK_COST for a walk) whatever is asked of it, or the items it answers if more;
            # then what it answers once, and its scan.
            reads = max(page, _list_length(sel, _NODE_LIST_ARGS.get(name, ""), self.variables))
            if name in _CAPPED_FIELDS:
                reads = max(reads, MIN_WALK_COST)
            cost = max(reads, page * item) + fixed + scans
        if not isinstance(field.type, GraphQLNonNull):
            self.null_costs[id(sel)] = cost
        return 0, cost


def _enclosing_item(keys: list[Any]) -> tuple[Any, ...] | None:
    """The path of the list item a value at ``keys`` is under, if any."""
    for at in range(len(keys) - 1, -1, -1):
        if isinstance(keys[at], int):
            return tuple(keys[: at + 1])
    return None


def _node_cap(context: Any) -> int:
    settings = getattr(context, "settings", None)
    return settings.max_lineage_nodes if settings is not None else DEFAULT_MAX_NODES


class CostLimiter(SchemaExtension):
    """Refuse an operation whose estimated cost is above ``MAX_COST`` (needs the variables)."""

    def on_execute(self) -> Iterator[None]:
        ctx = self.execution_context
        document = ctx.graphql_document
        if document is not None:
            fragments = {
                d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
            }
            for op in document.definitions:
                if not isinstance(op, OperationDefinitionNode):
                    continue
                if ctx.operation_name and op.name and op.name.value != ctx.operation_name:
                    continue
                variables = _operation_variables(op, ctx.variables or {})
                cost = _Cost(ctx.schema._schema, fragments, variables, _node_cap(ctx.context))
                estimate = cost.operation(op)
                if estimate > MAX_COST:
                    raise QueryTooComplexError(_figure(estimate), MAX_COST)
        yield


class BudgetedLists(Executor[Any]):
    """An executor that settles the cost estimate as the operation runs, so that the budget bounds
    what it really resolves.

    A list the estimate guessed at ``LIST_GUESS`` items is charged what an item of it costs for
    each item past that, as its items are completed, and credited for each it falls short; a field
    that is null is credited what it was costed. So a list of 100,000 is refused after the few
    thousand items that pass the budget (lazily built, it is not even built), and the operation is
    answered with that one error, as if it had been refused before it ran.

    An item past a list's guess is charged without the guesses of the lists guessed under it, and
    those lists are then charged every item they hold, and credited nothing: the lists under the
    first items were in the estimate, those under the others were not. (Charged their guesses
    before the short ones were credited, a dataset's 883 fields with their tags were refused.)
    """

    _cost = 0  # the estimate, as it runs
    _guessed_lists: dict[int, int]
    _light_costs: dict[int, int]
    _null_costs: dict[int, int]
    _null_guesses: dict[int, int]
    _refusal: QueryTooComplexError | None = None
    # The paths of the list items past their list's guess, and under such items
    _unestimated: set[tuple[Any, ...]]

    def execute_operation(self, serially: bool | None = None) -> AwaitableOrValue[Any]:
        cost = _Cost(
            self.schema,
            self.fragment_definitions,
            self.variable_values.coerced,
            _node_cap(self.context_value),
        )
        self._cost = cost.operation(self.operation)
        if cost.guessed_lists:
            self._guessed_lists, self._null_costs = cost.guessed_lists, cost.null_costs
            self._light_costs, self._null_guesses = cost.light_costs, cost.null_guesses
            self._unestimated = set()
            # Settling looks at every value completed: only an operation with a list of unknown
            # length pays for it (a lineage answer of 10,000 nodes has none, and takes 5% less
            # without).
            self.complete_value = self._complete_value_settled  # type: ignore[method-assign]
            self.complete_list_value = self._complete_list_value_charged  # type: ignore[method-assign]
        result = super().execute_operation(serially)
        if self.is_awaitable(result):

            async def refused_if_over_budget() -> Any:
                return self._refused_if_over_budget(await result)

            return refused_if_over_budget()
        return self._refused_if_over_budget(result)

    def _complete_value_settled(
        self,
        return_type: Any,
        field_details_list: Any,
        info: Any,
        path: Any,
        result: Any,
        position_context: Any,
    ) -> AwaitableOrValue[Any]:
        if result is None and not isinstance(path.key, int):  # a field, not an item of a list
            credit = self._costed(field_details_list, self._null_costs)
            if self._is_unestimated(path):
                credit -= self._costed(field_details_list, self._null_guesses)
            self._spend(-credit, "")
        return super().complete_value(
            return_type, field_details_list, info, path, result, position_context
        )

    def _complete_list_value_charged(
        self,
        return_type: GraphQLList[Any],
        field_details_list: Any,
        info: Any,
        path: Any,
        result: Any,
        position_context: Any,
    ) -> AwaitableOrValue[list[Any]]:
        item_cost = self._costed(field_details_list, self._guessed_lists)
        if item_cost and is_iterable(result):
            light = self._costed(field_details_list, self._light_costs)
            result = self._charged(result, item_cost, light, path, self._is_unestimated(path))
        return super().complete_list_value(
            return_type, field_details_list, info, path, result, position_context
        )

    @staticmethod
    def _costed(field_details_list: Any, figures: dict[int, int]) -> int:
        """What ``figures`` hold for a field (the sum for fields merged into one)."""
        return sum(figures.get(id(details.node), 0) for details in field_details_list)

    def _is_unestimated(self, path: Any) -> bool:
        """Whether a value at ``path`` is under a list item the estimate did not count."""
        item = _enclosing_item(path.as_list())
        return item is not None and item in self._unestimated

    def _charged(
        self, items: Iterable[Any], item_cost: int, light: int, path: Any, unestimated: bool
    ) -> Iterator[Any]:
        keys = path.as_list()
        where = ".".join(str(key) for key in keys)
        count = 0
        for item in items:
            if unestimated or count >= LIST_GUESS:
                self._unestimated.add((*keys, count))
                self._spend(light, f" once `{where}` holds {count + 1:,} items")
            count += 1
            yield item
        if not unestimated:
            self._spend(-max(LIST_GUESS - count, 0) * item_cost, "")

    def _spend(self, amount: int, cause: str) -> None:
        self._cost += amount
        if self._cost > MAX_COST:
            if self._refusal is None:
                self._refusal = QueryTooComplexError(_figure(self._cost), MAX_COST, cause)
            raise self._refusal

    def _refused_if_over_budget(self, result: Any) -> Any:
        if self._refusal is None:
            return result
        return ExecutionResult(None, [GraphQLError(self._refusal.message, original_error=self._refusal)])


def limit_extensions() -> list[Any]:
    """Factories of the schema extensions that bound an operation (one instance per operation)."""
    return [
        lambda: MaxTokensLimiter(MAX_TOKENS),
        DocumentLimiter,
        lambda: AddValidationRules([OperationShapeLimiter]),
        CostLimiter,
    ]
