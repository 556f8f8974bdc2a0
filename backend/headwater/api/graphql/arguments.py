"""What no GraphQL argument may hold, refused before any resolver runs.

PostgreSQL text cannot hold U+0000: a name, filter or id carrying one would reach a statement and
fail there. Variables and string literals of the operation are looked at once, and an operation with
one is answered with an error naming where it is (see ``api.parameters``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from graphql import StringValueNode, visit
from graphql.language import Visitor
from strawberry.extensions.base_extension import SchemaExtension

from headwater.api.parameters import HOLDS_NUL, paths_with_nul
from headwater.errors import InvalidRequestError


class _Literals(Visitor):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[int] = []

    def enter_string_value(self, node: StringValueNode, *_: Any) -> None:
        if "\x00" in node.value:
            self.lines.append(node.loc.start_token.line if node.loc else 0)


class RefuseNulArguments(SchemaExtension):
    """An error for an operation whose variables or string literals hold U+0000."""

    def on_execute(self) -> Iterator[None]:
        ctx = self.execution_context
        found = [
            p for name, value in (ctx.variables or {}).items() for p in paths_with_nul(value, f"${name}")
        ]
        if ctx.graphql_document is not None:
            literals = _Literals()
            visit(ctx.graphql_document, literals)
            found += [f"a string on line {line}" for line in literals.lines]
        if found:
            raise InvalidRequestError(f"{', '.join(found[:10])} {HOLDS_NUL}.")
        yield
