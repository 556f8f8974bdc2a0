"""The web console in a real Chromium against a real `headwater serve` holding the OpenLineage
reference events and a small pipeline of our own, with every request to another host aborted:
search, a dataset and a job page, walking lineage, the as-of slider bringing back a dropped input,
a live change appearing in place, impact with its CSV, root cause, the API key prompt, names
holding Unicode's bidirectional controls shown as stored, names that only look alike told apart, a
megabyte of text in one word kept within the window, loops drawn inside the view, and a rank of
thousands of tables fitted readably with a "more" node to find the rest.

Each test saves a screenshot of its page; with HEADWATER_CONSOLE_SCREENSHOTS=<folder> the ones the
README shows (backend/web/console/screenshots/) go there too."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import re
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import pytest

from tests.corpus import EVENTS
from tests.factories import PRODUCER, dataset
from tests.pg import migrated_database
from tests.server import HeadwaterServer, running_headwater
from tests.web.conftest import CHROMIUM, CHROMIUM_ARGS, browser_missing
from tests.web.console_data import (
    BIDI_ARCHIVE,
    BIDI_DATASET,
    BIDI_FIELD,
    BIDI_JOB,
    BIDI_NAMESPACE,
    BIDI_OWNER,
    BIDI_TYPE,
    HEBREW_OWNER,
    NAMESPACE,
    bidi_pipeline,
    demo_pipeline,
    post_events,
    reference_events,
    run,
    table,
)

_missing = browser_missing() or (
    None if EVENTS.is_dir() else f"OpenLineage event corpus not found at {EVENTS}"
)
pytestmark = [
    pytest.mark.db,
    pytest.mark.slow,
    pytest.mark.skipif(_missing is not None, reason=_missing or ""),
]
playwright_api = pytest.importorskip(
    "playwright.async_api", reason="Playwright for Python is not installed (pip install -e '.[dev,e2e]')"
)
expect = playwright_api.expect

REVENUE = f"dataset:{NAMESPACE}:mart.revenue"
CUSTOMERS = f"dataset:{NAMESPACE}:shop.customers"
ORDERS = f"dataset:{NAMESPACE}:shop.orders"
REPORT = f"dataset:{NAMESPACE}:bi.revenue_report"
REFERENCE_DATASET = "dataset:file:/tmp/cll_test:default.cll_source1"
TIMEOUT = 15_000


def node(node_id: str) -> str:
    return f'[data-node="{node_id}"]'


@dataclass
class Console:
    page: Any
    url: str
    external: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    async def open(self, path: str) -> None:
        await self.page.goto(self.url + path)

    async def screenshot(self, name: str, folder: Path) -> None:
        await self.page.screenshot(path=str(folder / f"{name}.png"))
        wanted = os.environ.get("HEADWATER_CONSOLE_SCREENSHOTS")
        if wanted:
            Path(wanted).mkdir(parents=True, exist_ok=True)
            await self.page.screenshot(path=str(Path(wanted) / f"{name}.png"))


@pytest.fixture(scope="module")
async def console_database(pg_server: str) -> AsyncIterator[str]:
    async with migrated_database(pg_server, "headwater_web_console") as url:
        yield url


@pytest.fixture(scope="module")
def console_server(
    console_database: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HeadwaterServer]:
    """An open server (as a fresh install is) with the reference events and the demo pipeline."""
    log = tmp_path_factory.mktemp("console-server") / "server.log"
    with running_headwater(console_database, log, secured=False) as server:
        post_events(server.url, reference_events())
        events, _ = demo_pipeline(dt.datetime.now(dt.UTC))
        post_events(server.url, events)
        tag = (
            f'mutation {{ tagDataset(namespace: "{NAMESPACE}", name: "shop.customers", tag: "pii", '
            'field: "email") { __typename } }'
        )
        assert httpx.post(f"{server.url}/graphql", json={"query": tag}, timeout=10).status_code == 200
        yield server


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("console-screenshots")


async def browse(url: str) -> AsyncIterator[Console]:
    own = urlsplit(url).netloc
    async with playwright_api.async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = await browser.new_context(
                viewport={"width": 1280, "height": 800}, accept_downloads=True
            )
            page = await context.new_page()
            console = Console(page=page, url=url)

            async def only_the_server(route: Any) -> None:
                target = urlsplit(route.request.url)
                if target.scheme in {"data", "blob"} or target.netloc == own:
                    await route.continue_()
                else:
                    console.external.append(route.request.url)
                    await route.abort()

            await context.route("**/*", only_the_server)
            page.on("pageerror", lambda error: console.errors.append(str(error)))
            # The page's Content-Security-Policy must never have to block anything it does.
            page.on(
                "console",
                lambda m: console.errors.append(m.text) if "Content Security Policy" in m.text else None,
            )
            yield console
        finally:
            await browser.close()
    assert console.external == [], f"the console tried to reach other hosts: {console.external}"
    assert console.errors == [], console.errors


@pytest.fixture
async def console(console_server: HeadwaterServer) -> AsyncIterator[Console]:
    async for c in browse(console_server.url):
        yield c


async def test_search_then_open_a_dataset_of_the_reference_events(console: Console, shots: Path) -> None:
    page = console.page
    await console.open("/")
    box = page.get_by_role("combobox", name="Search by name")
    await expect(box).to_be_focused()
    await box.type("cll_source1")
    hits = page.locator("#hits li")
    await expect(hits.first).to_contain_text("default.cll_source1", timeout=TIMEOUT)
    await expect(page).to_have_url(f"{console.url}/?q=cll_source1")
    # Only jobs: the kind filter narrows the hits (and is kept in the URL).
    await page.get_by_label("Kind").select_option("JOB")
    await expect(hits).to_have_count(1, timeout=TIMEOUT)
    await expect(hits.first).to_contain_text("job")
    await page.get_by_label("Kind").select_option("")
    await expect(hits.first).to_contain_text("default.cll_source1", timeout=TIMEOUT)
    await console.screenshot("search", shots)

    # The namespace filter.
    await box.fill("revenue")
    await page.get_by_label("Namespace").select_option(NAMESPACE)
    await expect(hits.first).to_contain_text("revenue", timeout=TIMEOUT)
    await expect(hits.locator(".ns")).to_have_text([NAMESPACE] * await hits.count())
    await page.get_by_label("Namespace").select_option("")

    # The tag filter: only what is tagged so (a column: its field or its dataset).
    await box.fill("email")
    await expect(hits.filter(has_text="shop.customers.email")).to_have_count(1, timeout=TIMEOUT)
    await page.get_by_label("Tag").select_option("pii")
    await expect(hits).to_have_count(1, timeout=TIMEOUT)
    await expect(hits.first).to_contain_text("shop.customers.email")
    await expect(hits.first.locator(".tag")).to_have_text("pii")
    await expect(page).to_have_url(re.compile(r"[?&]tag=pii"))
    await page.get_by_label("Tag").select_option("")
    await box.fill("cll_source1")
    await expect(hits.first).to_contain_text("default.cll_source1", timeout=TIMEOUT)

    await box.press("Enter")  # the first hit is active: the dataset
    await expect(page.get_by_role("heading", name="default.cll_source1")).to_be_visible(timeout=TIMEOUT)
    schema = page.get_by_role("table", name="Schema")
    await expect(schema).to_contain_text("integer")
    await expect(schema).to_contain_text("string")
    await expect(page.get_by_role("table", name="Runs")).to_contain_text("COMPLETE")
    # The URL opens the same page on reload.
    await page.reload()
    await expect(page.get_by_role("heading", name="default.cll_source1")).to_be_visible(timeout=TIMEOUT)


async def test_dataset_and_job_pages_tell_what_changed_between_versions(
    console: Console, shots: Path
) -> None:
    page = console.page
    await console.open(f"/datasets?ns={NAMESPACE}&name=mart.revenue")
    versions = page.get_by_role("table", name="Versions")
    await expect(versions).to_contain_text("\u2212 email : varchar", timeout=TIMEOUT)
    await expect(versions).to_contain_text("first version")
    await console.screenshot("dataset", shots)

    await versions.get_by_role("link", name="build_revenue").first.click()
    await expect(page.get_by_role("heading", name="build_revenue")).to_be_visible(timeout=TIMEOUT)
    await expect(page.locator("figure pre.code")).to_contain_text("sum(total) AS revenue")
    job_versions = page.get_by_role("table", name="Versions")
    await expect(job_versions).to_contain_text("no longer reads shop.customers")
    await expect(job_versions).to_contain_text("code changed")
    # Each version's own SQL, and the lines the second one changed.
    await job_versions.get_by_text("SQL, what changed").click()
    changes = page.get_by_label("Code changes")
    await expect(changes.locator(".line-remove")).to_contain_text(
        ["JOIN shop.customers c USING (customer_id)"]
    )
    await expect(changes.locator(".line-add").first).to_contain_text("SELECT customer_id, sum(total)")
    await changes.scroll_into_view_if_needed()
    await console.screenshot("job", shots)

    # Parent and children, from the reference Airflow DAG.
    await console.open("/jobs?ns=airflow&name=BQ")
    children = page.locator("ul.children")
    await expect(children).to_contain_text("BQ.copy", timeout=TIMEOUT)
    await children.get_by_role("link", name="BQ.copy").click()
    await expect(page.get_by_text("Runs inside BQ")).to_be_visible(timeout=TIMEOUT)

    await console.open(f"/jobs?ns={NAMESPACE}&name=build_report")
    runs = page.get_by_role("table", name="Runs")
    await expect(runs).to_contain_text("FAIL", timeout=TIMEOUT)
    await expect(runs).to_contain_text("division by zero")
    await expect(runs).to_contain_text("40.0 s")


async def test_walk_lineage_and_replay_it_before_an_input_was_dropped(
    console: Console, shots: Path
) -> None:
    page = console.page
    await console.open(f"/datasets?ns={NAMESPACE}&name=mart.revenue")
    await page.get_by_role("link", name="Lineage", exact=True).click()
    await expect(page.locator(node(ORDERS))).to_be_visible(timeout=TIMEOUT)
    await expect(page.locator(node(REPORT))).to_be_visible()
    # A job whose latest run failed stands out, and says so when selected.
    dashboard = page.locator(node(f"job:{NAMESPACE}:refresh_dashboard"))
    await expect(dashboard).to_have_class(re.compile(r"\bstate-fail\b"))
    await dashboard.click()
    await expect(page.get_by_role("complementary", name="Selected node")).to_contain_text(
        "Latest run: FAIL"
    )
    # Upstream only: what reads the revenue table goes.
    await page.get_by_label("Direction").select_option("UPSTREAM")
    await expect(page.locator(node(REPORT))).to_have_count(0, timeout=TIMEOUT)
    await expect(page.locator(node(ORDERS))).to_be_visible()
    await page.go_back()
    await expect(page.locator(node(REPORT))).to_be_visible(timeout=TIMEOUT)
    # build_revenue's second version no longer reads customers: not in the current graph.
    await expect(page.locator(node(CUSTOMERS))).to_have_count(0)

    # Walk: select the report's job with the keyboard, then center the graph on it.
    job = page.locator(node(f"job:{NAMESPACE}:build_report"))
    await job.focus()
    await job.press("Enter")
    side = page.get_by_role("complementary", name="Selected node")
    await expect(side).to_contain_text("build_report")
    await side.get_by_role("link", name="Center the graph on it").click()
    await expect(page).to_have_url(
        f"{console.url}/lineage?node={quote(f'job:{NAMESPACE}:build_report', safe='')}&direction=BOTH&depth=3"
    )
    await expect(page.locator(f"{node(f'job:{NAMESPACE}:build_report')}.root")).to_be_visible(
        timeout=TIMEOUT
    )
    await page.go_back()
    await expect(page.locator(f"{node(REVENUE)}.root")).to_be_visible(timeout=TIMEOUT)

    # Collapse beyond build_revenue hides orders; showing it again brings it back.
    await page.locator(node(f"job:{NAMESPACE}:build_revenue")).click()
    await side.get_by_role("button", name="Collapse beyond it").click()
    await expect(page.locator(node(ORDERS))).to_have_count(0)
    await expect(page.locator(node(f"job:{NAMESPACE}:build_revenue"))).to_contain_text("+1")
    await side.get_by_role("button", name="Show what it hides").click()
    await expect(page.locator(node(ORDERS))).to_be_visible()

    # The as-of slider back to between the two versions: the dropped input comes back.
    slider = page.get_by_role("slider", name="As of time")
    await slider.focus()
    await slider.press("Home")
    for _ in range(3):  # each PageUp moves a tenth of the span (root's creation .. now)
        await slider.press("PageUp")
    await expect(page.get_by_test_id("asof-state")).to_contain_text("replaying")
    await expect(page.locator(node(CUSTOMERS))).to_be_visible(timeout=TIMEOUT)
    await expect(
        page.locator(f'[data-edge="{CUSTOMERS}\u2192job:{NAMESPACE}:build_revenue"]')
    ).to_have_count(1)
    assert "asOf=" in page.url
    await console.screenshot("lineage-as-of", shots)

    await page.get_by_role("button", name="Now").click()
    await expect(page.locator(node(CUSTOMERS))).to_have_count(0, timeout=TIMEOUT)
    await expect(page.get_by_test_id("asof-state")).to_have_text("current graph")


async def test_expand_a_node_with_the_keyboard(console: Console) -> None:
    page = console.page
    await console.open(f"/lineage?node={quote(ORDERS, safe='')}&direction=DOWNSTREAM&depth=1")
    revenue = page.locator(node(REVENUE))
    await expect(revenue).to_be_visible(timeout=TIMEOUT)
    await expect(page.locator(node(REPORT))).to_have_count(0)
    # Tab reaches the nodes; `e` on one adds its neighbours to the graph, highlighted.
    await page.get_by_role("slider", name="As of time").focus()
    for _ in range(30):  # the date field's parts, the graph's buttons and canvas, then the nodes
        await page.keyboard.press("Tab")
        if await revenue.evaluate("n => n === document.activeElement"):
            break
    else:
        raise AssertionError("mart.revenue is not reachable with Tab")
    await page.keyboard.press("e")
    await expect(page.locator(node(f"job:{NAMESPACE}:build_report"))).to_have_class(
        re.compile(r"\bfresh\b"), timeout=TIMEOUT
    )


async def test_a_posted_event_changes_the_graph_in_place(
    console: Console, console_server: HeadwaterServer, shots: Path
) -> None:
    page = console.page
    await console.open(f"/lineage?node={quote(REVENUE, safe='')}")
    await expect(page.locator(node(REPORT))).to_be_visible(timeout=TIMEOUT)
    await expect(page.get_by_test_id("live-status")).to_have_text("live", timeout=TIMEOUT)
    await page.evaluate("window.__notReloaded = true")

    # The subscription starts "from now" once the server has it: post until the change shows.
    revenue = table("mart.revenue", ("customer_id", "bigint"), ("revenue", "decimal"))
    deadline = time.monotonic() + 30
    while True:
        name = f"mart.forecast_{uuid.uuid4().hex[:6]}"
        events = run(f"build_{name}", dt.datetime.now(dt.UTC), [revenue], [table(name)])
        await asyncio.to_thread(post_events, console_server.url, events)
        added = page.locator(node(f"dataset:{NAMESPACE}:{name}"))
        try:
            await expect(added).to_be_visible(timeout=4_000)
            break
        except AssertionError:
            if time.monotonic() > deadline:
                raise
    await expect(added).to_have_class("node dataset fresh")
    await expect(
        page.locator(f'[data-edge="{REVENUE}\u2192job:{NAMESPACE}:build_{name}"]')
    ).to_have_class("edge fresh")
    await console.screenshot("lineage-live", shots)

    # A run that fails changes a job already on screen: it turns red in place. A node expanded
    # before the change stays (a live change fetches the walk and the expansions again).
    await page.locator(node(REPORT)).dblclick()
    dashboard = page.locator(node(f"job:{NAMESPACE}:refresh_dashboard"))
    await expect(dashboard).to_be_visible(timeout=TIMEOUT)
    report = table("bi.revenue_report", ("revenue", "decimal"))
    failed = run("build_report", dt.datetime.now(dt.UTC), [revenue], [report], state="FAIL")
    await asyncio.to_thread(post_events, console_server.url, failed)
    build_report = page.locator(node(f"job:{NAMESPACE}:build_report"))
    await expect(build_report).to_have_class(re.compile(r"\bstate-fail\b"), timeout=TIMEOUT)
    await expect(build_report).to_have_class(re.compile(r"\bfresh\b"))
    await expect(dashboard).to_be_visible()
    assert await page.evaluate("window.__notReloaded === true")


async def test_impact_of_a_change_grouped_explained_and_exported(
    console: Console, console_server: HeadwaterServer, shots: Path
) -> None:
    page = console.page
    # Names and owners come from whoever sends events: one starting like a spreadsheet formula
    # must reach the CSV as text.
    formula = table("=1+1", owner="@evil")
    export = run("export_formulas", dt.datetime.now(dt.UTC), [table("bi.revenue_report")], [formula])
    await asyncio.to_thread(post_events, console_server.url, export)
    await console.open(f"/impact?node={quote(ORDERS, safe='')}")
    # (The live test may have added readers of mart.revenue: counts are not fixed here.)
    await expect(page.get_by_test_id("impact-summary")).to_contain_text("job(s)", timeout=TIMEOUT)
    await expect(page.get_by_role("heading", name="4 hop(s) away")).to_be_visible()
    report_row = page.get_by_role("row").filter(has_text="bi.revenue_report")
    await report_row.get_by_role("button", name="why?").click()
    path = page.get_by_role("list", name="Path to bi.revenue_report")
    await expect(path.get_by_role("listitem")).to_have_text(
        ["shop.orders", "build_revenue", "mart.revenue", "build_report", "bi.revenue_report"]
    )
    await page.get_by_label("Group by").select_option("namespace")
    await expect(page.get_by_role("heading", name=f"{NAMESPACE} (", level=2)).to_be_visible()
    # By owner, from the ownership facets: the report's team, the revenue table's team, the rest.
    await page.get_by_label("Group by").select_option("owner")
    await expect(page.get_by_role("heading", name="team:bi (1)", level=2)).to_be_visible()
    await expect(page.get_by_role("heading", name="team:finance (1)", level=2)).to_be_visible()
    await expect(page.get_by_role("heading", name="no owner named (", level=2)).to_be_visible()
    assert "by=owner" in page.url
    await console.screenshot("impact", shots)

    async with page.expect_download() as download_info:
        await page.get_by_role("button", name="Download CSV").click()
    download = await download_info.value
    assert download.suggested_filename == "impact.csv"
    lines = Path(await download.path()).read_text().splitlines()
    assert lines[0] == "distance,type,namespace,name,field,owners,id,path"
    report = next(
        line for line in lines if line.startswith(f"4,DATASET,{NAMESPACE},bi.revenue_report,,team:bi,")
    )
    assert report.endswith(
        f"{ORDERS} > job:{NAMESPACE}:build_revenue > {REVENUE} > job:{NAMESPACE}:build_report > {REPORT}"
    )
    assert len(lines) >= 5
    assert any(line.startswith(f"6,DATASET,{NAMESPACE},'=1+1,,'@evil,") for line in lines), lines


async def test_column_lineage_and_impact_follow_a_column(console: Console, shots: Path) -> None:
    page = console.page
    total = f"datasetField:{NAMESPACE}:shop.orders:total"
    report = f"datasetField:{NAMESPACE}:bi.revenue_report:revenue"
    await console.open(f"/lineage?node={quote(report, safe='')}")
    await expect(page.locator(node(total))).to_be_visible(timeout=TIMEOUT)
    await expect(page.locator(node(f"datasetField:{NAMESPACE}:mart.revenue:revenue"))).to_be_visible()
    await console.screenshot("lineage-columns", shots)

    await console.open(f"/impact?node={quote(total, safe='')}")
    await expect(page.get_by_test_id("impact-summary")).to_have_text(
        "2 downstream: 2 column(s)", timeout=TIMEOUT
    )
    row = page.get_by_role("row").filter(has_text="bi.revenue_report.revenue")
    await row.get_by_role("button", name="why?").click()
    await expect(
        page.get_by_role("list", name="Path to bi.revenue_report.revenue").get_by_role("listitem")
    ).to_have_text(["shop.orders.total", "mart.revenue.revenue", "bi.revenue_report.revenue"])


async def test_root_cause_lists_upstream_failures_and_changes(console: Console, shots: Path) -> None:
    page = console.page
    await console.open(f"/root-cause?node={quote(REPORT, safe='')}")
    table_ = page.get_by_role("table", name="Suspect changes")
    await expect(table_).to_contain_text("run failed", timeout=TIMEOUT)
    await expect(table_).to_contain_text("division by zero")
    await expect(table_).to_contain_text("new job version")
    await expect(table_).to_contain_text("schema changed")
    await console.screenshot("root-cause", shots)
    # Since after the last change (runs here end up to a minute after now): nothing, said as such.
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).isoformat()
    await console.open(f"/root-cause?node={quote(REPORT, safe='')}&since={quote(later)}")
    await expect(page.get_by_text("No failed run, new job version or schema change")).to_be_visible(
        timeout=TIMEOUT
    )


async def test_unknown_things_and_pages_have_clear_states(console: Console) -> None:
    page = console.page
    await console.open(f"/datasets?ns={NAMESPACE}&name=nope")
    await expect(page.get_by_text(f"No dataset nope in {NAMESPACE}.")).to_be_visible(timeout=TIMEOUT)
    await console.open(f"/lineage?node={quote('dataset:nowhere:nothing', safe='')}")
    await expect(page.get_by_role("alert")).to_be_visible(timeout=TIMEOUT)
    await console.open("/?q=zzzzzz_nothing")
    await expect(page.get_by_text("Nothing named like")).to_be_visible(timeout=TIMEOUT)
    await console.open("/nowhere")
    # Not a console route: the server's own 404, not the page.
    await expect(page.get_by_text("Not Found")).to_be_visible()


@pytest.fixture(scope="module")
def secured_server(
    console_database: str, console_server: HeadwaterServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HeadwaterServer]:
    """A server with an API key, on the database console_server filled."""
    log = tmp_path_factory.mktemp("console-secured") / "server.log"
    with running_headwater(console_database, log, api_key=secrets.token_urlsafe(16)) as server:
        yield server


async def test_the_console_asks_for_a_key_and_sends_it(secured_server: HeadwaterServer) -> None:
    async for console in browse(secured_server.url):
        page = console.page
        await console.open(f"/lineage?node={quote(REVENUE, safe='')}")
        dialog = page.get_by_role("dialog")
        await expect(dialog).to_contain_text("needs an API key", timeout=TIMEOUT)
        await dialog.get_by_label("API key").fill("wrong")
        await dialog.get_by_role("button", name="Use this key").click()
        await expect(page.get_by_role("dialog")).to_contain_text("not valid", timeout=TIMEOUT)
        await page.get_by_role("dialog").get_by_label("API key").fill(secured_server.api_key)
        await page.get_by_role("dialog").get_by_role("button", name="Use this key").click()
        await expect(page.locator(node(REPORT))).to_be_visible(timeout=TIMEOUT)
        # The websocket sends the key in connection_init: live updates are let in.
        await expect(page.get_by_test_id("live-status")).to_have_text("live", timeout=TIMEOUT)
        # Kept in the browser: a new page needs no prompt.
        await console.open(f"/datasets?ns={NAMESPACE}&name=mart.revenue")
        await expect(page.get_by_role("table", name="Schema")).to_contain_text(
            "revenue", timeout=TIMEOUT
        )
        await expect(page.get_by_role("dialog")).to_have_count(0)


BIDI_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
SALES = f"dataset:{BIDI_NAMESPACE}:{BIDI_DATASET}"
SALES_JOB = f"job:{BIDI_NAMESPACE}:{BIDI_JOB}"
SALES_FIELD = f"datasetField:{BIDI_NAMESPACE}:{BIDI_DATASET}:{BIDI_FIELD}"


def shown(name: str) -> str:
    """A name as the console shows it: each bidirectional control as a marker naming it."""
    return BIDI_CONTROLS.sub(lambda m: f"\u27e8U+{ord(m.group()):04X}\u27e9", name)


@pytest.fixture(scope="module")
def bidi_names(console_server: HeadwaterServer) -> None:
    post_events(console_server.url, bidi_pipeline(dt.datetime.now(dt.UTC)))


# Every piece of text a reader sees, as text or in a tooltip, a label or an option, that holds a
# bidirectional control (the URLs, data attributes and option values keep names as stored).
CONTROLS_SHOWN = """() => {
  const controls = /[\\u061C\\u200E\\u200F\\u202A-\\u202E\\u2066-\\u2069]/;
  const found = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (controls.test(n.data) && !n.parentElement.closest("script, style")) found.push(n.data);
  }
  for (const el of document.body.querySelectorAll("*")) {
    for (const attr of ["title", "aria-label", "placeholder", "alt"]) {
      const value = el.getAttribute(attr);
      if (value && controls.test(value)) found.push(`${attr}=${value}`);
    }
  }
  return found;
}"""

# Where each of ``parts`` (searched for in the element's text) starts on screen: the left edge of
# its first character, as laid out (after any reordering).
PLACES = """(el, parts) => {
  const nodes = [];
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n);
  const text = nodes.map((n) => n.data).join("");
  return parts.map((part) => {
    let at = text.indexOf(part);
    if (at < 0) return null;
    for (const n of nodes) {
      if (at < n.data.length) {
        const range = document.createRange();
        range.setStart(n, at);
        range.setEnd(n, at + 1);
        return range.getBoundingClientRect().left;
      }
      at -= n.data.length;
    }
    return null;
  });
}"""


async def assert_in_order(locator: Any, *parts: str) -> None:
    """``parts`` of the locator's text are laid out left to right, in the order given."""
    places = await locator.evaluate(PLACES, list(parts))
    assert None not in places, (parts, places)
    assert places == sorted(places), list(zip(parts, places, strict=True))


async def assert_no_control_shown(page: Any) -> None:
    assert await page.evaluate(CONTROLS_SHOWN) == [], page.url


async def test_names_with_bidirectional_controls_read_as_stored(
    console: Console, bidi_names: None, shots: Path
) -> None:
    page = console.page
    await console.open("/")
    await page.get_by_role("combobox", name="Search by name").fill("sales")
    hit = page.locator("#hits li").filter(has=page.locator(".kind-dataset"))
    await expect(hit.locator(".hit-name")).to_have_text(shown(BIDI_DATASET), timeout=TIMEOUT)
    await expect(hit.locator(".ns")).to_have_text(shown(BIDI_NAMESPACE))
    await assert_in_order(hit.locator(".hit-name"), "sales", "U+202E", "txt", "exe")
    await expect(page.get_by_label("Namespace").locator("option", has_text="lake")).to_have_text(
        shown(BIDI_NAMESPACE)
    )
    await assert_no_control_shown(page)

    await hit.get_by_role("link").click()
    heading = page.get_by_role("heading", level=1)
    await expect(heading).to_have_text(shown(BIDI_DATASET), timeout=TIMEOUT)
    await assert_in_order(heading, "sales", "U+202E", "txt", "exe")
    schema = page.get_by_role("table", name="Schema")
    await expect(schema).to_contain_text(shown(BIDI_FIELD))
    await expect(schema).to_contain_text(shown(BIDI_TYPE))
    facet = page.locator("details").filter(has=page.locator("summary", has_text="columnLineage"))
    await facet.locator("summary").click()  # the facet's JSON, names in it
    await expect(facet.locator("pre.json")).to_contain_text(shown(BIDI_FIELD))
    await assert_no_control_shown(page)
    await page.screenshot(path=str(shots / "bidi-dataset.png"))

    runs = page.get_by_role("table", name="Runs")
    await expect(runs).to_contain_text(f"cannot write {shown(BIDI_ARCHIVE)}: disk full")
    await runs.get_by_role("link", name=shown(BIDI_JOB)).first.click()
    await expect(page.get_by_role("heading", level=1)).to_have_text(shown(BIDI_JOB), timeout=TIMEOUT)
    versions = page.get_by_role("table", name="Versions")
    await expect(versions).to_contain_text(shown(BIDI_ARCHIVE))
    await assert_no_control_shown(page)

    # The graph: node labels, their tooltips and names for screen readers; the selected node.
    await console.open(f"/lineage?node={quote(SALES, safe='')}")
    sales = page.locator(node(SALES))
    await expect(sales).to_be_visible(timeout=TIMEOUT)
    await expect(sales.locator("text.label")).to_have_text(shown(BIDI_DATASET))
    await expect(sales.locator("text.sublabel")).to_have_text(shown(BIDI_NAMESPACE))
    await assert_in_order(sales.locator("text.label"), "sales", "U+202E", "txt", "exe")
    await expect(sales.locator("title")).to_have_text(shown(SALES))
    await expect(page.locator(node(SALES_JOB)).locator("text.label")).to_have_text(shown(BIDI_JOB))
    await sales.click()
    side = page.get_by_role("complementary", name="Selected node")
    await expect(side.get_by_role("heading")).to_have_text(shown(BIDI_DATASET))
    await expect(page.get_by_role("heading", level=1)).to_have_text(f"Lineage of {shown(SALES)}")
    await assert_no_control_shown(page)

    await console.open(f"/lineage?node={quote(SALES_FIELD, safe='')}")
    column = page.locator(node(SALES_FIELD))
    await expect(column.locator("text.label")).to_contain_text(shown(BIDI_FIELD), timeout=TIMEOUT)
    await expect(column.locator("text.sublabel")).to_have_text(shown(BIDI_DATASET))
    await assert_no_control_shown(page)

    # Impact: the owners' groups, a name's override and a right-to-left owner each kept to itself:
    # the count after the heading's name stays after it.
    await console.open(f"/impact?node={quote(SALES, safe='')}&by=owner")
    owner = page.get_by_role("heading", name=f"{shown(BIDI_OWNER)} (1)", level=2)
    await expect(owner).to_be_visible(timeout=TIMEOUT)
    await assert_in_order(owner, "team", "U+202E", "ops", "(1)")
    hebrew = page.get_by_role("heading", name=f"{HEBREW_OWNER} (1)", level=2)
    await expect(hebrew).to_be_visible()
    await assert_in_order(hebrew, HEBREW_OWNER, "(1)")
    archive_row = page.get_by_role("row").filter(has_text=shown(BIDI_ARCHIVE)).first
    await archive_row.get_by_role("button", name="why?").click()
    path = page.get_by_role("list", name=f"Path to {shown(BIDI_ARCHIVE)}").first
    await expect(path.get_by_role("listitem")).to_have_text(
        [shown(BIDI_DATASET), shown(BIDI_JOB), shown(BIDI_ARCHIVE)]
    )
    await assert_no_control_shown(page)
    await page.screenshot(path=str(shots / "bidi-impact.png"))
    # The CSV keeps every name as stored.
    async with page.expect_download() as download_info:
        await page.get_by_role("button", name="Download CSV").click()
    lines = Path(await (await download_info.value).path()).read_text(encoding="utf-8").splitlines()
    assert f"1,JOB,{BIDI_NAMESPACE},{BIDI_JOB},,,{SALES_JOB},{SALES} > {SALES_JOB}" in lines, lines
    archive = next(
        line for line in lines if line.startswith(f"2,DATASET,{BIDI_NAMESPACE},{BIDI_ARCHIVE},,")
    )
    assert f",{BIDI_OWNER}; {HEBREW_OWNER}," in archive or f",{HEBREW_OWNER}; {BIDI_OWNER}," in archive

    await console.open(f"/root-cause?node={quote(f'dataset:{BIDI_NAMESPACE}:{BIDI_ARCHIVE}', safe='')}")
    suspects = page.get_by_role("table", name="Suspect changes")
    await expect(suspects).to_contain_text(shown(BIDI_JOB), timeout=TIMEOUT)
    await expect(suspects).to_contain_text(f"cannot write {shown(BIDI_ARCHIVE)}: disk full")
    await assert_no_control_shown(page)

    # A page of a name that is not there says so, the name isolated.
    await console.open(f"/datasets?ns={quote(BIDI_NAMESPACE)}&name={quote(BIDI_DATASET + '2')}")
    missing = page.get_by_text("No dataset")
    await expect(missing).to_have_text(
        f"No dataset {shown(BIDI_DATASET)}2 in {shown(BIDI_NAMESPACE)}.", timeout=TIMEOUT
    )
    await assert_in_order(missing, "sales", "txt", "exe2", " in ", "lake", "eu.")
    await assert_no_control_shown(page)


# The box of an element on screen: left, top, right, bottom.
BOX = "el => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }"


async def assert_all_drawn_inside(page: Any) -> None:
    """Every node and edge of the graph lies within the visible canvas."""
    canvas = await page.get_by_test_id("lineage-svg").evaluate(BOX)
    outside = await page.locator("[data-node], [data-edge]").evaluate_all(
        f"""(els, canvas) => els
            .map((el) => [el.dataset.node || el.dataset.edge, ({BOX})(el)])
            .filter(([, b]) => b[0] < canvas[0] - 0.5 || b[1] < canvas[1] - 0.5
                || b[2] > canvas[2] + 0.5 || b[3] > canvas[3] + 0.5)""",
        canvas,
    )
    assert outside == [], (canvas, outside)


async def test_loops_are_drawn_as_loops_inside_the_view(
    console: Console, bidi_names: None, shots: Path
) -> None:
    page = console.page
    # Narrow enough that the fitted graph spans the canvas's width: nothing may stick out of it.
    await page.set_viewport_size({"width": 640, "height": 800})
    await console.open(f"/lineage?node={quote(SALES, safe='')}")
    loop = page.locator(f'[data-edge="{SALES_JOB}\u2192{SALES}"]')
    await expect(loop).to_have_count(1, timeout=TIMEOUT)
    await expect(page.locator(f'[data-edge="{SALES}\u2192{SALES_JOB}"]')).to_have_count(1)
    for fitted_by in ("opening", "the Fit button"):
        if fitted_by == "the Fit button":
            await page.get_by_role("button", name="Zoom in").click()
            await page.get_by_role("button", name="Fit").click()
        await assert_all_drawn_inside(page)
        # A loop: the way back from the job runs around both nodes, not over the way there.
        box = await loop.evaluate(BOX)
        ends = [await page.locator(node(n)).evaluate(BOX) for n in (SALES, SALES_JOB)]
        assert box[3] > max(e[3] for e in ends) + 5 or box[1] < min(e[1] for e in ends) - 5, (
            fitted_by,
            box,
            ends,
        )
        # ... out of the job's right side and into the dataset's left side.
        assert box[0] < ends[0][0], (fitted_by, box, ends)
        assert box[2] > ends[1][2], (fitted_by, box, ends)
    await page.screenshot(path=str(shots / "lineage-loop.png"))

    # A column derived from itself: a loop from the node back to it, beside it.
    await console.open(f"/lineage?node={quote(SALES_FIELD, safe='')}")
    self_loop = page.locator(f'[data-edge="{SALES_FIELD}\u2192{SALES_FIELD}"]')
    await expect(self_loop).to_have_count(1, timeout=TIMEOUT)
    await assert_all_drawn_inside(page)
    box = await self_loop.evaluate(BOX)
    column = await page.locator(node(SALES_FIELD)).evaluate(BOX)
    assert box[2] > column[2] + 10, (box, column)
    assert box[3] - box[1] > 10, (box, column)


# Names that read as "orders" though each is another dataset: a zero-width space after it, a
# Cyrillic o for its o, a space after it; and one with a newline, which HTML and SVG show as a space.
LOOKALIKE_NAMESPACE = "lookalike"
LOOKALIKES = {
    "orders": "orders",
    "orders\u200b": "orders\u27e8U+200B\u27e9",
    "\u043erders": "\u27e8U+043E\u27e9rders",
    "orders ": "orders\u27e8U+0020\u27e9",
    "orders\nbackup": "orders\u27e8U+000A\u27e9backup",
}
LOOKALIKE_JOB = f"job:{LOOKALIKE_NAMESPACE}:copy_orders"


@pytest.fixture(scope="module")
def lookalike_names(console_server: HeadwaterServer) -> None:
    datasets = [dataset(name, namespace=LOOKALIKE_NAMESPACE) for name in LOOKALIKES]
    events = run(
        "copy_orders",
        dt.datetime.now(dt.UTC),
        datasets[:1],
        datasets[1:],
        namespace=LOOKALIKE_NAMESPACE,
    )
    post_events(console_server.url, events)


async def test_names_that_only_look_alike_are_told_apart(
    console: Console, lookalike_names: None, shots: Path
) -> None:
    page = console.page
    await console.open(f"/?q=rders&kind=DATASET&ns={LOOKALIKE_NAMESPACE}")
    hits = page.locator("#hits .hit-name")
    await expect(hits).to_have_count(len(LOOKALIKES), timeout=TIMEOUT)
    assert sorted(await hits.all_inner_texts()) == sorted(LOOKALIKES.values())
    await page.screenshot(path=str(shots / "lookalike-search.png"))

    # Its page and its links keep the name as stored.
    zero_width = "orders\u200b"
    await page.locator("#hits li").filter(has_text="U+200B").get_by_role("link").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text(
        LOOKALIKES[zero_width], timeout=TIMEOUT
    )
    assert page.url.endswith(f"name={quote(zero_width)}")

    # In the graph too: each label and tooltip is its own.
    await console.open(f"/lineage?node={quote(LOOKALIKE_JOB, safe='')}")
    labels = page.locator("[data-node^='dataset:'] text.label")
    await expect(labels).to_have_count(len(LOOKALIKES), timeout=TIMEOUT)
    assert sorted(await labels.all_text_contents()) == sorted(LOOKALIKES.values())
    cyrillic = "\u043erders"
    await expect(
        page.locator(node(f"dataset:{LOOKALIKE_NAMESPACE}:{cyrillic}")).locator("title")
    ).to_have_text(f"dataset:{LOOKALIKE_NAMESPACE}:{LOOKALIKES[cyrillic]}")
    await page.screenshot(path=str(shots / "lookalike-graph.png"))


# What a careless producer may send as a description or an error message: a megabyte in one word.
LONG_TEXT = "x" * 1_000_000
LONG_DESCRIBED = "long.described"
LONG_FAILING = "long_failing"

# The page's scrollable size, as [width, height].
PAGE_SIZE = "() => [document.documentElement.scrollWidth, document.documentElement.scrollHeight]"


@pytest.fixture(scope="module")
def long_texts(console_server: HeadwaterServer) -> None:
    documentation = {
        "_producer": PRODUCER,
        "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/DocumentationDatasetFacet.json",
        "description": LONG_TEXT,
    }
    described = dataset(LONG_DESCRIBED, namespace=NAMESPACE, documentation=documentation)
    events = run(LONG_FAILING, dt.datetime.now(dt.UTC), [], [described], state="FAIL", error=LONG_TEXT)
    post_events(console_server.url, events)


async def test_a_megabyte_of_text_in_one_word_keeps_the_page_readable(
    console: Console, long_texts: None, shots: Path
) -> None:
    page = console.page
    viewport = page.viewport_size
    await console.open(f"/datasets?ns={NAMESPACE}&name={LONG_DESCRIBED}")
    head = page.locator(".page-head")
    show_all = head.get_by_role("button", name="show all 1,000,000 characters")
    await expect(show_all).to_be_visible(timeout=TIMEOUT)
    # The runs that wrote it, with the error, right below: the page is about a screen long, and no
    # wider than the window (it was 8.8 million pixels wide).
    runs = page.get_by_role("table", name="Runs")
    await expect(runs.get_by_role("button", name="show all 1,000,000 characters")).to_be_visible()
    width, height = await page.evaluate(PAGE_SIZE)
    assert width <= viewport["width"], width
    assert height < 3 * viewport["height"], height
    await page.screenshot(path=str(shots / "long-text.png"))

    # Asked for, the whole description, wrapped within the window.
    await show_all.click()
    await expect(show_all).to_have_count(0)
    assert len(await head.inner_text()) > len(LONG_TEXT)
    width, _ = await page.evaluate(PAGE_SIZE)
    assert width <= viewport["width"], width

    await console.open(f"/jobs?ns={NAMESPACE}&name={LONG_FAILING}")
    runs = page.get_by_role("table", name="Runs")
    await expect(runs.get_by_role("button", name="show all 1,000,000 characters")).to_be_visible(
        timeout=TIMEOUT
    )
    width, height = await page.evaluate(PAGE_SIZE)
    assert width <= viewport["width"], width
    assert height < 3 * viewport["height"], height


# A hub: one job writing thousands of tables (a dimension every report reads is the same shape). The
# server walks at most 2,000 nodes, so the graph holds a rank of 1,999 tables.
FANOUT_NAMESPACE = "fanout"
FANOUT_JOB = f"job:{FANOUT_NAMESPACE}:publish_partitions"
FANOUT = 3_000

# In the page: waits (a frame at a time) for the graph to be drawn, returns performance.now().
DRAWN = """async () => {
  const frame = () => new Promise((resolve) => requestAnimationFrame(resolve));
  while (!document.querySelector('[data-node].root')) await frame();
  await frame();
  return performance.now();
}"""
# In the page: clicks a node, waits (a frame at a time) for the side panel to name it; milliseconds.
CLICK = """async (el) => {
  const frame = () => new Promise((resolve) => requestAnimationFrame(resolve));
  const name = el.dataset.node.split(':').slice(2).join(':');
  const started = performance.now();
  el.dispatchEvent(new MouseEvent('click', { bubbles: true }));
  const named = () => [...document.querySelectorAll('aside h3')].some((h) => h.textContent.includes(name));
  while (!named()) await frame();
  await frame();
  return performance.now() - started;
}"""


@pytest.fixture(scope="module")
def fan_out(console_server: HeadwaterServer) -> None:
    outputs = [dataset(f"part_{i:04d}", namespace=FANOUT_NAMESPACE) for i in range(FANOUT)]
    events = run("publish_partitions", dt.datetime.now(dt.UTC), [], outputs, namespace=FANOUT_NAMESPACE)
    post_events(console_server.url, events)


async def test_a_rank_of_thousands_fits_readably(console: Console, fan_out: None, shots: Path) -> None:
    page = console.page
    await console.open(f"/lineage?node={quote(FANOUT_JOB, safe='')}&direction=DOWNSTREAM&depth=1")
    drawn_ms = await page.evaluate(DRAWN)
    await expect(page.locator(".canvas-tools")).to_contain_text("2000 nodes")
    await page.get_by_role("button", name="Zoom in").click()
    await page.get_by_role("button", name="Fit").click()
    # Fitted, the whole drawing is in the canvas and its nodes are big enough to read: a node's box
    # was 1.8 px tall when a rank of 1,999 tables was one column (the labels 0.6 px).
    await assert_all_drawn_inside(page)
    sizes = await page.locator("[data-node] .label").evaluate_all(
        "els => els.map((el) => [el.closest('[data-node]').getBoundingClientRect().height,"
        " el.getBoundingClientRect().height])"
    )
    boxes = [box for box, _ in sizes]
    labels = [label for _, label in sizes]
    print(
        f"fan-out: drawn {drawn_ms:.0f} ms, {len(sizes)} nodes shown, box {min(boxes):.1f} px, "
        f"label {min(labels):.1f} px"
    )
    assert min(boxes) >= 24, min(boxes)
    assert min(labels) >= 9, min(labels)
    await console.screenshot("lineage-wide", shots)

    # A click on a table still answers at once.
    table_node = page.locator(f'[data-node^="dataset:{FANOUT_NAMESPACE}:"]').nth(3)
    latency = await table_node.evaluate(CLICK)
    print(f"fan-out: click answered in {latency:.0f} ms")
    assert latency < 250, latency

    # The tables not drawn are one "more" node: searched, one of them is drawn and selected.
    more = page.locator("[data-group]")
    await expect(more).to_contain_text("more")
    await more.focus()
    await more.press("Enter")
    finder = page.get_by_role("dialog", name=re.compile("more"))
    await finder.get_by_role("searchbox").fill("part_19")
    found = finder.get_by_role("button", name=re.compile("part_19"))
    await expect(found.first).to_be_visible()
    name = re.search(r"part_\d+", await found.first.inner_text())
    assert name, await found.first.inner_text()
    assert await page.locator(node(f"dataset:{FANOUT_NAMESPACE}:{name[0]}")).count() == 0
    await found.first.click()
    picked = page.locator(node(f"dataset:{FANOUT_NAMESPACE}:{name[0]}"))
    await expect(picked).to_have_class(re.compile(r"\bselected\b"), timeout=TIMEOUT)
    await expect(picked).to_be_focused()
    await expect(page.locator("aside h3")).to_contain_text(name[0])
    await expect(finder).to_have_count(0)
