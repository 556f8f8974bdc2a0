"""GraphQL errors carry the REST API's stable codes in ``extensions.code``; surprises are masked.

An AppError keeps its message and code. A syntax or validation error keeps its message with a
generic code. Anything else is logged with an id and replaced by a message quoting that id, so no
internal detail (SQL, paths, stack) reaches a client.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

import strawberry
from graphql import GraphQLError, GraphQLSyntaxError
from strawberry.exceptions import StrawberryGraphQLError
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.schema.schema import DEFAULT_ALLOWED_OPERATION_TYPES
from strawberry.types.execution import ExecutionResult
from strawberry.types.graphql import OperationType

from headwater.api.problems import database_error
from headwater.errors import AppError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from strawberry.types import ExecutionContext

log = logging.getLogger("headwater.api")


def _root_cause(error: GraphQLError) -> BaseException | None:
    cause: BaseException | None = error.original_error
    while isinstance(cause, GraphQLError) and cause.original_error is not None:
        cause = cause.original_error
    return cause


def annotate_error(error: GraphQLError) -> None:
    """Set ``extensions.code`` and mask unexpected errors, in place."""
    extensions: dict[str, Any] = dict(error.extensions or {})
    cause = _root_cause(error)
    if isinstance(cause, AppError):
        extensions["code"] = cause.code
        error.message = cause.message
    elif isinstance(cause, InvalidOperationTypeError | CannotGetOperationTypeError):
        # An operation of a type the transport does not run (a query started over the legacy
        # graphql-ws protocol, which runs only subscriptions), or one not named among several:
        # strawberry's message says which; the client's to change.
        extensions["code"] = "graphql_validation_failed"
    elif cause is None or isinstance(cause, GraphQLError | StrawberryGraphQLError):
        if "code" not in extensions:
            extensions["code"] = (
                "graphql_parse_failed"
                if isinstance(error, GraphQLSyntaxError)
                else ("graphql_validation_failed")
            )
    elif (unavailable := database_error(cause)) is not None:
        extensions["code"] = unavailable.code
        error.message = unavailable.message
    elif "code" not in extensions:
        request_id = uuid.uuid4().hex[:16]
        log.error("unexpected GraphQL error %s at %s", request_id, error.path, exc_info=cause)
        extensions.update(code="internal_error", requestId=request_id)
        error.message = f"An unexpected error occurred; its id in the server log is {request_id}."
    error.extensions = extensions


class HeadwaterSchema(strawberry.Schema):
    """The schema, with every error given a code before it is returned or logged."""

    async def execute(
        self,
        query: str | None,
        variable_values: dict[str, Any] | None = None,
        context_value: Any | None = None,
        root_value: Any | None = None,
        operation_name: str | None = None,
        allowed_operation_types: Iterable[OperationType] | None = None,
        operation_extensions: dict[str, Any] | None = None,
    ) -> ExecutionResult:
        """Queries and mutations. Subscriptions reach ``subscribe`` over websockets only: over plain
        HTTP there is no stream to send their changes on, so they get an error saying where to go."""
        allowed = set(allowed_operation_types or DEFAULT_ALLOWED_OPERATION_TYPES) - {
            OperationType.SUBSCRIPTION
        }
        try:
            return await super().execute(
                query,
                variable_values,
                context_value,
                root_value,
                operation_name,
                allowed,
                operation_extensions,
            )
        except InvalidOperationTypeError as exc:
            if exc.operation_type is not OperationType.SUBSCRIPTION:
                raise
            error = GraphQLError(
                "Subscriptions run over websockets: open ws://HOST:PORT/graphql with the "
                "graphql-transport-ws protocol and send this operation there.",
                extensions={"code": "subscription_needs_websocket"},
            )
            return ExecutionResult(data=None, errors=[error])

    def process_errors(
        self,
        errors: list[GraphQLError],
        execution_context: ExecutionContext | None = None,  # noqa: ARG002
    ) -> None:
        for error in errors:
            annotate_error(error)
            if error.extensions and error.extensions.get("code") == "internal_error":
                continue  # logged with its traceback above
            log.debug("GraphQL error %s: %s", error.extensions, error.message)
