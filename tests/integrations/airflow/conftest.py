"""A real Airflow sending OpenLineage to a real Headwater server.

- ``airflow_install``: Airflow and its providers in a virtual environment of their own, made with
  uv and cached between runs (``$HEADWATER_TEST_CACHE`` or ``~/.cache/headwater-tests``, keyed by
  the Python version and the requirement list), with a freshly migrated sqlite metadata database
  kept beside it as a template, so later runs neither install nor migrate.
- ``shop_database``: a source database (customers, orders, customer_totals) on the test server.
- ``headwater_server``: ``headwater serve`` as a subprocess on a free port over the session's test
  database, with an API key; killed at teardown.
- ``airflow_run``: ``airflow dags test`` of integrations/airflow/example_dag.py against all that.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest

from tests.conftest import empty_tables
from tests.pg import with_database
from tests.server import HeadwaterServer, running_headwater

REPO = Path(__file__).resolve().parents[3]
EXAMPLE_DAG = REPO / "integrations" / "airflow" / "example_dag.py"
DAG_ID = "customer_totals"
CONN_ID = "shop_postgres"
NAMESPACE = "headwater-airflow-test"

REQUIREMENTS = [
    "apache-airflow==3.3.2",
    "apache-airflow-providers-openlineage",
    "apache-airflow-providers-common-sql",
    "apache-airflow-providers-postgres",
    "apache-airflow-providers-standard",
]

SHOP_SCHEMA = """
CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL);
CREATE TABLE orders (
    id          integer     PRIMARY KEY,
    customer_id integer     NOT NULL REFERENCES customers,
    amount      numeric     NOT NULL,
    ordered_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE customer_totals (customer_id integer, name text, total numeric);
INSERT INTO customers VALUES (1, 'Ada'), (2, 'Grace'), (3, 'Edsger');
INSERT INTO orders (id, customer_id, amount) VALUES (1, 1, 10.50), (2, 1, 4.50), (3, 2, 7.00), (4, 3, 1.25);
"""


# --- Airflow in its own cached virtual environment -------------------------------------------------


@dataclass(frozen=True)
class AirflowInstall:
    venv: Path
    migrated_db: Path  # a freshly migrated metadata database, copied into each AIRFLOW_HOME

    @property
    def airflow(self) -> Path:
        return self.venv / "bin" / "airflow"


def _cache_root() -> Path:
    return Path(os.environ.get("HEADWATER_TEST_CACHE") or Path.home() / ".cache" / "headwater-tests")


def _install_key() -> str:
    spec = "\n".join([f"python{sys.version_info[0]}.{sys.version_info[1]}", sys.platform, *REQUIREMENTS])
    return hashlib.sha256(spec.encode()).hexdigest()[:16]


def _uv() -> list[str]:
    """uv beside the test interpreter, else on PATH."""
    beside = Path(sys.executable).parent / "uv"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("uv")
    if found:
        return [found]
    pytest.skip(
        "Airflow's test environment is not cached and uv is not installed (pip install -e '.[dev,e2e]')"
    )


def airflow_env(home: Path, venv: Path, **extra: str) -> dict[str, str]:
    """The environment of an Airflow command: this machine's, less anything Airflow, OpenLineage or
    Python-path related it could inherit, plus a private AIRFLOW_HOME and ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AIRFLOW", "OPENLINEAGE", "PYTHON", "VIRTUAL_ENV", "HEADWATER"))
    }
    no_proxy = ",".join(
        filter(None, [env.get("NO_PROXY") or env.get("no_proxy"), "127.0.0.1", "localhost"])
    )
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        NO_PROXY=no_proxy,
        no_proxy=no_proxy,
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__DAGS_FOLDER=str(home / "dags"),
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{home / 'airflow.db'}",
        AIRFLOW__LOGGING__BASE_LOG_FOLDER=str(home / "logs"),
    )
    env.update(extra)
    return env


def _run_logged(cmd: list[str], log: Path, *, env: dict[str, str] | None = None, timeout: float) -> None:
    """Run a command with its output in ``log``; fail with the log's tail if it does not succeed."""
    with log.open("ab") as out:
        out.write(f"$ {' '.join(cmd)}\n".encode())
        out.flush()
        result = subprocess.run(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=timeout, check=False
        )
    if result.returncode != 0:
        tail = log.read_text(errors="replace")[-6000:]
        raise RuntimeError(f"{cmd[0]} {cmd[1]} exited with {result.returncode}; log {log}:\n{tail}")


def _install(target: Path) -> None:
    """Create the venv and the migrated metadata database in ``target`` (emptied first)."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    log = target / "install.log"
    venv = target / "venv"
    _run_logged([*_uv(), "venv", "-q", "-p", sys.executable, str(venv)], log, timeout=300)
    _run_logged(
        [*_uv(), "pip", "install", "-q", "-p", str(venv / "bin" / "python"), *REQUIREMENTS],
        log,
        timeout=1200,
    )
    home = target / "migrate-home"
    (home / "dags").mkdir(parents=True)
    env = airflow_env(home, venv, AIRFLOW__OPENLINEAGE__DISABLED="True")
    _run_logged([str(venv / "bin" / "airflow"), "db", "migrate"], log, env=env, timeout=900)
    (home / "airflow.db").rename(target / "airflow.db")
    shutil.rmtree(home, ignore_errors=True)
    (target / "ready").write_text("\n".join(REQUIREMENTS) + "\n")


@pytest.fixture(scope="session")
def airflow_install() -> AirflowInstall:
    """The cached Airflow venv and migrated database, installed first if missing (under a file lock,
    so concurrent test runs install once)."""
    root = _cache_root() / "airflow-venv"
    root.mkdir(parents=True, exist_ok=True)
    key = _install_key()
    target = root / key
    with (root / f"{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (target / "ready").exists():
                _install(target)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return AirflowInstall(venv=target / "venv", migrated_db=target / "airflow.db")


# --- The source database ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ShopDatabase:
    url: str
    name: str
    namespace: str  # the OpenLineage dataset namespace of this server: postgres://host:port

    def table(self, table: str) -> str:
        return f"{self.name}.public.{table}"


@pytest.fixture(scope="session")
async def shop_database(pg_server: str) -> AsyncIterator[ShopDatabase]:
    name = f"headwater_airflow_shop_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(pg_server)
    await admin.execute(f'CREATE DATABASE "{name}"')
    url = with_database(pg_server, name)
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(SHOP_SCHEMA)
    finally:
        await conn.close()
    parts = urlsplit(url)
    yield ShopDatabase(url=url, name=name, namespace=f"postgres://{parts.hostname}:{parts.port or 5432}")
    await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    await admin.close()


# --- A real Headwater server -----------------------------------------------------------------------


@pytest.fixture(scope="session")
def headwater_server(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HeadwaterServer]:
    log = tmp_path_factory.mktemp("headwater-server") / "server.log"
    with running_headwater(database_url, log) as server:
        yield server


# --- One `airflow dags test` of the example DAG ---------------------------------------------------


@dataclass(frozen=True)
class AirflowRun:
    headwater: HeadwaterServer
    shop: ShopDatabase
    namespace: str
    log: Path
    events_emitted: int

    def get(self, path: str, **params: object) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.headwater.api_key}"}
        return httpx.get(f"{self.headwater.url}{path}", params=params, headers=headers, timeout=30)

    def lineage(self, node_id: str, *, depth: int, direction: str = "BOTH") -> dict:
        response = self.get("/api/v1/lineage", nodeId=node_id, depth=depth, direction=direction)
        assert response.status_code == 200, response.text
        return response.json()

    def job_id(self, name: str) -> str:
        return f"job:{self.namespace}:{name}"

    def dataset_id(self, table: str) -> str:
        return f"dataset:{self.shop.namespace}:{self.shop.table(table)}"


async def _wait_for_dag_run(server: HeadwaterServer, node_id: str, timeout: float) -> None:
    """Until the DAG job's latest run is finished in Headwater (its COMPLETE is the last event sent)."""
    deadline = time.monotonic() + timeout
    state = None
    headers = {"Authorization": f"Bearer {server.api_key}"}
    async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=10) as client:
        while time.monotonic() < deadline:
            response = await client.get("/api/v1/lineage", params={"nodeId": node_id, "depth": 0})
            if response.status_code == 200:
                node = next(n for n in response.json()["graph"] if n["id"] == node_id)
                state = (node["data"].get("latestRun") or {}).get("state")
                if state in ("COMPLETED", "FAILED", "ABORTED"):
                    return
            await asyncio.sleep(0.5)
    raise AssertionError(
        f"{node_id}: no finished run in Headwater after {timeout} s (last state {state})"
    )


@pytest.fixture(scope="module")
async def airflow_run(
    airflow_install: AirflowInstall,
    headwater_server: HeadwaterServer,
    shop_database: ShopDatabase,
    pool: asyncpg.Pool,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[AirflowRun]:
    """Empty Headwater, run the example DAG once with `airflow dags test`, wait for its events."""
    async with pool.acquire() as conn:
        await empty_tables(conn)
    home = tmp_path_factory.mktemp("airflow-home")
    (home / "dags").mkdir()
    shutil.copy(EXAMPLE_DAG, home / "dags" / EXAMPLE_DAG.name)
    shutil.copy(airflow_install.migrated_db, home / "airflow.db")
    transport = {
        "type": "http",
        "url": headwater_server.url,
        "endpoint": "api/v1/lineage",
        "auth": {"type": "api_key", "apiKey": headwater_server.api_key},
        "compression": "gzip",
    }
    env = airflow_env(
        home,
        airflow_install.venv,
        AIRFLOW__OPENLINEAGE__TRANSPORT=json.dumps(transport),
        AIRFLOW__OPENLINEAGE__NAMESPACE=NAMESPACE,
        **{f"AIRFLOW_CONN_{CONN_ID.upper()}": shop_database.url},
    )
    log = home / "dags-test.log"
    await asyncio.to_thread(
        _run_logged, [str(airflow_install.airflow), "dags", "test", DAG_ID], log, env=env, timeout=600
    )
    await _wait_for_dag_run(headwater_server, f"job:{NAMESPACE}:{DAG_ID}", timeout=60)
    emitted = log.read_text(errors="replace").count("Successfully emitted OpenLineage")
    yield AirflowRun(
        headwater=headwater_server,
        shop=shop_database,
        namespace=NAMESPACE,
        log=log,
        events_emitted=emitted,
    )
    async with pool.acquire() as conn:
        await empty_tables(conn)
