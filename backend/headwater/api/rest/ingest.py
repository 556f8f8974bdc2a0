"""POST /api/v1/lineage (one event or an array) and POST /api/v1/lineage/batch (per-event results)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from litestar import Request, Response, post
from litestar.datastructures import State

from headwater.api.metrics import EVENTS
from headwater.api.rest.body import EVENT_BATCH_BODY, EVENT_OR_EVENTS_BODY, read_json_body
from headwater.api.rest.catalog.routing import problems
from headwater.errors import AppError, InvalidEventError, PayloadTooLargeError
from headwater.ingest.validate import MAX_ERRORS, ValidEvent, all_or_none, validate_event

T = TypeVar("T")

if TYPE_CHECKING:
    from headwater.ingest.queue import IngestQueue
    from headwater.ingest.service import IngestResult
    from headwater.settings import Settings


async def store_events(
    state: State, events: list[ValidEvent], *, in_parts: bool = False
) -> list[IngestResult]:
    """Ingest in one transaction (shared with concurrent requests' events), or with ``in_parts`` a
    large request in several; results in order."""
    queue: IngestQueue = state.ingest_queue
    results = await queue.submit(events, in_parts=in_parts)
    # Counted per outcome, not per event: a labelled counter costs tens of microseconds a call.
    for (kind, status), count in Counter((r.kind, r.status) for r in results).items():
        EVENTS.labels(kind, status).inc(count)
    return results


def _result_json(result: IngestResult) -> dict[str, Any]:
    body: dict[str, Any] = {"status": result.status, "kind": result.kind}
    if result.run_id:
        body["runId"] = result.run_id
    if result.warnings:
        body["warnings"] = [{"path": w.path, "message": w.message} for w in result.warnings]
    return body


def _failed_event(index: int, exc: AppError) -> dict[str, Any]:
    reasons = [f"{e.path}: {e.message}" for e in exc.errors]
    if exc.omitted:
        count = f"{exc.omitted} {'more ' if reasons else ''}error{'s' if exc.omitted > 1 else ''}"
        reasons.append(f"{count} not listed")
    failed: dict[str, Any] = {
        "index": index,
        "reason": "; ".join(reasons) or exc.message,
        "retriable": False,
        "errors": [{"path": e.path, "message": e.message} for e in exc.errors],
    }
    if exc.omitted:
        failed["errorsOmitted"] = exc.omitted
    return failed


# Arrays longer than this are validated in a worker thread: validating takes about 0.1 ms an event,
# and hundreds of them on the event loop would hold up every other request and ingest's writer.
OFF_LOOP_EVENTS = 32


async def checked(check: Callable[[list[Any]], T], raw: list[Any]) -> T:
    """``check(raw)``, in a worker thread for a long array."""
    if len(raw) > OFF_LOOP_EVENTS:
        return await asyncio.to_thread(check, raw)
    return check(raw)


def _validate_all_or_none(raw: list[Any]) -> list[ValidEvent]:
    """The events of an array, or a 400 listing what is wrong in any of them."""

    def validate(i: int, item: Any, errors_left: int) -> ValidEvent:
        try:
            return validate_event(item, f"$[{i}]", errors_left)
        except InvalidEventError:
            EVENTS.labels("UNKNOWN", "invalid").inc()
            raise

    return all_or_none(raw, validate, InvalidEventError, "events")


def _validate_each(raw: list[Any]) -> tuple[list[tuple[int, ValidEvent]], list[dict[str, Any]]]:
    """The valid events of a batch with their indexes, and the failure of each invalid one."""
    valid: list[tuple[int, ValidEvent]] = []
    failed: list[dict[str, Any]] = []
    listed = 0
    for i, item in enumerate(raw):
        try:
            valid.append((i, validate_event(item, f"$[{i}]", MAX_ERRORS - listed)))
        except AppError as exc:
            EVENTS.labels("UNKNOWN", "invalid").inc()
            listed += len(exc.errors)
            failed.append(_failed_event(i, exc))
    return valid, failed


# What an ingest operation may answer besides its result (503: retry after Retry-After).
INGEST_PROBLEMS = problems(400, 401, 403, 413, 415, 503)
# Stored all or none: an event the database refuses is the whole request's answer.
ALL_OR_NONE_PROBLEMS = problems(400, 401, 403, 413, 415, 422, 503)


@post(
    "/api/v1/lineage",
    status_code=201,
    summary="Ingest OpenLineage events",
    operation_class=EVENT_OR_EVENTS_BODY,
    responses=ALL_OR_NONE_PROBLEMS,
)
async def post_lineage(request: Request[Any, Any, Any], state: State) -> Response[dict[str, Any]]:
    """Accept one RunEvent/DatasetEvent/JobEvent, or a JSON array of them (all or none).

    201 once committed; a retried event answers the same. Invalid input is a 400 naming each JSON
    path; an event the database refuses (a constraint or trigger of its own) a 422 with its reason;
    an unavailable database is a 503 (clients retry).
    """
    settings: Settings = state.settings
    raw = await read_json_body(request, settings.max_body_bytes, settings.max_body_values)
    if isinstance(raw, list):
        if len(raw) > settings.ingest_group_events:
            # One transaction, which every other request would wait for.
            raise PayloadTooLargeError(
                f"An array posted here is stored all or none, in one transaction, which holds at "
                f"most {settings.ingest_group_events:,} events (HEADWATER_INGEST_GROUP_EVENTS); this "
                f"one has {len(raw):,}. Post it in smaller arrays, or to /api/v1/lineage/batch, which "
                "stores it in parts with a result for each event."
            )
        events = await checked(_validate_all_or_none, raw)
        if not events:
            raise InvalidEventError("The array is empty; expected at least one event.")
        results = await store_events(state, events)
        return Response({"results": [_result_json(r) for r in results]}, status_code=201)
    try:
        event = validate_event(raw)
    except InvalidEventError:
        EVENTS.labels("UNKNOWN", "invalid").inc()
        raise
    results = await store_events(state, [event])
    return Response(_result_json(results[0]), status_code=201)


@post(
    "/api/v1/lineage/batch",
    status_code=200,
    summary="Ingest a batch with per-event results",
    operation_class=EVENT_BATCH_BODY,
    responses=INGEST_PROBLEMS,
)
async def post_lineage_batch(request: Request[Any, Any, Any], state: State) -> Response[dict[str, Any]]:
    """The OpenLineage batch contract: valid events are stored, invalid ones reported by index.

    Each failed event also lists its errors with their JSON paths, `MAX_ERRORS` over the whole
    batch; an event's errors past that are counted in its `errorsOmitted`.
    """
    settings: Settings = state.settings
    raw = await read_json_body(request, settings.max_body_bytes, settings.max_body_values)
    if not isinstance(raw, list):
        raise InvalidEventError("A batch must be a JSON array of events.")
    valid, failed = await checked(_validate_each, raw)
    if valid:
        # Per-event results: a large batch may be committed in parts, so that it does not hold
        # every other request back while it is written; an event the database refuses fails alone.
        results = await store_events(state, [v for _, v in valid], in_parts=True)
        refused: list[dict[str, Any]] = [
            {"index": i, "reason": r.reason, "retriable": False, "errors": []}
            for (i, _), r in zip(valid, results, strict=True)
            if r.status == "failed"
        ]
        if refused:
            failed = sorted(failed + refused, key=lambda f: f["index"])
    summary = {
        "received": len(raw),
        "successful": len(raw) - len(failed),
        "failed": len(failed),
        "retriable": 0,
        "non_retriable": len(failed),
    }
    status = "success" if not failed else "partial_success"
    return Response({"status": status, "summary": summary, "failed_events": failed}, status_code=200)
