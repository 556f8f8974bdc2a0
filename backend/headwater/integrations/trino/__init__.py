"""Trino's HTTP event listener bridged to OpenLineage (see ``convert``).

``events``: Trino's event objects as it sends them; ``naming``: how jobs, runs and datasets are named,
as Trino's OpenLineage listener names them; ``convert``: one event as OpenLineage RunEvents.
"""

from headwater.integrations.trino.convert import (
    PRODUCER,
    SCHEMA_URL,
    Conversion,
    convert,
    to_run_events,
)
from headwater.integrations.trino.events import (
    InvalidTrinoEventError,
    QueryCompletedEvent,
    QueryContext,
    QueryCreatedEvent,
    TrinoEventKind,
    event_kind,
)
from headwater.integrations.trino.naming import (
    DEFAULT_JOB_NAME_FORMAT,
    DEFAULT_QUERY_TYPES,
    RUN_ID_NAMESPACE,
    BridgeOptions,
    coordinator_namespace,
    dataset_namespace,
    job_name,
    run_id_for,
    table_name,
)

__all__ = [
    "DEFAULT_JOB_NAME_FORMAT",
    "DEFAULT_QUERY_TYPES",
    "PRODUCER",
    "RUN_ID_NAMESPACE",
    "SCHEMA_URL",
    "BridgeOptions",
    "Conversion",
    "InvalidTrinoEventError",
    "QueryCompletedEvent",
    "QueryContext",
    "QueryCreatedEvent",
    "TrinoEventKind",
    "convert",
    "coordinator_namespace",
    "dataset_namespace",
    "event_kind",
    "job_name",
    "run_id_for",
    "table_name",
    "to_run_events",
]
