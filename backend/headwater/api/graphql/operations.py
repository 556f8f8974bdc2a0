"""Which operation of a document runs: the one `operationName` names, or the only one."""

from __future__ import annotations

from collections.abc import Iterator

from graphql import GraphQLError, OperationDefinitionNode
from strawberry.extensions.base_extension import SchemaExtension

from headwater.errors import shown


class OperationNameRequired(SchemaExtension):
    """Refuse a document of several operations whose request names none of them, as the GraphQL
    specification asks: strawberry would run the first."""

    def on_validate(self) -> Iterator[None]:
        ctx = self.execution_context
        document = ctx.graphql_document
        # What the request sent: `operation_name` answers the first operation's name without it.
        if document is not None and ctx._provided_operation_name is None:
            names = [
                op.name.value if op.name else "an anonymous one"
                for op in document.definitions
                if isinstance(op, OperationDefinitionNode)
            ]
            if len(names) > 1 and ctx.pre_execution_errors is None:
                listed = ", ".join(shown(name, 40) for name in names[:5])
                more = ", …" if len(names) > 5 else ""
                # Reported as validation reports its errors (over HTTP and websockets alike).
                ctx.pre_execution_errors = [
                    GraphQLError(
                        f"The document holds {len(names)} operations ({listed}{more}): name the "
                        "one to run in `operationName`.",
                        extensions={"code": "invalid_request"},
                    )
                ]
        yield
