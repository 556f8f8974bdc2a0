"""Tables read and written over JDBC, by a real PySpark job against a real PostgreSQL, named as the
OpenLineage naming spec names PostgreSQL tables (postgres://host:port + database.schema.table)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.integrations.spark.conftest import NAMESPACE, SparkJobRun, run_spark_script
from tests.integrations.spark.test_spark_e2e import datasets, final, headwater_get, lineage
from tests.pg import empty_database
from tests.server import HeadwaterServer

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.db]

JOB = Path(__file__).with_name("jdbc_job.py")
# Debian's libpostgresql-jdbc-java (CI installs it).
DRIVER = Path("/usr/share/java/postgresql.jar")
APP = "headwater_jdbc"


@pytest.fixture(scope="module")
async def source_database(pg_server: str) -> AsyncIterator[str]:
    async with empty_database(pg_server, "headwater_jdbc") as url:
        yield url


@pytest.fixture(scope="module")
def jdbc_job(
    headwater: HeadwaterServer | None, source_database: str, tmp_path_factory: pytest.TempPathFactory
) -> SparkJobRun:
    if not DRIVER.exists():
        pytest.skip(f"no PostgreSQL JDBC driver at {DRIVER} (apt-get install libpostgresql-jdbc-java)")
    parts = urlsplit(source_database)
    jdbc_url = (
        f"jdbc:postgresql://{parts.hostname}:{parts.port or 5432}{parts.path}?user={parts.username}"
    )
    if parts.password:
        jdbc_url += f"&password={parts.password}"
    return run_spark_script(JOB, headwater, tmp_path_factory.mktemp("spark-jdbc"), jdbc_url, str(DRIVER))


def test_jdbc_tables_are_named_by_database_schema_and_table(
    jdbc_job: SparkJobRun, source_database: str
) -> None:
    source = urlsplit(source_database)
    namespace = f"postgres://{source.hostname}:{source.port or 5432}"
    table = (namespace, f"{source.path.strip('/')}.public.people")
    w = str(jdbc_job.workdir)
    suffix = table[1].replace(".", "_")  # a write's job is named after its output, as for tables
    workdir = jdbc_job.workdir.name

    write = final(jdbc_job, f"{APP}.execute_save_into_data_source_command.{suffix}")
    assert datasets(write, "outputs") == [table]
    assert [f["name"] for f in write["outputs"][0]["facets"]["schema"]["fields"]] == ["id", "name"]
    assert write["outputs"][0]["facets"]["lifecycleStateChange"]["lifecycleStateChange"] == "OVERWRITE"

    shouted = final(jdbc_job, f"{APP}.execute_insert_into_hadoop_fs_relation_command.{workdir}_shouted")
    assert datasets(shouted, "inputs") == [table]
    assert lineage(shouted)["shout"] == {f"{table[1]}.name": ["DIRECT:TRANSFORMATION"]}

    # A query read over JDBC reads the tables the query names. Its columns are the query's, so the
    # table gets no schema from it; the columns the query copies as they are have column lineage,
    # the one it computes has none.
    ids = final(jdbc_job, f"{APP}.execute_insert_into_hadoop_fs_relation_command.{workdir}_ids")
    assert datasets(ids, "inputs") == [table]
    assert "schema" not in ids["inputs"][0]["facets"]
    assert datasets(ids, "outputs") == [("file", f"{w}/ids")]
    assert ids["job"]["namespace"] == NAMESPACE
    assert lineage(ids) == {
        "id": {f"{table[1]}.id": ["DIRECT:IDENTITY"]},
        "who": {f"{table[1]}.name": ["DIRECT:IDENTITY"]},
    }


def test_headwater_joins_the_jdbc_table_to_what_reads_it(
    jdbc_job: SparkJobRun, source_database: str
) -> None:
    source = urlsplit(source_database)
    name = f"{source.path.strip('/')}.public.people"
    table = f"dataset:postgres://{source.hostname}:{source.port or 5432}:{name}"
    shouted = f"file:{jdbc_job.workdir}/shouted"
    field = f"datasetField:{shouted}:shout"
    graph = headwater_get(jdbc_job, "/api/v1/column-lineage", nodeId=field)
    fields = {node["id"]: node["data"] for node in graph["graph"]}
    [source_field] = fields[field]["inputFields"]
    assert (source_field["dataset"], source_field["field"]) == (name, "name")
    upstream = headwater_get(
        jdbc_job, "/api/v1/lineage", nodeId=f"dataset:{shouted}", direction="UPSTREAM", depth=2
    )
    assert table in {node["id"] for node in upstream["graph"]}
    ids = f"dataset:file:{jdbc_job.workdir}/ids"
    upstream = headwater_get(jdbc_job, "/api/v1/lineage", nodeId=ids, direction="UPSTREAM", depth=2)
    assert table in {node["id"] for node in upstream["graph"]}
