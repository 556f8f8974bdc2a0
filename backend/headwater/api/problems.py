"""Every error as RFC 9457 problem details, with the same stable `code` GraphQL uses."""

from __future__ import annotations

import logging
import uuid
from types import UnionType
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin

import asyncpg
from litestar import Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.utils.scope.state import ScopeState

from headwater.api.methods import listed
from headwater.db.failures import is_database_unavailable
from headwater.db.pool import PoolBusyError
from headwater.errors import (
    AppError,
    DatabaseBusyError,
    DatabaseUnavailableError,
    FieldError,
    InvalidRequestError,
    QueryTimeoutError,
)
from headwater.ingest.validate import UndecodableError, decode_json

if TYPE_CHECKING:
    from litestar import Request

log = logging.getLogger("headwater.api")

PROBLEM_JSON = "application/problem+json"


def database_error(exc: BaseException) -> AppError | None:
    """The 503 an exception from the database path is answered with, or None when it is not one:
    busy when every connection stayed in use, a timeout when a statement ran past the statement
    timeout, unavailable when the database cannot be reached."""
    if isinstance(exc, PoolBusyError):
        return DatabaseBusyError(f"The server is busy: {exc}. Retry later.")
    if isinstance(exc, asyncpg.exceptions.QueryCanceledError):
        return QueryTimeoutError(
            "The query ran past the server's statement timeout (HEADWATER_STATEMENT_TIMEOUT_MS) and "
            "was canceled: ask for less (a smaller depth or maxNodes, a narrower filter or page), or "
            "retry when the server is less busy."
        )
    if is_database_unavailable(exc):
        return DatabaseUnavailableError(
            f"The database is unavailable: {type(exc).__name__}. Retry later."
        )
    return None


def problem_body(status: int, code: str, title: str, detail: str, **extra: Any) -> dict[str, Any]:
    """RFC 9457 problem details, with Headwater's stable ``code``."""
    return {
        "type": f"urn:headwater:problem:{code}",
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
        **extra,
    }


def problem(
    status: int,
    code: str,
    title: str,
    detail: str,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> Response[dict[str, Any]]:
    body = problem_body(status, code, title, detail, **extra)
    return Response(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def app_error_handler(_: Request[Any, Any, Any], exc: AppError) -> Response[dict[str, Any]]:
    """Map an AppError to problem details; validation errors list their JSON paths."""
    extra: dict[str, Any] = {}
    if exc.errors:
        extra["errors"] = [{"path": e.path, "message": e.message} for e in exc.errors]
    if exc.omitted:
        extra["errorsOmitted"] = exc.omitted
    return problem(exc.status, exc.code, exc.title, exc.message, **extra)


def _parameter_path(request: Request[Any, Any, Any], error: dict[str, Any]) -> str:
    """``query.offset``, ``path.namespace`` or ``body.data`` for one of litestar's validation errors,
    whose source is its ParamType (a str enum: its value is the word), under the name the API gives
    the parameter (``sortDirection``), not the handler's argument (``sort_direction``)."""
    source = error.get("source") or "query"
    key = str(error.get("key", ""))
    return f"{getattr(source, 'value', source)}.{_api_name(request, key)}".rstrip(".")


def _handler_parameter(request: Request[Any, Any, Any], key: str) -> Any:
    """The route handler's parameter ``key`` (litestar's FieldDefinition), None when unknown."""
    try:
        return request.route_handler.parsed_fn_signature.parameters[key]
    except (AttributeError, KeyError):
        return None


def _api_name(request: Request[Any, Any, Any], key: str) -> str:
    field = _handler_parameter(request, key)
    if field is None:
        return key
    kwarg = field.kwarg_definition
    return getattr(kwarg, "query", None) or getattr(kwarg, "name", None) or key


def _allowed_values(request: Request[Any, Any, Any], key: str) -> list[str]:
    """The values a parameter of Literal type (or a list of them) takes, in the order declared."""
    field = _handler_parameter(request, key)
    if field is None:
        return []
    annotation = field.annotation
    while get_origin(annotation) in (list, Union, UnionType):
        annotation = next((a for a in get_args(annotation) if a is not type(None)), None)
    if get_origin(annotation) is not Literal:
        return []
    # Literals often list a value in several cases (asc, ASC): one of each is enough, spelled as
    # first declared (a parameter taking only DATASET must not be said to take dataset).
    spellings: dict[str, str] = {}
    for value in get_args(annotation):
        spellings.setdefault(str(value).lower(), str(value))
    return list(spellings.values())


def http_error_handler(request: Request[Any, Any, Any], exc: HTTPException) -> Response[dict[str, Any]]:
    """Litestar's own errors (bad query parameters, unknown routes, a body over the route's
    limit) in the same shape."""
    extra: dict[str, Any] = {}
    if exc.status_code == 413:
        limit = _body_limit(request)
        if limit is not None:
            detail = f"The request body is larger than {limit} bytes, the most {request.url.path} takes."
            return problem(413, "payload_too_large", "Payload too large", detail)
    if isinstance(exc, ValidationException) and isinstance(exc.extra, list):
        errors = []
        for e in exc.extra:
            if not isinstance(e, dict):
                continue
            message = str(e.get("message", ""))
            allowed = _allowed_values(request, str(e.get("key", "")))
            if allowed and message.startswith("Invalid enum value"):
                message += f"; expected one of: {', '.join(allowed)}"
            errors.append({"path": _parameter_path(request, e), "message": message})
        extra["errors"] = errors
        if errors:
            # Litestar's detail repeats the title and the whole URL: say what is wrong instead.
            named = "; ".join(f"{e['path']}: {e['message']}" for e in errors[:3])
            return problem(
                400, "invalid_request", "Invalid request", f"Invalid parameters: {named}", **extra
            )
    code = {
        400: "invalid_request",
        401: "unauthorized",
        404: "not_found",
        405: "method_not_allowed",
        413: "payload_too_large",
    }.get(exc.status_code, "http_error")
    allow = (exc.headers or {}).get("allow")
    if exc.status_code == 405 and allow:
        # Litestar names the methods the path takes: say them, and send them (RFC 9110 asks for it).
        allow = listed(allow)
        detail = f"{request.method} is not allowed on {request.url.path}; it takes {allow}."
        return problem(405, code, "Method not allowed", detail, headers={"allow": allow})
    if exc.status_code == 400 and (reason := _undecodable_body(request)) is not None:
        detail = f"The request body is {reason}"
        return problem(400, code, "Invalid request", detail, errors=[{"path": "$", "message": reason}])
    return problem(exc.status_code, code, str(exc.detail or "Error"), str(exc.detail), **extra)


def _undecodable_body(request: Request[Any, Any, Any]) -> str | None:
    """Why a body Litestar read and could not decode is no JSON, in the words ingest uses (which
    byte, which escape); None if it was not read or is JSON. Litestar's own words name no position,
    and a lone surrogate escape ("\\ud800") is "Input data was truncated" to it."""
    body = ScopeState.from_scope(request.scope).body
    if not isinstance(body, bytes) or not body:
        return None
    try:
        decode_json(body)
    except UndecodableError as exc:
        return exc.reason
    return None


def _body_limit(request: Request[Any, Any, Any]) -> int | None:
    try:
        return request.route_handler.resolve_request_max_body_size()
    except Exception:  # no route was matched
        return None


def unexpected_error_handler(
    request: Request[Any, Any, Any], exc: Exception
) -> Response[dict[str, Any]]:
    """Database outages and a full pool are 503 (clients retry); a body nested too deeply to decode
    is a 400; anything else is a 500 with a request id to grep."""
    error = database_error(exc)
    if error is not None:
        return app_error_handler(request, error)
    if isinstance(exc, RecursionError) and "deserializing" in str(exc):
        # Litestar decodes a handler's `data` with msgspec, which gives up on JSON nested deeper
        # than its stack allows (`[[[[…`) and raises this as it is: the body's fault.
        message = "nested too deeply to decode"
        return app_error_handler(
            request,
            InvalidRequestError(
                f"The request body is not valid JSON: {message}", [FieldError("$", message)]
            ),
        )
    request_id = uuid.uuid4().hex[:16]
    log.exception("unexpected error %s on %s %s", request_id, request.method, request.url.path)
    return problem(
        500,
        "internal_error",
        "Internal error",
        f"An unexpected error occurred; its id in the server log is {request_id}.",
        requestId=request_id,
    )
