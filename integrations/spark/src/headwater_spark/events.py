"""OpenLineage RunEvents (plain dicts) for the Spark application, for each action and for each
streaming query."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from openlineage.client.generated import (
    base,
    column_lineage_dataset,
    datasource_dataset,
    error_message_run,
    job_type_job,
    lifecycle_state_change_dataset,
    parent_run,
    processing_engine_run,
    schema_dataset,
    sql_job,
    symlinks_dataset,
)
from openlineage.client.uuid import generate_new_uuid

from headwater_spark import __version__
from headwater_spark.config import ParentRef
from headwater_spark.model import ActionRecord, DatasetInfo
from headwater_spark.naming import job_name, normalize_name, path_suffix
from headwater_spark.plan import InputField

PRODUCER = f"https://github.com/headwater/headwater/tree/{__version__}/integrations/spark"
RUN_EVENT_SCHEMA = base.RunEvent._get_schema()
_CUSTOM_RUN_FACET_SCHEMA = base.RunFacet._get_schema()
_SCHEMAS = {
    "columnLineage": column_lineage_dataset.ColumnLineageDatasetFacet._get_schema(),
    "dataSource": datasource_dataset.DatasourceDatasetFacet._get_schema(),
    "errorMessage": error_message_run.ErrorMessageRunFacet._get_schema(),
    "jobType": job_type_job.JobTypeJobFacet._get_schema(),
    "lifecycleStateChange": (
        lifecycle_state_change_dataset.LifecycleStateChangeDatasetFacet._get_schema()
    ),
    "parent": parent_run.ParentRunFacet._get_schema(),
    "processing_engine": processing_engine_run.ProcessingEngineRunFacet._get_schema(),
    "schema": schema_dataset.SchemaDatasetFacet._get_schema(),
    "sql": sql_job.SQLJobFacet._get_schema(),
    "symlinks": symlinks_dataset.SymlinksDatasetFacet._get_schema(),
}
MAX_STACK_TRACE = 20_000


def facet(kind: str, **fields: Any) -> dict[str, Any]:
    schema = _SCHEMAS.get(kind, _CUSTOM_RUN_FACET_SCHEMA)
    return {"_producer": PRODUCER, "_schemaURL": schema, **fields}


def iso_time(epoch_seconds: float) -> str:
    return dt.datetime.fromtimestamp(epoch_seconds, dt.timezone.utc).isoformat(timespec="milliseconds")


@dataclass
class AppInfo:
    """What is known about the Spark application when lineage is switched on."""

    app_name: str
    spark_version: str
    start_time: float
    master: str | None = None
    application_id: str | None = None
    deploy_mode: str | None = None
    driver_host: str | None = None
    user_name: str | None = None
    ui_web_url: str | None = None
    properties: dict[str, str] = field(default_factory=dict)


def _dataset(info: DatasetInfo, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    facets: dict[str, Any] = {
        "dataSource": facet("dataSource", name=info.id.namespace, uri=info.id.namespace),
    }
    if info.fields is not None:
        facets["schema"] = facet("schema", fields=info.fields)
    if info.id.symlinks:
        facets["symlinks"] = facet(
            "symlinks",
            identifiers=[
                {"namespace": s.namespace, "name": s.name, "type": s.type} for s in info.id.symlinks
            ],
        )
    if info.lifecycle:
        lifecycle: dict[str, Any] = {"lifecycleStateChange": info.lifecycle}
        if info.previous is not None:
            lifecycle["previousIdentifier"] = {"namespace": info.previous[0], "name": info.previous[1]}
        facets["lifecycleStateChange"] = facet("lifecycleStateChange", **lifecycle)
    if extra:
        facets.update(extra)
    return {"namespace": info.id.namespace, "name": info.id.name, "facets": facets}


def column_lineage_facet(lineage: dict[str, list[InputField]] | None) -> dict[str, Any] | None:
    if not lineage:
        return None
    fields: dict[str, Any] = {}
    for column, inputs in lineage.items():
        fields[column] = {
            "inputFields": [
                {
                    "namespace": f.dataset[0],
                    "name": f.dataset[1],
                    "field": f.field,
                    "transformations": [t.as_dict() for t in f.transformations],
                }
                for f in inputs
            ]
        }
    return facet("columnLineage", fields=fields)


class EventFactory:
    """Builds the events of one Spark application: its own run and one child run per action."""

    def __init__(
        self,
        app: AppInfo,
        namespace: str,
        app_job_name: str | None = None,
        parent: ParentRef | None = None,
        root_parent: ParentRef | None = None,
    ) -> None:
        self.app = app
        self.namespace = namespace
        self.app_job = normalize_name(app_job_name or app.app_name) or "spark_application"
        self.app_run_id = str(
            generate_new_uuid(dt.datetime.fromtimestamp(app.start_time, dt.timezone.utc))
        )
        self.parent = parent
        self.root_parent = root_parent or parent

    # ---- shared facets

    def _engine(self) -> dict[str, Any]:
        return facet(
            "processing_engine",
            version=self.app.spark_version,
            name="spark",
            openlineageAdapterVersion=__version__,
        )

    def _app_details(self) -> dict[str, Any]:
        details = {
            "master": self.app.master,
            "appName": self.app.app_name,
            "applicationId": self.app.application_id,
            "deployMode": self.app.deploy_mode,
            "driverHost": self.app.driver_host,
            "userName": self.app.user_name,
            "uiWebUrl": self.app.ui_web_url,
        }
        return facet("spark_applicationDetails", **{k: v for k, v in details.items() if v is not None})

    def _properties(self) -> dict[str, Any]:
        return facet("spark_properties", properties=dict(self.app.properties))

    @staticmethod
    def _parent_facet(parent: ParentRef, root: ParentRef | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "run": {"runId": parent.run_id},
            "job": {"namespace": parent.namespace, "name": parent.name},
        }
        if root is not None:
            body["root"] = {
                "run": {"runId": root.run_id},
                "job": {"namespace": root.namespace, "name": root.name},
            }
        return facet("parent", **body)

    @staticmethod
    def _job_type(job_type: str, processing: str) -> dict[str, Any]:
        return facet("jobType", processingType=processing, integration="SPARK", jobType=job_type)

    @staticmethod
    def _error(message: str | None, stack: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {"message": message or "unknown error", "programmingLanguage": "JAVA"}
        if stack:
            body["stackTrace"] = stack[:MAX_STACK_TRACE]
        return facet("errorMessage", **body)

    @staticmethod
    def _event(
        event_type: str,
        when: float,
        run_id: str,
        run_facets: dict[str, Any],
        job: str,
        namespace: str,
        job_facets: dict[str, Any],
        inputs: list[dict[str, Any]] | None = None,
        outputs: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        return {
            "eventType": event_type,
            "eventTime": iso_time(when),
            "run": {"runId": run_id, "facets": run_facets},
            "job": {"namespace": namespace, "name": job, "facets": job_facets},
            "inputs": inputs or [],
            "outputs": outputs or [],
            "producer": PRODUCER,
            "schemaURL": RUN_EVENT_SCHEMA,
        }

    # ---- application run

    def _app_run_facets(self) -> dict[str, Any]:
        facets: dict[str, Any] = {
            "processing_engine": self._engine(),
            "spark_applicationDetails": self._app_details(),
            "spark_properties": self._properties(),
        }
        if self.parent is not None:
            facets["parent"] = self._parent_facet(self.parent, self.root_parent)
        return facets

    def app_start(self) -> dict[str, Any]:
        return self._event(
            "START",
            self.app.start_time,
            self.app_run_id,
            self._app_run_facets(),
            self.app_job,
            self.namespace,
            {"jobType": self._job_type("APPLICATION", "NONE")},
        )

    def app_end(self, when: float, error: str | None = None, stack: str | None = None) -> dict[str, Any]:
        facets = self._app_run_facets()
        if error is not None:
            facets["errorMessage"] = self._error(error, stack)
        return self._event(
            "FAIL" if error is not None else "COMPLETE",
            when,
            self.app_run_id,
            facets,
            self.app_job,
            self.namespace,
            {"jobType": self._job_type("APPLICATION", "NONE")},
        )

    # ---- actions

    def action_job_name(self, record: ActionRecord) -> str:
        return job_name(self.app_job, record.node_name, record.suffix)

    def action_events(self, record: ActionRecord) -> list[dict[str, Any]]:
        """START and COMPLETE/FAIL of one action; START is dated ``end - duration``."""
        run_id = str(generate_new_uuid(dt.datetime.fromtimestamp(record.start_time, dt.timezone.utc)))
        app_ref = ParentRef(self.namespace, self.app_job, self.app_run_id)
        run_facets: dict[str, Any] = {
            "parent": self._parent_facet(app_ref, self.root_parent or app_ref),
            "processing_engine": self._engine(),
        }
        job_facets: dict[str, Any] = {"jobType": self._job_type("SQL_JOB", "BATCH")}
        if record.sql:
            job_facets["sql"] = facet("sql", query=record.sql, dialect="spark")
        inputs = [_dataset(info) for info in record.inputs]
        outputs: list[dict[str, Any]] = []
        if record.output is not None:
            lineage = column_lineage_facet(record.column_lineage)
            outputs.append(_dataset(record.output, {"columnLineage": lineage} if lineage else None))
        name = self.action_job_name(record)
        start = self._event(
            "START",
            record.start_time,
            run_id,
            run_facets,
            name,
            self.namespace,
            job_facets,
            inputs,
            outputs,
        )
        end_facets = dict(run_facets)
        if not record.success:
            end_facets["errorMessage"] = self._error(record.error_message, record.error_stack)
        end = self._event(
            "COMPLETE" if record.success else "FAIL",
            record.end_time,
            run_id,
            end_facets,
            name,
            self.namespace,
            job_facets,
            inputs,
            outputs,
        )
        return [start, end]

    # ---- streaming queries

    def streaming_job_name(
        self, query_name: str | None, output: DatasetInfo | None, inputs: list[DatasetInfo]
    ) -> str:
        """``<app>.<query name, else streaming_query>.<target>``: stable across the query's restarts
        from its checkpoint, as a batch action's name is across runs. The target is the output's
        path suffix; for a sink that names no dataset (foreachBatch), the first input's, so that
        two such queries of one application are two jobs."""
        named = output if output is not None else (inputs[0] if inputs else None)
        suffix = path_suffix(named.id.name) if named is not None else None
        return job_name(self.app_job, query_name or "streaming_query", suffix)

    def streaming_event(
        self,
        event_type: str,
        when: float,
        run_id: str,
        job: str,
        inputs: list[DatasetInfo],
        output: DatasetInfo | None,
        lineage: dict[str, list[InputField]] | None = None,
        error: str | None = None,
    ) -> dict[str, Any]:
        """One event of a streaming query's run (START, RUNNING, COMPLETE or FAIL), a child of the
        application's run like an action's; ``lineage``, the column lineage of its output."""
        app_ref = ParentRef(self.namespace, self.app_job, self.app_run_id)
        run_facets: dict[str, Any] = {
            "parent": self._parent_facet(app_ref, self.root_parent or app_ref),
            "processing_engine": self._engine(),
        }
        if error is not None:
            run_facets["errorMessage"] = self._error(error, None)
        outputs = []
        if output is not None:
            facet_ = column_lineage_facet(lineage)
            outputs.append(_dataset(output, {"columnLineage": facet_} if facet_ else None))
        return self._event(
            event_type,
            when,
            run_id,
            run_facets,
            job,
            self.namespace,
            {"jobType": self._job_type("SQL_JOB", "STREAMING")},
            [_dataset(info) for info in inputs],
            outputs,
        )
