"""The GraphQL schema and its Litestar controller at /graphql (GraphiQL on GET, websockets too).

GraphiQL is our own page (graphiql.html) whose assets are served from the package (graphiql.py).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from cross_web import HTTPException, LitestarRequestAdapter
from litestar import Request, Response
from litestar.exceptions import HTTPException as LitestarHTTPException
from strawberry.exceptions import ConnectionRejectionError
from strawberry.litestar import make_graphql_controller
from strawberry.litestar.controller import LitestarWebSocketAdapter
from strawberry.schema.config import StrawberryConfig
from strawberry.types.unset import UNSET, UnsetType

from headwater.api.auth import PENDING_STATE, SCOPES_STATE, bearer_token, check_key
from headwater.api.graphql.arguments import RefuseNulArguments
from headwater.api.graphql.context import Context, LoadersPerOperation, context_getter
from headwater.api.graphql.errors import HeadwaterSchema
from headwater.api.graphql.graphiql import ENDPOINT, graphiql_html
from headwater.api.graphql.limits import BudgetedLists, limit_extensions
from headwater.api.graphql.mutations import Mutation
from headwater.api.graphql.operations import OperationNameRequired
from headwater.api.graphql.queries import Query
from headwater.api.graphql.subscriptions import SharedRenderingExecutor, Subscription, encode_message
from headwater.api.rest.body import (
    check_json_values,
    content_encoding,
    decode_json,
    undo_content_encoding,
)
from headwater.errors import AppError, FieldError, InvalidRequestError, PayloadTooLargeError

# JSON values in one GraphQL request or websocket message: an operation and its variables need far
# fewer (MAX_TOKENS bounds the operation), and decoding is refused past this before it builds them.
MAX_VALUES = 100_000
# Bytes of one GraphQL request body: its largest variables (10,000 node ids) take about 1 MB.
MAX_BODY_BYTES = 4 * 1024 * 1024
# Characters of one GraphQL document. Parsing runs on the event loop, and what MAX_TOKENS does
# not count (comments, whitespace, commas, the length of a string) it still reads, at about 6 ms
# a MB here: a 30 MB comment held every other request for 5 s. Real documents are a few KB.
MAX_DOCUMENT_CHARS = 256 * 1024


class _Executor(BudgetedLists, SharedRenderingExecutor):
    """Each operation held to the cost budget as its lists are completed; a change rendered once
    for every subscriber asking the same of it."""


schema = HeadwaterSchema(
    query=Query,
    mutation=Mutation,
    subscription=Subscription,
    extensions=[*limit_extensions(), OperationNameRequired, RefuseNulArguments, LoadersPerOperation],
    config=StrawberryConfig(disable_field_suggestions=True),
    execution_context_class=_Executor,
)

_StrawberryController = make_graphql_controller(
    schema,
    path=ENDPOINT,
    context_getter=context_getter,
    keep_alive=True,
    keep_alive_interval=15,
    # Subscriptions per connection are counted by Headwater (HEADWATER_MAX_SUBSCRIPTIONS_PER_CONNECTION,
    # refused with too_many_subscriptions); strawberry's own count would stop them at 100.
    max_subscriptions_per_connection=None,
)


class _RequestAdapter(LitestarRequestAdapter):
    """Strawberry's, with the body's Content-Encoding undone as ingest undoes it: gzip, bounded by
    MAX_BODY_BYTES once decompressed; another encoding is a 415 saying so."""

    async def get_body(self) -> bytes:
        body = await super().get_body()
        return undo_content_encoding(body, content_encoding(self.request), MAX_BODY_BYTES)


class _WebSocketAdapter(LitestarWebSocketAdapter):
    """Strawberry's, but a message refused by `decode_json` closes the socket with 1009 (Message
    Too Big) instead of an internal error."""

    async def iter_json(self, *, ignore_parsing_errors: bool = False) -> AsyncGenerator[object, None]:
        try:
            async for message in super().iter_json(ignore_parsing_errors=ignore_parsing_errors):
                _check_message_shape(message)
                yield message
        except PayloadTooLargeError:
            await self.close(1009, f"a message may hold at most {MAX_VALUES} JSON values")
        except InvalidRequestError as exc:
            # As graphql-transport-ws closes on a message that is not JSON: 4400, with the reason
            # (a close reason holds at most 123 bytes).
            await self.close(4400, exc.message.encode()[:123].decode(errors="ignore"))


# strawberry builds the controller class at run time, which a type checker cannot follow.
class GraphQLController(_StrawberryController):  # type: ignore[misc,valid-type]
    """Strawberry's controller, with GraphiQL from the package instead of a CDN, and websockets
    that may carry their API key in `connection_init` (browsers cannot set a header on them)."""

    include_in_schema = False  # GraphQL documents itself (schemas/graphql/schema.graphql)
    request_max_body_size = MAX_BODY_BYTES
    request_adapter_class = _RequestAdapter
    websocket_adapter_class = _WebSocketAdapter

    @property
    def graphql_ide_html(self) -> str:
        return graphiql_html()

    def encode_json(self, data: object) -> str | bytes:
        # A change sent to many subscribers is encoded once for them all.
        return encode_message(data, super().encode_json)

    async def execute_request(
        self, request: Request[Any, Any, Any], context: Any, root_value: Any
    ) -> Response[Any]:
        # strawberry answers what it cannot take as a request (no query, an unknown operation name,
        # a content type it does not read, `variables` that are no object) in plain text: as any
        # other error of the API, it is problem details with a code.
        try:
            response: Response[Any] = await self.run(request, context=context, root_value=root_value)
        except HTTPException as exc:
            raise LitestarHTTPException(status_code=exc.status_code, detail=exc.reason) from None
        return response

    def parse_json(self, data: str | bytes) -> object:
        decoded = super().parse_json(data)
        # A POST body comes as bytes (GET's variables and extensions as text, which may be null).
        # strawberry reads a request out of whatever a body holds, and fails on null, a number or
        # a string; an array would be several operations, and batching is off.
        if isinstance(data, bytes) and not isinstance(decoded, dict):
            kind = _json_kind(decoded)
            raise InvalidRequestError(
                f"A GraphQL request body must be a JSON object, not {kind}.",
                [FieldError("$", f"{kind}, not an object")],
            )
        return decoded

    def decode_json(self, data: str | bytes) -> object:
        # A 64 MB body of `[]` would decode into gigabytes of lists: count before decoding. Then
        # decode as ingest does: a body that is not UTF-8, or a string no stored text can hold,
        # is a 400 saying where, not an internal error.
        body = data.encode() if isinstance(data, str) else data
        check_json_values(body, MAX_VALUES, "that is the most a GraphQL request or message may hold")
        decoded = decode_json(data)
        _check_document_length(decoded)
        return decoded

    async def on_ws_connect(self, context: Context) -> UnsetType | dict[str, object] | None:
        websocket = context.websocket
        if websocket is None or not websocket.state.get(PENDING_STATE):
            return UNSET
        params = context.connection_params if isinstance(context.connection_params, dict) else {}
        value = params.get("Authorization") or params.get("authorization")
        token = bearer_token(value) if isinstance(value, str) else None
        if token is None and isinstance(params.get("apiKey"), str):
            token = params["apiKey"]
        try:
            websocket.state[SCOPES_STATE] = await check_key(websocket.app.state.key_ring, token, "read")
        except AppError as exc:
            # Refused as graphql-transport-ws refuses: the socket closes with 4403 Forbidden.
            raise ConnectionRejectionError({"code": exc.code, "message": exc.message}) from None
        websocket.state[PENDING_STATE] = False
        return UNSET


def _check_document_length(decoded: object) -> None:
    """Refuse a request (``{"query": …}``) or websocket message (``{"payload": {"query": …}}``)
    whose GraphQL document is longer than ``MAX_DOCUMENT_CHARS``, before it is parsed."""
    holder = decoded.get("payload", decoded) if isinstance(decoded, dict) else None
    document = holder.get("query") if isinstance(holder, dict) else None
    if isinstance(document, str) and len(document) > MAX_DOCUMENT_CHARS:
        raise InvalidRequestError(
            f"The GraphQL document is {len(document):,} characters long; at most "
            f"{MAX_DOCUMENT_CHARS:,} are read.",
            [FieldError("query", f"longer than {MAX_DOCUMENT_CHARS:,} characters")],
        )


# Characters of the id a client gives an operation on a websocket: every message about the
# operation repeats it, and a 3 MB id, compressed anew for each change sent, held the server's loop
# for seconds. Clients use counters or UUIDs.
MAX_OPERATION_ID_CHARS = 256
# What each field of an operation's payload must be, as the JSON types' names.
_PAYLOAD_FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "query": ((str,), "a string"),
    "variables": ((dict, type(None)), "an object"),
    "operationName": ((str, type(None)), "a string"),
    "extensions": ((dict, type(None)), "an object"),
}


def _check_message_shape(message: object) -> None:
    """A websocket message is an object; one starting an operation (graphql-transport-ws
    `subscribe`, graphql-ws `start`) has a string id of a sane length and a payload object whose
    fields have their types: anything else is the client's error (4400 with the reason), not the
    server's (4500, or an internal error)."""
    if not isinstance(message, dict):
        raise InvalidRequestError(f"a message must be a JSON object, not {_json_kind(message)}")
    kind = message.get("type")
    if kind not in ("subscribe", "start"):
        return
    operation_id = message.get("id")
    if not isinstance(operation_id, str):
        raise InvalidRequestError(
            f"a {kind} message's id must be a string, not {_json_kind(operation_id)}"
        )
    if len(operation_id) > MAX_OPERATION_ID_CHARS:
        raise InvalidRequestError(
            f"a {kind} message's id is {len(operation_id):,} characters long; at most "
            f"{MAX_OPERATION_ID_CHARS} are taken"
        )
    payload = message.get("payload")
    if not isinstance(payload, dict):
        raise InvalidRequestError(f"a {kind} message's payload must be a JSON object")
    for field, (types, expected) in _PAYLOAD_FIELDS.items():
        if field in payload and not isinstance(payload[field], types):
            raise InvalidRequestError(
                f"a {kind} message's payload.{field} must be {expected}, not "
                f"{_json_kind(payload[field])}"
            )
    if not isinstance(payload.get("query"), str):
        raise InvalidRequestError(f"a {kind} message's payload must hold the query, a string")


def _json_kind(value: object) -> str:
    """A JSON value's type, as a message names it: "an object", "a string", "null" ..."""
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    return "null" if value is None else names.get(type(value), "a number")
