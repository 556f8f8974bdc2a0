"""How the Trino bridge names what Trino reports, as Trino's OpenLineage listener does.

* job: namespace ``trino://host:port`` (the coordinator), name the query id, or a template of
  ``$QUERY_ID``, ``$USER``, ``$SOURCE`` and ``$CLIENT_IP`` like the listener's ``job.name-format``;
* run: a runId derived from the query id and its create time, so a re-sent event lands on the same run;
* datasets: ``catalog.schema.table`` in the coordinator's namespace.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from dataclasses import dataclass
from urllib.parse import urlsplit

from headwater.errors import FieldError
from headwater.ingest.aliases import trino_namespace
from headwater.integrations.trino.events import (
    InvalidTrinoEventError,
    QueryCompletedEvent,
    QueryContext,
    QueryCreatedEvent,
)

# runIds are uuid5(this, "<query id>/<create time in ms>"): stable across retries and re-sends.
RUN_ID_NAMESPACE = uuid.UUID("6f1d3c2e-8a4b-5c7d-9e0f-1a2b3c4d5e6f")

# The query types Trino's OpenLineage listener reports by default (include-query-types): plain
# SELECTs, EXPLAIN, DESCRIBE and the like are left out.
DEFAULT_QUERY_TYPES = frozenset(
    {"ALTER_TABLE_EXECUTE", "DELETE", "INSERT", "MERGE", "UPDATE", "DATA_DEFINITION"}
)
DEFAULT_JOB_NAME_FORMAT = "$QUERY_ID"


@dataclass(frozen=True)
class BridgeOptions:
    """How to name what Trino reports; the defaults match Trino's OpenLineage listener."""

    # The coordinator, as the OpenLineage listener's trino.uri (http://host:8080 or trino://host:8080).
    # Unset: taken from the event (the host:port of metadata.uri, else context.serverAddress).
    trino_uri: str | None = None
    # The job namespace, as the listener's ``namespace``; unset: the coordinator's namespace.
    namespace: str | None = None
    job_name_format: str = DEFAULT_JOB_NAME_FORMAT
    # Query types (context.queryType) to report; None reports every query, SELECTs included.
    query_types: frozenset[str] | None = DEFAULT_QUERY_TYPES


def dataset_namespace(
    event: QueryCompletedEvent | QueryCreatedEvent, options: BridgeOptions, prefix: str = "$"
) -> str:
    """The coordinator's namespace: configured, else metadata.uri's host:port, else serverAddress."""
    if options.trino_uri:
        return trino_namespace(options.trino_uri)
    uri = event.metadata.uri
    if uri and _authority(uri, f"{prefix}.metadata.uri"):
        return trino_namespace(uri)
    address = (event.context.server_address if event.context else None) or ""
    if address.strip():
        return coordinator_namespace(address, f"{prefix}.context.serverAddress")
    raise InvalidTrinoEventError(
        "Cannot tell the Trino coordinator: the event has neither metadata.uri nor "
        "context.serverAddress; set HEADWATER_TRINO_URI or ?trinoUri=.",
        [FieldError(f"{prefix}.metadata.uri", "missing; needed to name the coordinator")],
    )


def _authority(uri: str, path: str) -> str:
    """The host and port of a URI the event reports at ``path``; a URI that cannot be read is a bad
    event, not a server error."""
    try:
        return urlsplit(uri).netloc
    except ValueError as exc:  # an unbalanced "[" or "]" (an IPv6 literal)
        message = f"not a URI: {uri[:200]!r} ({exc})"
        raise InvalidTrinoEventError(f"{path} is {message}", [FieldError(path, message)]) from None


def coordinator_namespace(address: str, path: str) -> str:
    """The coordinator's namespace (``trino_namespace``) from an address given at ``path`` (in the
    event, or a parameter); one that names no coordinator is a bad request naming ``path``."""
    try:
        return trino_namespace(address)
    except ValueError as exc:
        raise InvalidTrinoEventError(str(exc), [FieldError(path, str(exc))]) from None


_TEMPLATE = re.compile(r"\$(QUERY_ID|USER|SOURCE|CLIENT_IP)")


def job_name(template: str, query_id: str, context: QueryContext) -> str:
    """The job name from a ``job.name-format`` template; the query id when the template gives nothing."""
    values = {
        "QUERY_ID": query_id,
        "USER": context.user or "",
        "SOURCE": context.source or "",
        "CLIENT_IP": context.remote_client_address or "",
    }
    name = _TEMPLATE.sub(lambda m: values[m.group(1)], template or DEFAULT_JOB_NAME_FORMAT)
    return name if name.strip() else query_id


def run_id_for(query_id: str, created: dt.datetime) -> uuid.UUID:
    """uuid5 of the query id and its create time (to the millisecond)."""
    delta = created - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    millis = delta.days * 86_400_000 + delta.seconds * 1000 + round(delta.microseconds / 1000)
    return uuid.uuid5(RUN_ID_NAMESPACE, f"{query_id}/{millis}")


def table_name(catalog: str, schema: str, table: str) -> str:
    return f"{catalog}.{schema}.{table}"
