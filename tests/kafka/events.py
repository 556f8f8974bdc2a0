"""What the Kafka tests send: the shared corpus, Spark-shaped runs as openlineage-python builds them."""

from __future__ import annotations

import json
import uuid
from typing import Any

from openlineage.client import event_v2
from openlineage.client.facet_v2 import column_lineage_dataset, parent_run, schema_dataset
from openlineage.client.serde import Serde
from openlineage.client.transport.kafka import KafkaConfig, KafkaTransport

from tests.corpus import EVENTS

PRODUCER = "https://github.com/OpenLineage/OpenLineage/tree/1.30.0/integration/spark"
_SUFFIXES = (".invalid.json", ".lenient.json", ".template.json", ".example.json")


def corpus_events() -> list[dict[str, Any]]:
    """The complete events of the shared corpus, in file order (skips the test when it is absent)."""
    import pytest

    if not EVENTS.is_dir():
        pytest.skip(f"OpenLineage event corpus not found at {EVENTS}")
    paths = sorted(p for p in EVENTS.rglob("*.json") if not p.name.endswith(_SUFFIXES))
    return [json.loads(p.read_text()) for p in paths]


def transport(bootstrap: str, topic: str, **config: str) -> KafkaTransport:
    """openlineage-python's KafkaTransport as a user configures it (an idempotent producer)."""
    return KafkaTransport(
        KafkaConfig(
            config={
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": "true",
                **config,
            },
            topic=topic,
            flush=False,
        )
    )


def wire(event: Any) -> bytes:
    """The bytes KafkaTransport puts in a message for this event (and HttpTransport posts)."""
    return Serde.to_json(event).encode()


def spark_run(app: int, action: int, *, t0: str = "2025-06-01T10:00:00") -> list[event_v2.RunEvent]:
    """A Spark application's job run as the Spark integration reports it: START and COMPLETE of the
    action (child of the application run), with schema and column lineage on its output."""
    namespace = "spark://cluster"
    app_name = f"etl_app_{app}"
    app_run = str(uuid.UUID(int=app * 1_000_003))
    run_id = str(uuid.UUID(int=app * 1_000_003 + action + 1))
    job = event_v2.Job(namespace=namespace, name=f"{app_name}.insert_into_table_{action}")
    parent = parent_run.ParentRunFacet(
        run=parent_run.Run(runId=app_run),
        job=parent_run.Job(namespace=namespace, name=app_name),
        root=parent_run.Root(
            run=parent_run.RootRun(runId=app_run),
            job=parent_run.RootJob(namespace=namespace, name=app_name),
        ),
    )
    source = f"warehouse.raw_{app}_{action}"
    target = f"warehouse.clean_{app}_{action}"
    fields = [schema_dataset.SchemaDatasetFacetFields(name=c, type="string") for c in ("id", "value")]
    lineage = column_lineage_dataset.ColumnLineageDatasetFacet(
        fields={
            c: column_lineage_dataset.Fields(
                inputFields=[
                    column_lineage_dataset.InputField(namespace="hdfs://nn", name=source, field=c)
                ]
            )
            for c in ("id", "value")
        }
    )
    inputs = [
        event_v2.InputDataset(
            namespace="hdfs://nn",
            name=source,
            facets={"schema": schema_dataset.SchemaDatasetFacet(fields=fields)},
        )
    ]
    outputs = [
        event_v2.OutputDataset(
            namespace="hdfs://nn",
            name=target,
            facets={
                "schema": schema_dataset.SchemaDatasetFacet(fields=fields),
                "columnLineage": lineage,
            },
        )
    ]
    minute = f"{action % 60:02d}"
    return [
        event_v2.RunEvent(
            eventType=event_type,
            eventTime=f"{t0[:-5]}{minute}:{second}.000Z",
            run=event_v2.Run(runId=run_id, facets={"parent": parent}),
            job=job,
            producer=PRODUCER,
            inputs=inputs,
            outputs=outputs if event_type == event_v2.RunState.COMPLETE else [],
        )
        for event_type, second in ((event_v2.RunState.START, "00"), (event_v2.RunState.COMPLETE, "30"))
    ]
