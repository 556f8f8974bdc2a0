"""POST /api/v1/integrations/trino: the target of Trino's HTTP event listener.

The listener posts one QueryCompletedEvent per query (a JSON array of them is accepted too). Each
becomes the START and COMPLETE/FAIL RunEvents Trino's OpenLineage listener would send, stored
through the same ingest as /api/v1/lineage, all in one transaction.

Naming (each a query parameter, else an environment variable, else the default):

* ``trinoUri`` / HEADWATER_TRINO_URI: the coordinator (``http://trino:8080``); datasets and jobs
  live in ``trino://trino:8080``. Unset: the host:port of the event's ``metadata.uri``, else
  ``context.serverAddress``. Set it to the OpenLineage listener's ``trino.uri`` so both agree.
* ``namespace`` / HEADWATER_TRINO_NAMESPACE: the job namespace (the listener's ``namespace``).
* ``jobNameFormat`` / HEADWATER_TRINO_JOB_NAME_FORMAT: ``$QUERY_ID`` (default), ``$USER``,
  ``$SOURCE``, ``$CLIENT_IP`` (the listener's ``job.name-format``).
* ``queryTypes`` / HEADWATER_TRINO_QUERY_TYPES: comma-separated query types to report, or ``ALL``;
  by default the listener's: ALTER_TABLE_EXECUTE, DELETE, INSERT, MERGE, UPDATE, DATA_DEFINITION.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from litestar import Request, Response, post
from litestar.datastructures import State

from headwater.api.rest.body import TRINO_EVENT_BODY, read_json_body
from headwater.api.rest.ingest import INGEST_PROBLEMS, checked, store_events
from headwater.errors import FieldError, shown
from headwater.ingest.service import sliced
from headwater.ingest.validate import MAX_ERRORS, all_or_none, validate_event
from headwater.integrations.trino import (
    DEFAULT_JOB_NAME_FORMAT,
    DEFAULT_QUERY_TYPES,
    BridgeOptions,
    Conversion,
    InvalidTrinoEventError,
    convert,
    coordinator_namespace,
)

if TYPE_CHECKING:
    from headwater.ingest.service import IngestResult
    from headwater.ingest.validate import ValidEvent
    from headwater.settings import Settings

_SETTINGS = {
    "trinoUri": "HEADWATER_TRINO_URI",
    "namespace": "HEADWATER_TRINO_NAMESPACE",
    "jobNameFormat": "HEADWATER_TRINO_JOB_NAME_FORMAT",
    "queryTypes": "HEADWATER_TRINO_QUERY_TYPES",
}


def bridge_options(params: Mapping[str, str], env: Mapping[str, str] | None = None) -> BridgeOptions:
    """Naming options from query parameters, else HEADWATER_TRINO_* variables; a bad value is a 400."""
    env = os.environ if env is None else env

    def get(key: str) -> str | None:
        value = params.get(key) or env.get(_SETTINGS[key])
        return value.strip() if value and value.strip() else None

    trino_uri = get("trinoUri")
    if trino_uri is not None:
        coordinator_namespace(trino_uri, "trinoUri")
    types_value = get("queryTypes")
    query_types: frozenset[str] | None = DEFAULT_QUERY_TYPES
    if types_value is not None:
        names = {t.strip().upper() for t in types_value.split(",") if t.strip()}
        if not names:
            # Else every query would be skipped, each answered 200 as if by choice.
            message = "names no query type: expected query types separated by commas, or ALL"
            raise InvalidTrinoEventError(
                f"queryTypes (or {_SETTINGS['queryTypes']}) {message}: {shown(types_value)!r}",
                [FieldError("queryTypes", message)],
            )
        query_types = None if names & {"ALL", "*"} else frozenset(names)
    return BridgeOptions(
        trino_uri=trino_uri,
        namespace=get("namespace"),
        job_name_format=get("jobNameFormat") or DEFAULT_JOB_NAME_FORMAT,
        query_types=query_types,
    )


def _query_json(conversion: Conversion, results: list[IngestResult]) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": conversion.kind}
    if conversion.query_id:
        body["queryId"] = conversion.query_id
    if conversion.query_state:
        body["queryState"] = conversion.query_state
    if conversion.skipped:
        body["skipped"] = conversion.skipped
        return body
    body["job"] = {"namespace": conversion.job_namespace, "name": conversion.job_name}
    body["runId"] = conversion.run_id
    events = []
    for event, result in zip(conversion.events, results, strict=True):
        item: dict[str, Any] = {"eventType": event["eventType"], "status": result.status}
        if result.reason:
            item["reason"] = result.reason
        if result.warnings:
            item["warnings"] = [{"path": w.path, "message": w.message} for w in result.warnings]
        events.append(item)
    body["events"] = events
    return body


def _converted(
    items: list[Any], options: BridgeOptions, *, is_array: bool
) -> tuple[list[Conversion], list[ValidEvent]]:
    """Each posted Trino event converted and its RunEvents validated, or a 400 listing what is wrong
    in any of them (nothing is stored). A RunEvent's errors are located under the element it was
    made of: ``$[9999].converted[1].outputs[0].name`` is in the second RunEvent (the COMPLETE) of
    the array's element 9999, the table Trino names as its output."""

    def check(i: int, item: Any, errors_left: int) -> tuple[Conversion, list[ValidEvent]]:
        prefix = f"$[{i}]" if is_array else "$"
        conversion = convert(item, options, prefix)
        events = [
            validate_event(e, f"{prefix}.converted[{j}]", errors_left)
            for j, e in enumerate(conversion.events)
        ]
        return conversion, events

    if is_array:
        pairs = all_or_none(items, check, InvalidTrinoEventError, "Trino events")
    else:  # one event: its own error, as it is
        pairs = [check(0, items[0], MAX_ERRORS)]
    return [c for c, _ in pairs], [e for _, events in pairs for e in events]


@post(
    "/api/v1/integrations/trino",
    status_code=201,
    summary="Ingest Trino HTTP event listener events",
    operation_class=TRINO_EVENT_BODY,
    responses=INGEST_PROBLEMS,
)
async def post_trino_event(request: Request[Any, Any, Any], state: State) -> Response[dict[str, Any]]:
    """Accept a Trino QueryCompletedEvent (or a JSON array of them) and store it as OpenLineage runs.

    201 with what was stored per query (a re-sent event answers ``duplicate``); 200 when every
    event was left out (query types not reported, split events). A body that is not a Trino event
    is a 400 naming each JSON path, and nothing is stored.
    """
    settings: Settings = state.settings
    raw = await read_json_body(request, settings.max_body_bytes, settings.max_body_values)
    options = bridge_options(request.query_params)
    items, is_array = (raw, True) if isinstance(raw, list) else ([raw], False)
    if not items:
        raise InvalidTrinoEventError(
            "The array is empty; expected at least one Trino event.", [FieldError("$", "empty array")]
        )
    # About 0.4 ms an event: on the loop, an array of 10,000 held every other request 4.3 s.
    conversions, valid = await checked(
        functools.partial(_converted, options=options, is_array=is_array), items
    )
    # A result per query: a large array may be committed in parts, as a /batch is.
    results = await store_events(state, valid, in_parts=True) if valid else []
    bodies = [
        _query_json(c, own)
        for c, own in zip(
            conversions, sliced(results, (len(c.events) for c in conversions)), strict=True
        )
    ]
    status = 201 if valid else 200
    return Response(bodies[0] if not is_array else {"results": bodies}, status_code=status)
