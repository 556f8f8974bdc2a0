"""One error model for every transport: a stable code, an HTTP status and a message naming the thing."""

from __future__ import annotations

from dataclasses import dataclass


def shown(text: str, limit: int = 100) -> str:
    """A client's text as an error message quotes it: at most ``limit`` characters, a cut one marked
    with an ellipsis, since what a client sends may be of any length."""
    return text if len(text) <= limit else text[:limit] + "…"


# What a person may write to describe a tag or a manual edge: a paragraph or a few. Every tag
# list repeats a tag's description, and a change announcing an edge its own to every subscriber:
# a 60 MB description made every later tag list 60 MB.
MAX_DESCRIPTION_CHARS = 10_000


def checked_description(description: str | None, what: str) -> str | None:
    """``description`` as given, or an invalid_request error saying how long ``what``'s may be."""
    if description is not None and len(description) > MAX_DESCRIPTION_CHARS:
        raise InvalidRequestError(
            f"The description of {what} is {len(description):,} characters; the most it may have "
            f"is {MAX_DESCRIPTION_CHARS:,}."
        )
    return description


@dataclass(frozen=True)
class FieldError:
    """One problem in a request body, located by its JSON path (``$.run.runId``)."""

    path: str
    message: str


class AppError(Exception):
    """Base of every expected failure; REST maps it to problem details, GraphQL to extensions.code."""

    code = "internal_error"
    status = 500
    title = "Internal error"

    def __init__(self, message: str, errors: list[FieldError] | None = None, omitted: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors or []
        # Errors found but not listed, so that a broken request cannot make a huge answer.
        self.omitted = omitted


class InvalidRequestError(AppError):
    code = "invalid_request"
    status = 400
    title = "Invalid request"


class InvalidEventError(AppError):
    code = "invalid_event"
    status = 400
    title = "Invalid OpenLineage event"


class PayloadTooLargeError(AppError):
    code = "payload_too_large"
    status = 413
    title = "Payload too large"


class UnsupportedMediaTypeError(AppError):
    code = "unsupported_content_encoding"
    status = 415
    title = "Unsupported content encoding"


class UnauthorizedError(AppError):
    code = "unauthorized"
    status = 401
    title = "Unauthorized"


class ForbiddenError(AppError):
    code = "forbidden"
    status = 403
    title = "Forbidden"


class NotFoundError(AppError):
    code = "not_found"
    status = 404
    title = "Not found"


class DatasetNotFoundError(NotFoundError):
    code = "dataset_not_found"

    def __init__(self, namespace: str, name: str) -> None:
        super().__init__(f"Dataset '{shown(namespace)}'.'{shown(name)}' not found.")


class JobNotFoundError(NotFoundError):
    code = "job_not_found"

    def __init__(self, namespace: str, name: str) -> None:
        super().__init__(f"Job '{shown(namespace)}'.'{shown(name)}' not found.")


class RunNotFoundError(NotFoundError):
    code = "run_not_found"

    def __init__(self, run_id: str) -> None:
        super().__init__(f"Run '{shown(run_id)}' not found.")


class NodeNotFoundError(NotFoundError):
    code = "node_not_found"

    def __init__(self, node_id: str) -> None:
        super().__init__(f"Node '{shown(node_id)}' not found.")


class InvalidNodeIdError(InvalidRequestError):
    code = "invalid_node_id"


class LineageDepthTooLargeError(InvalidRequestError):
    code = "lineage_depth_too_large"

    def __init__(self, depth: int, maximum: int) -> None:
        super().__init__(f"Lineage depth {depth} is larger than the maximum {maximum}.")


class EventRefusedError(AppError):
    """An event the database refused for what it holds (a constraint or trigger of the database's):
    sending it again gives the same answer, so it is no 5xx, which clients retry."""

    code = "event_refused"
    status = 422
    title = "Event refused by the database"


class DatabaseUnavailableError(AppError):
    code = "database_unavailable"
    status = 503
    title = "Database unavailable"


class QueryTimeoutError(AppError):
    """A read PostgreSQL ended at the statement timeout: too large a question for the time allowed,
    or a server too busy to answer it in time; not a database that is down."""

    code = "query_timeout"
    status = 503
    title = "Query timed out"


class DatabaseBusyError(AppError):
    """Every connection of the server's pool stayed in use: a busy server, not a missing database."""

    code = "database_busy"
    status = 503
    title = "Database busy"


class TooManySubscriptionsError(AppError):
    """A subscription past the server's or the connection's limit of open subscriptions."""

    code = "too_many_subscriptions"
    status = 429
    title = "Too many subscriptions"


class TooManyWebsocketsError(AppError):
    """A websocket past the most a server process holds open, refused at its handshake."""

    code = "too_many_websockets"
    status = 503
    title = "Too many websockets"


class MigrationError(AppError):
    code = "migration_error"
    status = 500
    title = "Migration error"


class BeforeRetentionHorizonError(InvalidRequestError):
    """A point-in-time question about a time whose history retention removed."""

    code = "before_retention_horizon"

    def __init__(self, as_of: str, horizon: str) -> None:
        super().__init__(
            f"asOf {as_of} is before the retention horizon {horizon}: the history before it was "
            "removed by retention, so the graph then cannot be told. Ask about a time from the "
            "horizon on."
        )
        self.horizon = horizon


class ChangesRemovedError(InvalidRequestError):
    """A change cursor older than what retention kept of the change log."""

    code = "before_retention_horizon"

    def __init__(self, cursor: int, removed_through: int) -> None:
        super().__init__(
            f"Changes after cursor {cursor} up to {removed_through} were removed by retention, so "
            "resuming there would miss them. Read the current state, then subscribe from "
            "Query.latestChangeCursor."
        )
