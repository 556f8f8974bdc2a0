"""Marquez's own web UI, built from its source, in a real Chromium against a real `headwater serve`
holding the OpenLineage reference events and a small pipeline of our own: every page a user opens
(dashboard, datasets and jobs of every namespace, the events list, table- and column-level
lineage with the dataset and job drawers and their history tabs, search), then tagging and the
drawers' delete. Every request the UI makes to /api/ must answer below 400, and the UI must show no
error toast, no error dialog and no uncaught script error.

Marquez's UI is not part of Headwater: build it once (see the README's "Switching from Marquez")
and point HEADWATER_MARQUEZ_WEB at its `web/` folder (the one holding `dist/`)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import mimetypes
import os
import re
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import pytest

from tests.corpus import EVENTS
from tests.pg import migrated_database
from tests.server import HeadwaterServer, running_headwater
from tests.web.conftest import CHROMIUM, CHROMIUM_ARGS, browser_missing
from tests.web.console_data import NAMESPACE, demo_pipeline, post_events, reference_events

WEB = Path(os.environ.get("HEADWATER_MARQUEZ_WEB", ""))
DIST = WEB / "dist"


def _missing() -> str | None:
    if not os.environ.get("HEADWATER_MARQUEZ_WEB"):
        return "HEADWATER_MARQUEZ_WEB is not set (the web/ folder of a built Marquez UI)"
    if not (DIST / "index.html").is_file():
        return f"no built Marquez UI at {DIST} (build it as Marquez's web/README.md describes)"
    if not EVENTS.is_dir():
        return f"OpenLineage event corpus not found at {EVENTS}"
    return browser_missing()


_why = _missing()
pytestmark = [
    pytest.mark.db,
    pytest.mark.slow,
    pytest.mark.skipif(_why is not None, reason=_why or ""),
]
playwright_api = pytest.importorskip(
    "playwright.async_api", reason="Playwright for Python is not installed (pip install -e '.[dev,e2e]')"
)
expect = playwright_api.expect

TIMEOUT = 20_000
# A dataset with column lineage, a job with runs and SQL, and a dataset with versions, of the
# reference events and the demo pipeline.
COLUMN_DATASET = ("file:/tmp/cll_test", "default.tbl1")
DEMO_DATASET = (NAMESPACE, "mart.revenue")
DEMO_JOB = (NAMESPACE, "build_revenue")
REPORT = (NAMESPACE, "bi.revenue_report")
EVERY_CALL = {
    ("GET", "/api/v1/namespaces"),
    ("GET", "/api/v1/tags"),
    ("PUT", "/api/v1/tags/*"),
    ("GET", "/api/v1/stats/lineage-events"),
    ("GET", "/api/v1/stats/jobs"),
    ("GET", "/api/v1/stats/datasets"),
    ("GET", "/api/v1/stats/sources"),
    ("GET", "/api/v1/jobs"),
    ("GET", "/api/v1/events/lineage"),
    ("GET", "/api/v1/namespaces/*/datasets"),
    ("GET", "/api/v1/namespaces/*/jobs"),
    ("GET", "/api/v1/lineage"),
    ("GET", "/api/v1/column-lineage"),
    ("GET", "/api/v1/namespaces/*/datasets/*"),
    ("GET", "/api/v1/namespaces/*/datasets/*/versions"),
    ("POST", "/api/v1/namespaces/*/datasets/*/tags/*"),
    ("POST", "/api/v1/namespaces/*/datasets/*/fields/*/tags/*"),
    ("DELETE", "/api/v1/namespaces/*/datasets/*/fields/*/tags/*"),
    ("DELETE", "/api/v1/namespaces/*/datasets/*"),
    ("GET", "/api/v1/namespaces/*/jobs/*"),
    ("GET", "/api/v1/namespaces/*/jobs/*/runs"),
    ("POST", "/api/v1/namespaces/*/jobs/*/tags/*"),
    ("GET", "/api/v1/jobs/runs/*/facets"),
    ("GET", "/api/v1/search"),
}


def enc(name: str) -> str:
    """encodeURIComponent, as the UI encodes names in its paths."""
    return quote(name, safe="-_.!~*'()")


def serve_marquez_web(dist: Path, api: str) -> tuple[ThreadingHTTPServer, httpx.Client, str]:
    """Marquez's built UI on a free local port, its /api/ calls passed on to Headwater at ``api``
    (what Marquez's own small node server does with MARQUEZ_HOST and MARQUEZ_PORT)."""
    upstream = httpx.Client(base_url=api, timeout=60)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # the test records calls itself
            pass

        def _proxy(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            headers = {
                k: v
                for k, v in self.headers.items()
                if k.lower() not in {"host", "connection", "content-length"}
            }
            answer = upstream.request(
                self.command,
                self.path,  # raw, so that encoded slashes in names stay encoded
                content=self.rfile.read(length) if length else None,
                headers=headers,
            )
            self.send_response(answer.status_code)
            for k, v in answer.headers.items():
                if k.lower() not in {
                    "content-length",
                    "transfer-encoding",
                    "connection",
                    "content-encoding",
                }:
                    self.send_header(k, v)
            self.send_header("content-length", str(len(answer.content)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the page moved on
                self.wfile.write(answer.content)

        def _static(self) -> None:
            path = urlsplit(self.path).path
            file = (dist / path.lstrip("/")).resolve()
            # The UI routes in the browser: any path that is not one of its files is the app.
            if not file.is_file() or dist.resolve() not in file.parents:
                file = dist / "index.html"
            body = file.read_bytes()
            self.send_response(200)
            self.send_header(
                "content-type", mimetypes.guess_type(file.name)[0] or "application/octet-stream"
            )
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _any(self) -> None:
            if self.path.startswith("/api/"):
                self._proxy()
            else:
                self._static()

        do_GET = do_POST = do_PUT = do_DELETE = _any  # noqa: N815 (http.server names them)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, upstream, f"http://127.0.0.1:{httpd.server_address[1]}"


@pytest.fixture(scope="module")
async def marquez_database(pg_server: str) -> AsyncIterator[str]:
    async with migrated_database(pg_server, "headwater_marquez_web") as url:
        yield url


@pytest.fixture(scope="module")
def headwater(
    marquez_database: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HeadwaterServer]:
    """An open server (as a fresh install is) with the reference events and the demo pipeline."""
    log = tmp_path_factory.mktemp("marquez-web") / "server.log"
    with running_headwater(marquez_database, log, secured=False) as server:
        post_events(server.url, reference_events())
        events, _ = demo_pipeline(dt.datetime.now(dt.UTC) - dt.timedelta(hours=2))
        post_events(server.url, events)
        yield server


@dataclass
class MarquezUI:
    page: Any
    url: str
    calls: list[tuple[str, str, int]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    pending: set[Any] = field(default_factory=set)

    def failed(self) -> list[tuple[str, str, int]]:
        return [c for c in self.calls if c[2] >= 400]

    async def open(self, path: str, *, namespace: str | None = None) -> None:
        if namespace is not None:  # the header's namespace select keeps its choice here
            await self.page.evaluate(f"localStorage.setItem('selectedNamespace', {namespace!r})")
        await self.page.goto(self.url + path)
        await self.settle(path)

    async def settle(self, where: str) -> None:
        """Waits until no call to the API has been under way for a while (the UI chains calls:
        a list, then each row's details), then checks that no error is shown."""
        quiet_since = time.monotonic()
        deadline = quiet_since + TIMEOUT / 1000
        while time.monotonic() - quiet_since < 0.8:
            if self.pending:
                quiet_since = time.monotonic()
            assert time.monotonic() < deadline, f"{where}: calls never ended: {self.pending}"
            await asyncio.sleep(0.1)
        await self.no_error_shown(where)

    async def no_error_shown(self, where: str) -> None:
        # Marquez reports a failed call with a snackbar (the toast) holding its message, and the
        # same flag opens the drawers' delete confirmation.
        toast = self.page.locator(".MuiSnackbar-root")
        if await toast.count() and await toast.first.inner_text() != "Tag updated.":
            self.errors.append(f"{where}: toast {await toast.first.inner_text()!r}")
        dialog = self.page.get_by_role("dialog")
        if await dialog.count():
            self.errors.append(f"{where}: dialog {await dialog.first.inner_text()!r}")


@pytest.fixture(scope="module")
def web(headwater: HeadwaterServer) -> Iterator[str]:
    httpd, upstream, url = serve_marquez_web(DIST, headwater.url)
    try:
        yield url
    finally:
        httpd.shutdown()
        httpd.server_close()
        upstream.close()


@pytest.fixture
async def ui(web: str) -> AsyncIterator[MarquezUI]:
    own = urlsplit(web).netloc
    async with playwright_api.async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = await browser.new_context(viewport={"width": 1600, "height": 1000})
            page = await context.new_page()
            page.set_default_timeout(TIMEOUT)
            ui = MarquezUI(page=page, url=web)

            async def only_local(route: Any) -> None:
                # Fonts and the feedback form live elsewhere; nothing may leave the machine.
                target = urlsplit(route.request.url)
                if target.scheme in {"data", "blob"} or target.netloc == own:
                    await route.continue_()
                else:
                    await route.abort()

            await context.route("**/*", only_local)

            def on_response(response: Any) -> None:
                path = urlsplit(response.url)
                if path.path.startswith("/api/"):
                    ui.calls.append((response.request.method, response.url, response.status))

            def on_request(request: Any) -> None:
                if urlsplit(request.url).path.startswith("/api/"):
                    ui.pending.add(request)

            page.on("request", on_request)
            page.on("requestfinished", lambda r: ui.pending.discard(r))
            page.on("requestfailed", lambda r: ui.pending.discard(r))
            page.on("response", on_response)
            page.on("pageerror", lambda error: ui.errors.append(f"script error: {error}"))
            page.on(
                "console",
                lambda m: (
                    ui.errors.append(f"console: {m.text}")
                    if m.type == "error" and "net::ERR_FAILED" not in m.text
                    else None
                ),
            )
            yield ui
        finally:
            await browser.close()


async def pick_tag(ui: MarquezUI, tags: Any, tag: str) -> None:
    """Chooses ``tag`` in a tag select of a drawer (the dataset's, a field's or the job's)."""
    await tags.click()
    await ui.page.get_by_role("option", name=tag).click()
    await ui.settle(f"tag {tag}")
    await ui.page.keyboard.press("Escape")


async def test_every_page_of_marquez_ui_on_headwater(ui: MarquezUI, headwater: HeadwaterServer) -> None:
    page = ui.page
    api = f"{headwater.url}/api/v1"
    namespaces = httpx.get(f"{api}/namespaces").json()["namespaces"]

    await ui.open("/")
    await expect(page.get_by_text("DataOps").first).to_be_visible()
    await ui.open("/events")
    await expect(page.get_by_text(DEMO_JOB[1]).first).to_be_visible()
    for ns in namespaces:
        await ui.open("/datasets", namespace=ns["name"])
        await ui.open("/jobs", namespace=ns["name"])
    await ui.open("/datasets", namespace=NAMESPACE)
    await expect(page.get_by_text(DEMO_DATASET[1]).first).to_be_visible()
    await ui.open("/jobs", namespace=NAMESPACE)
    await expect(page.get_by_text(DEMO_JOB[1]).first).to_be_visible()

    # Table-level lineage with the dataset drawer: a new tag with its description, the tag on the
    # dataset and on a field, then the dataset's history and one version's details.
    ns, name = DEMO_DATASET
    dataset_api = f"{api}/namespaces/{enc(ns)}/datasets/{enc(name)}"
    await ui.open(f"/lineage/dataset/{enc(ns)}/{enc(name)}?tableLevelNode={enc(f'dataset:{ns}:{name}')}")
    await expect(page.get_by_text("LATEST SCHEMA")).to_be_visible()
    await page.get_by_role("button", name="Edit a Tag").click()
    await page.get_by_placeholder("Search for a Tag...or enter a new one.").fill("pii")
    await page.keyboard.press("Enter")
    await page.locator("#tag-description").fill("Personal data")
    await page.get_by_role("button", name="Submit").click()
    await ui.settle("new tag")
    assert {"name": "pii", "description": "Personal data"} in httpx.get(f"{api}/tags").json()["tags"]
    await pick_tag(ui, page.locator("#dataset-tags").first, "pii")
    await page.get_by_text("Show Field Tags").click()
    await pick_tag(ui, page.locator("#dataset-tags").nth(1), "pii")
    tagged = httpx.get(dataset_api).json()
    assert tagged["tags"] == ["pii"]
    assert tagged["fields"][0]["tags"] == ["pii"]
    await page.locator(".MuiChip-deleteIcon").nth(1).click()  # the field's tag, off again
    await ui.settle("field untagged")
    assert httpx.get(dataset_api).json()["fields"][0]["tags"] == []
    await page.get_by_role("tab", name="VERSION HISTORY").click()
    await ui.settle("version history")
    await page.locator("tbody tr").first.click()
    await ui.settle("dataset version")
    await expect(page.get_by_text("FACETS")).to_be_visible()

    # The job drawer: a tag, its latest run, then its history of runs and one run's facets (SQL).
    ns, name = DEMO_JOB
    await ui.open(f"/lineage/job/{enc(ns)}/{enc(name)}?tableLevelNode={enc(f'job:{ns}:{name}')}")
    await expect(page.get_by_text("LATEST RUN")).to_be_visible()
    await pick_tag(ui, page.locator("#dataset-tags").first, "pii")
    assert httpx.get(f"{api}/namespaces/{enc(ns)}/jobs/{enc(name)}").json()["tags"] == ["pii"]
    await page.get_by_role("tab", name="RUN HISTORY").click()
    await ui.settle("run history")
    await page.locator("tbody tr").first.click()
    await ui.settle("job run")
    await expect(page.get_by_text("INSERT INTO").first).to_be_visible()

    # A reference dataset with column lineage: its drawer's column button opens column-level lineage.
    ns, name = COLUMN_DATASET
    await ui.open(f"/lineage/dataset/{enc(ns)}/{enc(name)}?tableLevelNode={enc(f'dataset:{ns}:{name}')}")
    await page.locator('a[href^="/datasets/column-level/"]:not([aria-disabled="true"])').first.click()
    await ui.settle("column lineage")
    await expect(page.get_by_text("default.cll_source1").first).to_be_visible()

    # Search from the header.
    await ui.open("/")
    await page.locator("#searchBar").click()
    await page.keyboard.type("revenue")
    await ui.settle("search")
    ns, name = DEMO_DATASET
    await expect(page.locator(f'a[href="/lineage/dataset/{ns}/{name}"]')).to_be_visible()

    # The drawer's delete, confirmed: the dataset leaves the lists (a soft delete).
    ns, name = REPORT
    await ui.open(f"/lineage/dataset/{enc(ns)}/{enc(name)}?tableLevelNode={enc(f'dataset:{ns}:{name}')}")
    await page.get_by_role("button", name="DELETE").click()
    await page.get_by_role("button", name="Continue").click()
    await ui.settle("delete")
    listed = httpx.get(f"{api}/namespaces/{enc(ns)}/datasets").json()["datasets"]
    assert name not in {d["name"] for d in listed}

    assert ui.failed() == [], "\n".join(f"{m} {u} -> {s}" for m, u, s in ui.failed())
    assert ui.errors == [], "\n".join(ui.errors)
    # Every kind of call the UI makes was made (names and ids replaced by their kind).
    kinds = {
        (
            m,
            re.sub(
                r"/(namespaces|datasets|jobs|runs|tags|fields|versions)/(?!runs/)[^/?]+",
                r"/\1/*",
                urlsplit(u).path,
            ),
        )
        for m, u, _ in ui.calls
    }
    assert kinds >= EVERY_CALL, EVERY_CALL - kinds
