"""The facets Headwater interprets, as typed models.

A facet that does not follow its schema never rejects the event: the event and the facet are kept as
received, the facet is not used to build the model, and a warning naming its JSON path is returned to
the client and stored on the run. Facets Headwater does not interpret are kept as they are.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, TypeVar

import msgspec

from headwater.errors import FieldError


class SchemaField(msgspec.Struct, forbid_unknown_fields=False):
    name: str
    type: str | None = None
    description: str | None = None


class SchemaFacet(msgspec.Struct, forbid_unknown_fields=False):
    fields: list[SchemaField] = []


class DataSourceFacet(msgspec.Struct, forbid_unknown_fields=False):
    name: str | None = None
    uri: str | None = None


class SymlinkIdentifier(msgspec.Struct, forbid_unknown_fields=False):
    namespace: str
    name: str
    type: str = "TABLE"


class SymlinksFacet(msgspec.Struct, forbid_unknown_fields=False):
    identifiers: list[SymlinkIdentifier] = []


class Transformation(msgspec.Struct, forbid_unknown_fields=False):
    type: str | None = None
    subtype: str | None = None
    description: str | None = None
    masking: bool | None = None


class InputField(msgspec.Struct, forbid_unknown_fields=False):
    namespace: str
    name: str
    field: str
    transformations: list[Transformation] | None = None


class ColumnLineageField(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    input_fields: list[InputField] = []
    transformation_type: str | None = None
    transformation_description: str | None = None


class ColumnLineageFacet(msgspec.Struct, forbid_unknown_fields=False):
    fields: dict[str, ColumnLineageField] = {}
    dataset: list[InputField] | None = None


class DatasetVersionFacet(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    dataset_version: str | None = None


class PreviousIdentifier(msgspec.Struct, forbid_unknown_fields=False):
    namespace: str
    name: str


class LifecycleStateChangeFacet(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    lifecycle_state_change: str | None = None
    previous_identifier: PreviousIdentifier | None = None


class DocumentationFacet(msgspec.Struct, forbid_unknown_fields=False):
    description: str | None = None


class SqlFacet(msgspec.Struct, forbid_unknown_fields=False):
    query: str
    dialect: str | None = None


class SourceCodeFacet(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    language: str | None = None
    source_code: str | None = None


class JobTypeFacet(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    processing_type: str | None = None
    integration: str | None = None
    job_type: str | None = None


class ParentRun(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    # As reported: a runId that is not a UUID is read as Marquez reads it (validate.run_uuid).
    run_id: str


class ParentJob(msgspec.Struct, forbid_unknown_fields=False):
    namespace: str
    name: str


class ParentRoot(msgspec.Struct, forbid_unknown_fields=False):
    run: ParentRun
    job: ParentJob


class ParentFacet(msgspec.Struct, forbid_unknown_fields=False):
    run: ParentRun
    job: ParentJob
    root: ParentRoot | None = None


class NominalTimeFacet(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    nominal_start_time: dt.datetime
    nominal_end_time: dt.datetime | None = None


class ErrorMessageFacet(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    message: str
    programming_language: str | None = None
    stack_trace: str | None = None


T = TypeVar("T")


def read_facet(
    facets: dict[str, Any] | None, key: str, model: type[T], path: str, warnings: list[FieldError]
) -> T | None:
    """Decode ``facets[key]`` into ``model``; on a schema violation add a warning and return None."""
    if not facets or key not in facets:
        return None
    raw = facets[key]
    if isinstance(raw, dict) and raw.get("_deleted") is True:
        return None
    try:
        return msgspec.convert(raw, model)
    except msgspec.ValidationError as exc:
        text = str(exc)
        message, _, where = text.partition(" - at `")
        location = f"{path}.{key}" + (where.rstrip("`")[1:] if where else "")
        warnings.append(FieldError(location, f"facet ignored: {message}"))
        return None


def split_deleted(facets: dict[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """Separate facets marked ``"_deleted": true`` (to remove from the latest facets) from the rest."""
    kept: dict[str, Any] = {}
    deleted: list[str] = []
    for key, value in (facets or {}).items():
        if isinstance(value, dict) and value.get("_deleted") is True:
            deleted.append(key)
        else:
            kept[key] = value
    return kept, deleted


class Owner(msgspec.Struct, forbid_unknown_fields=False):
    name: str
    type: str | None = None


class OwnershipFacet(msgspec.Struct, forbid_unknown_fields=False):
    owners: list[Owner] = []


class OutputStatisticsFacet(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    row_count: int | None = None
    size: int | None = None
    file_count: int | None = None


class DataQualityMetricsFacet(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    column_metrics: dict[str, Any]
    row_count: int | None = None
    bytes: int | None = None


# Standard facets Headwater does not build model rows from, but checks so a client hears about a
# malformed one (the event is still stored, with the facet as received).
CHECKED_ONLY: dict[str, dict[str, type]] = {
    "job": {"ownership": OwnershipFacet},
    "dataset": {"ownership": OwnershipFacet},
    "inputFacets": {"dataQualityMetrics": DataQualityMetricsFacet},
    "outputFacets": {"outputStatistics": OutputStatisticsFacet},
}


def check_facets(
    facets: dict[str, Any] | None, location: str, path: str, warnings: list[FieldError]
) -> None:
    """Warn about malformed standard facets at ``location`` (job, dataset, inputFacets, outputFacets)."""
    for key, model in CHECKED_ONLY[location].items():
        read_facet(facets, key, model, path, warnings)
