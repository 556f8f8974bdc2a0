"""Scoped API keys against a real `headwater serve`: every endpoint, every scope, websockets too.

The keys are made with `headwater keys create` on the server's database while it runs: the first
one closes the open server, and a revoked one stops working, both without a restart.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import websockets

from headwater.access.keys import CACHE_SECONDS
from tests.factories import run_event
from tests.integrations.trino.events import http_example
from tests.pg import migrated_database
from tests.server import HeadwaterServer, running_headwater

pytestmark = pytest.mark.db

LINEAGE = "/api/v1/lineage"
QUERY = {"query": "{ namespaces { name } }"}
MUTATION = {"query": 'mutation { tagDataset(namespace: "n", name: "d", tag: "pii") { __typename } }'}


def keys(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADWATER_")}
    env["HEADWATER_DATABASE_URL"] = database_url
    return subprocess.run(
        [sys.executable, "-m", "headwater.cli", "keys", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def create_key(database_url: str, name: str, *scopes: str) -> str:
    done = keys(database_url, "create", "--name", name, *[a for s in scopes for a in ("--scope", s)])
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture(scope="module")
async def access_database(pg_server: str) -> AsyncIterator[str]:
    async with migrated_database(pg_server, "headwater_access") as url:
        yield url


@pytest.fixture(scope="module")
def server(access_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HeadwaterServer]:
    log = tmp_path_factory.mktemp("access") / "serve.log"
    with running_headwater(access_database, log, secured=False) as running:
        yield running


@pytest.fixture(scope="module")
def key(server: HeadwaterServer, access_database: str) -> dict[str, str]:
    """One key per scope, made while the server runs; then the server is closed."""
    assert httpx.get(f"{server.url}/api/v1/namespaces").status_code == 200  # open before
    made = {
        scope: create_key(access_database, f"{scope}-key", scope)
        for scope in ("ingest", "read", "write")
    }
    made["admin"] = create_key(access_database, "admin-key", "admin")
    made["read+write"] = create_key(access_database, "both", "read", "write")
    time.sleep(CACHE_SECONDS + 0.2)
    return made


def call(
    server: HeadwaterServer, method: str, path: str, key: str | None, **kwargs: object
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.request(method, f"{server.url}{path}", headers=headers, timeout=30, **kwargs)  # type: ignore[arg-type]


# (method, path, body, the scope it needs)
ENDPOINTS = [
    ("POST", LINEAGE, {"json": run_event("job")}, "ingest"),
    ("POST", f"{LINEAGE}/batch", {"json": [run_event("job", time=1)]}, "ingest"),
    ("POST", "/api/v1/integrations/trino", {"json": http_example()}, "ingest"),
    ("GET", "/api/v1/namespaces", {}, "read"),
    ("GET", LINEAGE, {"params": {"nodeId": "dataset:warehouse:nowhere"}}, "read"),
    ("GET", "/api/v1/search", {"params": {"q": "x"}}, "read"),
    ("POST", "/graphql", {"json": QUERY}, "read"),
    ("GET", "/graphql", {"params": {"query": "{ namespaces { name } }"}}, "read"),
    ("GET", "/metrics", {}, "read"),
    ("GET", "/docs/openapi.json", {}, "read"),
]


@pytest.mark.parametrize(
    ("method", "path", "body", "needs"), ENDPOINTS, ids=[f"{m} {p}" for m, p, _, _ in ENDPOINTS]
)
def test_every_endpoint_needs_a_key_with_its_scope(server, key, method, path, body, needs):
    refused = call(server, method, path, None, **body)
    assert refused.status_code == 401, refused.text
    assert refused.json()["code"] == "unauthorized"
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert call(server, method, path, "hw_000000000000_" + "x" * 43, **body).status_code == 401
    for scope, value in key.items():
        response = call(server, method, path, value, **body)
        if needs in scope.split("+") or scope == "admin":
            assert response.status_code < 400 or response.status_code == 404, (scope, response.text)
        else:
            assert response.status_code == 403, (scope, response.text)
            assert response.json()["code"] == "forbidden"
            assert f"'{needs}'" in response.json()["detail"]


def test_health_and_the_graphiql_page_stay_open(server, key):
    for path in ("/healthz", "/readyz", "/graphql"):
        response = httpx.get(f"{server.url}{path}", headers={"accept": "text/html"}, timeout=30)
        assert response.status_code == 200, path


def test_mutations_need_the_write_scope(server, key):
    read_only = call(server, "POST", "/graphql", key["read"], json=MUTATION).json()
    assert read_only["errors"][0]["extensions"]["code"] == "forbidden"
    allowed = call(server, "POST", "/graphql", key["read+write"], json=MUTATION).json()
    assert "errors" not in allowed or allowed["errors"][0]["extensions"]["code"] != "forbidden"


def test_a_request_without_a_key_is_a_401_before_its_parameters_are_judged(server, key):
    url = "/api/v1/namespaces/a%00b"
    assert call(server, "GET", url, None).status_code == 401
    assert call(server, "GET", url, key["read"]).status_code == 400


def test_a_non_ascii_key_is_a_401(server, key):
    response = httpx.get(
        f"{server.url}/api/v1/namespaces",
        headers={"Authorization": "Bearer cl\u00e9".encode()},
        timeout=30,
    )
    assert response.status_code == 401


async def _subscribe(
    server: HeadwaterServer, header: str | None, payload: dict[str, str], **headers: str
) -> str:
    """What a graphql-transport-ws client gets after connection_init: 'ack', or the close code."""
    url = server.url.replace("http://", "ws://") + "/graphql"
    extra = {"Authorization": header, **headers} if header else headers
    try:
        async with websockets.connect(
            url, subprotocols=["graphql-transport-ws"], additional_headers=extra
        ) as ws:
            await ws.send(json.dumps({"type": "connection_init", "payload": payload}))
            reply = json.loads(await asyncio.wait_for(ws.recv(), 10))
            return "ack" if reply["type"] == "connection_ack" else reply["type"]
    except websockets.exceptions.ConnectionClosed as closed:
        return f"closed {closed.rcvd.code if closed.rcvd else None}"
    except websockets.exceptions.InvalidStatus as refused:
        return f"refused {refused.response.status_code}"


async def test_subscriptions_take_the_key_in_the_header_or_in_connection_init(server, key):
    assert await _subscribe(server, f"Bearer {key['read']}", {}) == "ack"
    assert await _subscribe(server, None, {"Authorization": f"Bearer {key['read']}"}) == "ack"
    assert await _subscribe(server, None, {}) == "closed 4403"
    assert await _subscribe(server, None, {"Authorization": f"Bearer {key['ingest']}"}) == "closed 4403"
    assert (await _subscribe(server, f"Bearer {key['ingest']}", {})).startswith("refused 403")


async def test_a_page_of_another_site_can_neither_write_nor_subscribe_even_with_a_key(server, key):
    # A browser says where a request comes from; a key a page got hold of changes nothing.
    cross_site = {"Sec-Fetch-Site": "cross-site"}
    response = httpx.post(
        f"{server.url}{LINEAGE}",
        json=run_event("cross"),
        headers={"Authorization": f"Bearer {key['ingest']}", **cross_site},
        timeout=30,
    )
    assert response.status_code == 403, response.text
    subscribed = await _subscribe(server, f"Bearer {key['read']}", {}, **cross_site)
    assert subscribed.startswith("refused 403")
    same_origin = {"Sec-Fetch-Site": "same-origin"}
    assert await _subscribe(server, f"Bearer {key['read']}", {}, **same_origin) == "ack"


def test_keys_are_listed_without_secrets_and_revoked_without_a_restart(server, key, access_database):
    listed = [json.loads(line) for line in keys(access_database, "list", "--json").stdout.splitlines()]
    assert {k["name"] for k in listed} >= {"ingest-key", "read-key", "write-key", "admin-key"}
    assert all(k["revoked"] is None for k in listed)
    # hw_<id>_<secret>: the secret is URL-safe base64, which may itself hold "_".
    _, key_id, secret = key["read"].split("_", 2)
    assert not any(secret in json.dumps(k) for k in listed)
    assert call(server, "GET", "/api/v1/namespaces", key["read"]).status_code == 200
    done = keys(access_database, "revoke", key_id)
    assert done.returncode == 0, done.stderr
    time.sleep(CACHE_SECONDS + 0.2)
    assert call(server, "GET", "/api/v1/namespaces", key["read"]).status_code == 401
    unknown = keys(access_database, "revoke", "000000000000")
    assert unknown.returncode == 1
    assert "no key '000000000000'" in unknown.stderr


def test_metrics_can_be_opened_on_their_own(access_database, key, tmp_path: Path):
    log = tmp_path / "serve.log"
    with running_headwater(
        access_database, log, secured=False, env={"HEADWATER_METRICS_OPEN": "1"}
    ) as opened:
        assert httpx.get(f"{opened.url}/metrics", timeout=30).status_code == 200
        assert httpx.get(f"{opened.url}/api/v1/namespaces", timeout=30).status_code == 401
