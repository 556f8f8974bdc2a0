"""The model tables of a database with generated uuids and ids replaced by natural keys, to compare two."""

from __future__ import annotations

import re
from typing import Any

import asyncpg
import msgspec

from headwater.db.pool import register_codecs
from headwater.store.payloads import payload_texts

DS = "(SELECT namespace || ':' || name FROM datasets x WHERE x.dataset_uuid = {col})"
JOB = "(SELECT namespace || ':' || name FROM jobs x WHERE x.job_uuid = {col})"
DSV = "(SELECT version FROM dataset_versions x WHERE x.dataset_version_uuid = {col})"
JOBV = "(SELECT version FROM job_versions x WHERE x.job_version_uuid = {col})"
NODE = (
    "coalesce((SELECT 'dataset:' || namespace || ':' || name FROM datasets x WHERE x.node_id = {col}),"
    " (SELECT 'job:' || namespace || ':' || name FROM jobs x WHERE x.node_id = {col}))"
)


def _keys(template: str, array: str) -> str:
    return f"(SELECT array_agg({template.format(col='u')} ORDER BY 1) FROM unnest({array}) AS u)"


# Each table as the columns that do not depend on generated ids or on the wall clock (now()).
TABLES: dict[str, str] = {
    # The payload as JSON, not as text: each way in stores the text it was given (an import, the
    # key order of the source's jsonb; a POST, the client's). Read compressed (see RAW_EVENTS).
    "raw_events": "SELECT content_hash, event_kind, event_type, event_time, run_uuid, job_namespace, job_name,"
    " producer, payload, payload_zstd FROM raw_events t",
    "namespaces": "SELECT name FROM namespaces t",
    "sources": "SELECT name, uri FROM sources t",
    "datasets": f"SELECT namespace, name, source_name, description, facets, facets_at, fields_at,"
    f" {DSV.format(col='t.current_version_uuid')}, current_version_at, created_at, updated_at,"
    f" deleted_at FROM datasets t",
    "dataset_aliases": f"SELECT namespace, name, {DS.format(col='t.dataset_uuid')}, alias_type FROM dataset_aliases t",
    "dataset_fields": f"SELECT {DS.format(col='t.dataset_uuid')}, name, type, description, position FROM dataset_fields t",
    "dataset_versions": f"SELECT {DS.format(col='t.dataset_uuid')}, version, schema_fields, storage_version,"
    f" created_by_run_uuid, created_at FROM dataset_versions t",
    "jobs": f"SELECT namespace, name, {JOB.format(col='t.parent_job_uuid')}, job_type, description, facets,"
    f" facets_at, {JOBV.format(col='t.current_version_uuid')}, current_version_at, latest_run_uuid,"
    f" created_at, updated_at, deleted_at FROM jobs t",
    "job_versions": f"SELECT {JOB.format(col='t.job_uuid')}, version, {_keys(DS, 't.input_uuids')},"
    f" {_keys(DS, 't.output_uuids')}, code_hash, created_by_run_uuid, created_at FROM job_versions t",
    "runs": f"SELECT run_uuid, {JOB.format(col='t.job_uuid')}, {JOBV.format(col='t.job_version_uuid')},"
    f" parent_run_uuid, root_run_uuid, current_state, current_state_at, started_at, ended_at,"
    f" nominal_start_time, nominal_end_time, error_message, error_language, error_stack_trace, facets,"
    f" facets_at, warnings, created_at, updated_at FROM runs t",
    "run_states": "SELECT run_uuid, state, event_time FROM run_states t",
    "run_datasets": f"SELECT run_uuid, {DS.format(col='t.dataset_uuid')}, direction,"
    f" {DSV.format(col='t.dataset_version_uuid')}, first_seen_at, last_seen_at FROM run_datasets t",
    "lineage_edges": f"SELECT {NODE.format(col='t.src_node_id')}, {NODE.format(col='t.dst_node_id')},"
    f" {JOB.format(col='t.job_uuid')}, {DS.format(col='t.dataset_uuid')}, edge_type, manual,"
    f" first_seen_at, last_seen_at, valid_from, valid_to, last_run_uuid FROM lineage_edges t",
    "column_lineage": f"SELECT {DS.format(col='t.output_dataset_uuid')}, output_field,"
    f" {DS.format(col='t.input_dataset_uuid')}, input_field, {JOB.format(col='t.job_uuid')},"
    f" transformation_type, transformation_subtype, description, masking, derived, superseded, first_seen_at,"
    f" last_seen_at, valid_from, valid_to, last_run_uuid FROM column_lineage_confirmed t",
}
# The change log in the order it was written (change_id), without its ids and wall-clock times.
CHANGES = "SELECT kind, node_id, namespace, at, details FROM change_log ORDER BY change_id"


async def model_snapshot(url: str) -> dict[str, Any]:
    """Every model table as a sorted list of rows (the change log in write order)."""
    conn = await asyncpg.connect(url)
    await register_codecs(conn)
    try:
        snapshot: dict[str, Any] = {}
        for table, query in TABLES.items():
            records = await conn.fetch(query)
            if table == "raw_events":
                texts = await payload_texts(conn, records)
                values = [
                    (*list(r.values())[:-2], msgspec.json.decode(t))
                    for r, t in zip(records, texts, strict=True)
                ]
            else:
                values = [tuple(r.values()) for r in records]
            rows = [tuple(_plain(v) for v in r) for r in values]
            snapshot[table] = sorted(rows, key=repr)
        snapshot["change_log"] = [
            tuple(_plain(v) for v in r.values()) for r in await conn.fetch(CHANGES)
        ]
        return snapshot
    finally:
        await conn.close()


async def stored_payloads(conn: asyncpg.Connection) -> list[str]:
    """The stored events' JSON text, in the order they were stored (raw_event_id)."""
    rows = await conn.fetch("SELECT payload, payload_zstd FROM raw_events ORDER BY raw_event_id")
    return await payload_texts(conn, rows)


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_plain(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, repr(_plain(v))) for k, v in value.items()))
    return value


_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def without_generated_ids(value: Any, keep: set[str]) -> Any:
    """A JSON answer with uuids that are not in ``keep`` (the events' run ids) masked."""
    if isinstance(value, dict):
        return {k: without_generated_ids(v, keep) for k, v in value.items()}
    if isinstance(value, list):
        return [without_generated_ids(v, keep) for v in value]
    if isinstance(value, str) and _UUID.match(value) and value not in keep:
        return "<generated>"
    return value
