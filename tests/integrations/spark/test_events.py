"""Naming, configuration, nested-execution grouping, event shapes and the sender (no JVM)."""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from headwater_spark.config import DEFAULT_URL, ParentRef, resolve_config
from headwater_spark.emitter import Emitter, http_transports
from headwater_spark.events import AppInfo, EventFactory
from headwater_spark.model import ActionRecord, Assembler, DatasetInfo
from headwater_spark.naming import (
    DatasetId,
    Symlink,
    dataset_from_location,
    hive_namespace,
    jdbc_dataset,
    jdbc_query_datasets,
    job_name,
    normalize_name,
    path_suffix,
    table_dataset,
)
from headwater_spark.plan import DIRECT, INDIRECT, InputField, Transformation

from tests.corpus import SPEC

pytestmark = pytest.mark.spark


# ---------------------------------------------------------------------------- naming


@pytest.mark.parametrize(
    ("location", "namespace", "name"),
    [
        ("file:/tmp/wh/t1", "file", "/tmp/wh/t1"),
        ("file:///tmp/wh/t1/", "file", "/tmp/wh/t1"),
        ("/data/x.csv", "file", "/data/x.csv"),
        ("hdfs://nn:8020/user/hive/warehouse/t1", "hdfs://nn:8020", "/user/hive/warehouse/t1"),
        ("s3a://bucket/a/b", "s3://bucket", "a/b"),
        ("gs://bucket/key", "gs://bucket", "key"),
        (
            "abfss://c@acct.dfs.core.windows.net/p/q",
            "abfss://c@acct.dfs.core.windows.net",
            "p/q",
        ),
        ("dbfs:/mnt/x", "dbfs", "/mnt/x"),
    ],
)
def test_dataset_from_location(location: str, namespace: str, name: str) -> None:
    assert dataset_from_location(location) == DatasetId(namespace, name)


@pytest.mark.parametrize(
    ("url", "table", "expected"),
    [
        # PostgreSQL: database.schema.table, public when the table has no schema, unquoted folded.
        ("jdbc:postgresql://db/shop", "orders", ("postgres://db:5432", "shop.public.orders")),
        (
            "jdbc:postgresql://u:p@db:6432/shop?ssl=true",
            "Sales.Orders",
            ("postgres://db:6432", "shop.sales.orders"),
        ),
        ("jdbc:postgresql://db/shop", 'sales."Orders"', ("postgres://db:5432", "shop.sales.Orders")),
        ("jdbc:redshift://cluster.eu:5439/dw", "t", ("redshift://cluster.eu:5439", "dw.public.t")),
        # MySQL: database.table, no schema level; MariaDB's driver names the same databases.
        ("jdbc:mysql://m/shop", "`Orders`", ("mysql://m:3306", "shop.Orders")),
        ("jdbc:mariadb://m:3307/shop", "orders", ("mysql://m:3307", "shop.orders")),
        # SQL Server: the database is a property; dbo when the table has no schema.
        (
            "jdbc:sqlserver://s;databaseName=dw;encrypt=true",
            "[sales].[t]",
            ("mssql://s:1433", "dw.sales.t"),
        ),
        ("jdbc:sqlserver://s:1444;databaseName=dw", "t", ("mssql://s:1444", "dw.dbo.t")),
        # A name of three parts names its own database.
        ("jdbc:sqlserver://s;databaseName=dw", "other.sales.t", ("mssql://s:1433", "other.sales.t")),
        # Other databases: the subprotocol as scheme, the name as given after the database.
        ("jdbc:db2://h:50000/sample", "S.T", ("db2://h:50000", "sample.S.T")),
    ],
)
def test_jdbc_dataset(url: str, table: str, expected: tuple[str, str]) -> None:
    assert jdbc_dataset(url, table) == DatasetId(*expected)


@pytest.mark.parametrize(
    ("url", "table"),
    [
        ("jdbc:postgresql://db/shop", "(SELECT id FROM orders) q"),  # a query names no table
        ("jdbc:postgresql://db/shop", " "),
        ("jdbc:derby:memory:x;create=true", "t"),  # no host
        ("jdbc:oracle:thin:@h:1521:orcl", "t"),
        ("postgresql://db/shop", "t"),
    ],
)
def test_jdbc_dataset_without_a_table_or_host_is_none(url: str, table: str) -> None:
    assert jdbc_dataset(url, table) is None


@pytest.mark.parametrize(
    ("url", "query", "expected"),
    [
        ("jdbc:postgresql://db/shop", "(SELECT id FROM people) q", ["shop.public.people"]),
        # The `query` option, as Spark wraps it; joins, subqueries, quoted and folded names.
        (
            "jdbc:postgresql://db/shop",
            '(SELECT o.id FROM Sales."Orders" o JOIN customers c ON o.c = c.id '
            "WHERE EXISTS (SELECT 1 FROM audit.log)) SPARK_GEN_SUBQ_0",
            ["shop.sales.Orders", "shop.public.customers", "shop.audit.log"],
        ),
        # A CTE is no table; a table named twice is one input.
        (
            "jdbc:postgresql://db/shop",
            "(WITH recent AS (SELECT * FROM orders) SELECT * FROM recent r, orders o) q",
            ["shop.public.orders"],
        ),
        # Each database's own quoting and defaults; a table function is no table.
        (
            "jdbc:sqlserver://s;databaseName=dw",
            "(SELECT * FROM [Sales].[Orders] JOIN t ON 1 = 1 JOIN other.dbo.u ON 1 = 1) q",
            ["dw.Sales.Orders", "dw.dbo.t", "other.dbo.u"],
        ),
        (
            "jdbc:mysql://m/shop",
            "(SELECT * FROM `my orders`, generate_series(1, 3)) q",
            ["shop.my orders"],
        ),
        # Not SQL this parser reads: no input rather than a wrong one.
        ("jdbc:postgresql://db/shop", "(SELECT FROM WHERE) q", []),
    ],
)
def test_jdbc_query_datasets(url: str, query: str, expected: list[str]) -> None:
    found = jdbc_query_datasets(url, query)
    assert [d.name for d in found] == expected
    assert {d.namespace for d in found} <= {jdbc_dataset(url, "t").namespace}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("url", "query", "expected"),
    [
        # A column copied as it is, renamed or not; a computed one is no copy.
        (
            "jdbc:postgresql://db/shop",
            "(SELECT o.ID, o.Name AS customer, upper(o.name) AS shout FROM orders o) q",
            {"shop.public.orders": (("customer", "name"), ("id", "id"))},
        ),
        # * over one table copies every column.
        ("jdbc:postgresql://db/shop", "(SELECT * FROM orders) q", {"shop.public.orders": (("*", "*"),)}),
        # In a join, a column is a copy only when its table is named; quoted names keep their case.
        (
            "jdbc:postgresql://db/shop",
            '(SELECT id, p."Name" FROM orders JOIN people p ON p.id = orders.p) q',
            {"shop.public.orders": (), "shop.public.people": (("name", "Name"),)},
        ),
        # A union, or a subquery in FROM: no copy is claimed.
        (
            "jdbc:postgresql://db/shop",
            "(SELECT a FROM x UNION SELECT b FROM y) q",
            {"shop.public.x": (), "shop.public.y": ()},
        ),
        (
            "jdbc:postgresql://db/shop",
            "(SELECT a FROM (SELECT a FROM x) s) q",
            {"shop.public.x": ()},
        ),
        (
            "jdbc:sqlserver://s;databaseName=dw",
            "(SELECT [Id] AS Ident FROM dbo.T) q",
            {"dw.dbo.T": (("ident", "Id"),)},
        ),
    ],
)
def test_jdbc_query_columns_copied(url: str, query: str, expected: dict[str, Any]) -> None:
    assert {d.name: d.columns for d in jdbc_query_datasets(url, query)} == expected


def test_table_dataset_symlink_like_the_official_listener() -> None:
    # Built-in catalog: the warehouse (the location's parent) is the symlink namespace.
    assert table_dataset("file:/tmp/wh/t1", "default", "t1") == DatasetId(
        "file", "/tmp/wh/t1", (Symlink("file:/tmp/wh", "default.t1", "TABLE"),)
    )
    # Hive metastore: hive://host:port.
    hive = table_dataset(
        "hdfs://nn/user/hive/warehouse/t1", "db", "t1", "thrift://meta:9083,thrift://b:9083"
    )
    assert hive.symlinks == (Symlink("hive://meta:9083", "db.t1", "TABLE"),)
    assert hive_namespace("metastore") == "hive://metastore"


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("SomeOverriddenName", "some_overridden_name"),
        ("OLT-58", "olt_58"),
        ("Some job (Like from James)", "some_job_like_from_james"),
        ("execute_CreateTable", "execute_create_table"),
        ("Execute InsertIntoHadoopFsRelationCommand", "execute_insert_into_hadoop_fs_relation_command"),
        ("Execute SaveAsV1TableCommand", "execute_save_as_v1_table_command"),
        ("AdaptiveSparkPlan", "adaptive_spark_plan"),
        ("Open Lineage Integration Create Table", "open_lineage_integration_create_table"),
        ("Headwater E2E", "headwater_e2_e"),
        ("Ventes à Paris", "ventes_a_paris"),
        # Like the official normalizer, leading/trailing non-ASCII letters are trimmed first.
        ("Über Café", "ber_caf"),
    ],
)
def test_normalize_name(raw: str, normalized: str) -> None:
    assert normalize_name(raw) == normalized


def test_job_name() -> None:
    assert path_suffix("/user/hive/warehouse/t1") == "warehouse_t1"
    assert path_suffix("/t1") == "t1"
    assert (
        job_name("my_app", "Execute InsertIntoHiveTable", "mydb.mytable")
        == "my_app.execute_insert_into_hive_table.mydb_mytable"
    )
    assert job_name("my_app", "CollectLimit", None) == "my_app.collect_limit"


# ---------------------------------------------------------------------------- config


def test_config_precedence_argument_then_spark_conf_then_environment() -> None:
    conf = {
        "spark.openlineage.transport.url": "http://conf:1",
        "spark.openlineage.namespace": "conf_ns",
        "spark.openlineage.transport.timeoutInMillis": "2500",
        "spark.openlineage.parentJobNamespace": "airflow",
        "spark.openlineage.parentJobName": "dag.task",
        "spark.openlineage.parentRunId": "01900000-0000-7000-8000-000000000000",
    }
    env = {
        "OPENLINEAGE_URL": "http://env:2",
        "OPENLINEAGE_API_KEY": "env-key",
        "OPENLINEAGE_NAMESPACE": "env_ns",
    }
    config = resolve_config(conf.get, env, namespace="arg_ns")
    assert config.url == "http://conf:1"
    assert config.api_key == "env-key"
    assert config.namespace == "arg_ns"
    assert config.timeout == 2.5
    assert config.compression == "gzip"
    assert config.parent == ParentRef("airflow", "dag.task", "01900000-0000-7000-8000-000000000000")
    assert config.root_parent is None

    only_env = resolve_config({}.get, env)
    assert (only_env.url, only_env.namespace) == ("http://env:2", "env_ns")
    defaults = resolve_config({}.get, {}, compression="none")
    assert (defaults.url, defaults.namespace, defaults.compression) == (DEFAULT_URL, "default", None)


# ---------------------------------------------------------------------------- grouping


def record(
    command: str, output: str | None, query_ids: tuple[int, ...] | None, **kw: Any
) -> ActionRecord:
    base: dict[str, Any] = {
        "query_id": command,
        "func_name": "command",
        "node_name": f"Execute {command}",
        "start_time": 100.0,
        "end_time": 101.0,
    }
    base.update(kw)
    out = DatasetInfo(DatasetId("file", output)) if output else None
    return ActionRecord(command=command, output=out, query_ids=query_ids, **base)


TABLE = "/wh/t"


def test_save_as_table_callbacks_become_one_action() -> None:
    assembler = Assembler(grace=2.0)
    inner = record(
        "InsertIntoHadoopFsRelationCommand",
        TABLE,
        (1, 2),
        func_name="file source write",
        node_name="AdaptiveSparkPlan",
        start_time=100.5,
        end_time=101.0,
        column_lineage={"a": []},
        inputs=[DatasetInfo(DatasetId("file", "/src"))],
    )
    ctas = record(
        "CreateDataSourceTableAsSelectCommand", TABLE, (1, 2), start_time=100.2, end_time=101.1
    )
    ctas.output = DatasetInfo(
        DatasetId("file", TABLE, (Symlink("file:/wh", "default.t"),)), None, "CREATE"
    )
    outer = record("SaveAsV1TableCommand", TABLE, (1, 2), start_time=100.1, end_time=101.2)
    outer.output = DatasetInfo(
        DatasetId("file", TABLE, (Symlink("file:/wh", "default.t"),)), None, "OVERWRITE"
    )
    assert assembler.add(inner, 0.0) == []
    assert assembler.add(ctas, 0.1) == []
    (merged,) = assembler.add(outer, 0.2)
    assert assembler.pending == []
    assert merged.command == "CreateDataSourceTableAsSelectCommand"  # SaveAsV1Table only wraps it
    assert (merged.start_time, merged.end_time) == (100.1, 101.2)
    assert merged.output is not None
    assert merged.output.lifecycle == "OVERWRITE"
    assert merged.output.id.symlinks == (Symlink("file:/wh", "default.t"),)
    assert merged.inputs == [DatasetInfo(DatasetId("file", "/src"))]
    assert merged.column_lineage == {"a": []}


def test_unrelated_write_to_the_same_table_is_not_absorbed() -> None:
    assembler = Assembler(grace=2.0)
    insert = record("InsertIntoHadoopFsRelationCommand", TABLE, (7,))
    ctas = record("CreateDataSourceTableAsSelectCommand", TABLE, (1,))
    assert assembler.add(insert, 0.0) == []
    assert assembler.add(ctas, 0.5) == []
    assert [entry[0].command for entry in assembler.pending] == [insert.command, ctas.command]
    # Nothing is sent while a callback is still being extracted; then after the grace period.
    assert assembler.expired(now=2.4, quiet_since=1.0) == []
    assert [r.command for r in assembler.expired(now=3.0, quiet_since=1.0)] == [
        insert.command,
        ctas.command,
    ]


def test_reads_are_ready_at_once_but_keep_their_place() -> None:
    assembler = Assembler(grace=2.0)
    read = record("Project", None, None, inputs=[DatasetInfo(DatasetId("file", "/src"))])
    assert assembler.add(read, 0.0) == [read]
    write = record("InsertIntoHadoopFsRelationCommand", TABLE, (1,))
    later_read = record("Project", None, None, inputs=[DatasetInfo(DatasetId("file", TABLE))])
    assert assembler.add(write, 1.0) == []
    assert assembler.add(later_read, 1.1) == []  # behind the write it may read
    assert assembler.next_deadline(quiet_since=0.0) == 3.0
    assert assembler.expired(now=3.0, quiet_since=0.0) == [write, later_read]


# ---------------------------------------------------------------------------- events


def factory(parent: ParentRef | None = None) -> EventFactory:
    app = AppInfo(
        app_name="Nightly Sales Job",
        spark_version="4.3.0",
        start_time=1_700_000_000.0,
        master="local[2]",
        application_id="local-1",
        deploy_mode="client",
        user_name="spark",
        properties={"spark.master": "local[2]"},
    )
    return EventFactory(app, "analytics", parent=parent)


def action(success: bool = True) -> ActionRecord:
    field = InputField(
        ("file", "/src"), "a", [Transformation(DIRECT, "IDENTITY"), Transformation(INDIRECT, "FILTER")]
    )
    return ActionRecord(
        query_id="q",
        func_name="command",
        command="InsertIntoHadoopFsRelationCommand",
        node_name="Execute InsertIntoHadoopFsRelationCommand",
        start_time=1_700_000_010.0,
        end_time=1_700_000_012.5,
        success=success,
        error_message=None if success else "boom",
        error_stack=None if success else "at x",
        sql="INSERT INTO t SELECT a FROM src WHERE a > 0",
        inputs=[DatasetInfo(DatasetId("file", "/src"), [{"name": "a", "type": "integer"}])],
        output=DatasetInfo(
            DatasetId("file", "/wh/t", (Symlink("file:/wh", "default.t"),)),
            [{"name": "a", "type": "integer"}],
            "OVERWRITE",
        ),
        column_lineage={"a": [field]},
        suffix="default_t",
    )


def test_application_events() -> None:
    f = factory()
    start = f.app_start()
    assert start["eventType"] == "START"
    assert start["job"] == {
        "namespace": "analytics",
        "name": "nightly_sales_job",
        "facets": {"jobType": start["job"]["facets"]["jobType"]},
    }
    assert start["job"]["facets"]["jobType"]["jobType"] == "APPLICATION"
    assert start["job"]["facets"]["jobType"]["integration"] == "SPARK"
    assert start["eventTime"] == "2023-11-14T22:13:20.000+00:00"
    facets = start["run"]["facets"]
    assert facets["processing_engine"]["name"] == "spark"
    assert facets["processing_engine"]["version"] == "4.3.0"
    assert facets["spark_applicationDetails"]["applicationId"] == "local-1"
    assert "parent" not in facets
    end = f.app_end(1_700_000_100.0)
    assert (end["eventType"], end["run"]["runId"]) == ("COMPLETE", start["run"]["runId"])
    failed = f.app_end(1_700_000_100.0, "ValueError: x", "Traceback ...")
    assert failed["eventType"] == "FAIL"
    assert failed["run"]["facets"]["errorMessage"]["message"] == "ValueError: x"


def test_action_events_start_and_complete() -> None:
    f = factory()
    start, end = f.action_events(action())
    assert start["run"]["runId"] == end["run"]["runId"] != f.app_run_id
    assert (start["eventType"], end["eventType"]) == ("START", "COMPLETE")
    assert start["eventTime"] == "2023-11-14T22:13:30.000+00:00"  # end - duration
    assert end["eventTime"] == "2023-11-14T22:13:32.500+00:00"
    assert (
        end["job"]["name"]
        == "nightly_sales_job.execute_insert_into_hadoop_fs_relation_command.default_t"
    )
    assert end["job"]["facets"]["jobType"]["jobType"] == "SQL_JOB"
    assert end["job"]["facets"]["sql"]["query"].startswith("INSERT INTO t")
    parent = end["run"]["facets"]["parent"]
    assert parent["run"] == {"runId": f.app_run_id}
    assert parent["job"] == {"namespace": "analytics", "name": "nightly_sales_job"}
    assert parent["root"]["run"] == {"runId": f.app_run_id}
    (out,) = end["outputs"]
    assert (out["namespace"], out["name"]) == ("file", "/wh/t")
    assert out["facets"]["symlinks"]["identifiers"] == [
        {"namespace": "file:/wh", "name": "default.t", "type": "TABLE"}
    ]
    assert out["facets"]["lifecycleStateChange"]["lifecycleStateChange"] == "OVERWRITE"
    assert out["facets"]["columnLineage"]["fields"] == {
        "a": {
            "inputFields": [
                {
                    "namespace": "file",
                    "name": "/src",
                    "field": "a",
                    "transformations": [
                        {"type": "DIRECT", "subtype": "IDENTITY", "masking": False},
                        {"type": "INDIRECT", "subtype": "FILTER", "masking": False},
                    ],
                }
            ]
        }
    }
    assert end["inputs"][0]["facets"]["schema"]["fields"] == [{"name": "a", "type": "integer"}]
    assert "errorMessage" not in end["run"]["facets"]


def test_failed_action_and_external_parent() -> None:
    parent = ParentRef("airflow", "dag.task", "01900000-0000-7000-8000-000000000001")
    f = factory(parent)
    assert f.app_start()["run"]["facets"]["parent"]["job"] == {
        "namespace": "airflow",
        "name": "dag.task",
    }
    start, end = f.action_events(action(success=False))
    assert "errorMessage" not in start["run"]["facets"]
    assert end["eventType"] == "FAIL"
    assert end["run"]["facets"]["errorMessage"] == {
        "_producer": end["producer"],
        "_schemaURL": end["run"]["facets"]["errorMessage"]["_schemaURL"],
        "message": "boom",
        "programmingLanguage": "JAVA",
        "stackTrace": "at x",
    }
    # The application is the parent, the external job the root.
    assert end["run"]["facets"]["parent"]["run"] == {"runId": f.app_run_id}
    assert end["run"]["facets"]["parent"]["root"]["job"] == {"namespace": "airflow", "name": "dag.task"}


@pytest.mark.skipif(
    not (SPEC / "OpenLineage.json").exists(), reason="OpenLineage spec copy not available"
)
def test_events_are_valid_openlineage() -> None:
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    resources = []
    for path in [SPEC / "OpenLineage.json", *sorted((SPEC / "facets").glob("*.json"))]:
        schema = json.loads(path.read_text())
        resources.append((schema["$id"], Resource.from_contents(schema)))
    registry = Registry().with_resources(resources)
    core = json.loads((SPEC / "OpenLineage.json").read_text())
    facet_schemas = {
        key: json.loads(path.read_text())
        for path in (SPEC / "facets").glob("*.json")
        for key in json.loads(path.read_text()).get("properties", {})
    }
    f = factory()
    for event in [f.app_start(), f.app_end(1_700_000_100.0), *f.action_events(action(False))]:
        Draft202012Validator(core, registry=registry).validate(event)
        facets = [*event["run"]["facets"].items(), *event["job"]["facets"].items()]
        for ds in event["inputs"] + event["outputs"]:
            facets.extend(ds["facets"].items())
        for key, value in facets:
            if key in facet_schemas:
                Draft202012Validator(facet_schemas[key], registry=registry).validate({key: value})


# ---------------------------------------------------------------------------- sending


class _Receiver:
    def __init__(self, status: int = 201) -> None:
        self.status = status
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    raw = gzip.decompress(raw)
                receiver.headers.append(dict(self.headers))
                receiver.bodies.append(json.loads(raw))
                self.send_response(receiver.status)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    r = _Receiver()
    yield r
    r.close()


def test_emitter_sends_gzip_with_api_key(receiver: _Receiver) -> None:
    primary, fallback = http_transports(receiver.url, "api/v1/lineage", "secret", "gzip", 5.0)
    f = factory()
    emitter = Emitter(primary, f.action_events, fallback_transport=fallback, grace=0.2)
    emitter.submit(f.app_start())
    emitter.submit(action())
    assert emitter.close(10.0, [f.app_end(1_700_000_100.0)])
    assert [b["eventType"] for b in receiver.bodies] == ["START", "START", "COMPLETE", "COMPLETE"]
    assert receiver.bodies[-1]["job"]["name"] == "nightly_sales_job"  # the application ends last
    assert all(h["Content-Encoding"] == "gzip" for h in receiver.headers)
    assert all(h["Authorization"] == "Bearer secret" for h in receiver.headers)
    assert emitter.stats.sent == 4


def test_unreachable_server_never_blocks_and_close_is_bounded() -> None:
    # A port nobody listens on: connection refused, retried with backoff, then single attempts.
    primary, fallback = http_transports("http://127.0.0.1:9", "api/v1/lineage", None, "gzip", 1.0)
    f = factory()
    emitter = Emitter(primary, f.action_events, fallback_transport=fallback, queue_size=3, grace=0.1)
    started = time.monotonic()
    accepted = [emitter.submit(f.app_start()) for _ in range(10)]
    assert time.monotonic() - started < 0.5  # submitting never waits on the network
    assert not all(accepted)  # the bounded queue dropped some
    assert emitter.stats.dropped > 0
    started = time.monotonic()
    emitter.close(2.0)
    assert time.monotonic() - started < 3.0
    assert emitter.stats.sent == 0
