"""The console in a real browser: Debian's chromium driven by Playwright, against a real
server (``ralph-context console --no-browser``) with a real store and the real model, items
stored through the real MCP client. Each test saves screenshots of the pages it saw under
its temporary folder.

Without chromium (or Playwright) these tests skip with the reason; in CI (``CI=true``) they
fail instead, since ``.ci/setup`` installs chromium.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import pytest

from tests.server.console_servers import (
    EVERYWHERE,
    console_config,
    console_url,
    mcp_client,
    store,
    token_env,
)
from tests.server.mcp_scenario import call
from tests.server_process import start_http_server

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

T = TypeVar("T")
CHROMIUM = "/usr/bin/chromium"
# Headless, and nothing that reaches beyond this machine.
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 60_000


def _missing() -> str | None:
    if not os.access(CHROMIUM, os.X_OK) and shutil.which("chromium") is None:
        return "no chromium: `apt-get install chromium` (.ci/setup does, as root)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "no playwright: pip install -e '.[dev]'"
    return None


@dataclass(frozen=True)
class Served:
    url: str
    config: Path
    console: str
    screens: Path


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    missing = _missing()
    if missing is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests must run in CI: {missing}")
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium"),
            args=ARGS,
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def served(browser: Browser, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``ralph-context console --no-browser`` with tokens, on a fresh store."""
    folder = tmp_path_factory.mktemp("console-browser")
    config = console_config(folder, tokens=True)
    process, url = start_http_server(config, "--no-browser", command=("console",), env=token_env())
    screens = folder / "screenshots"
    screens.mkdir()
    try:
        yield Served(url, config, console_url(url), screens)
    finally:
        process.stop()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh browser context (no cookies) and page."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.set_default_timeout(WAIT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


def shot(page: Page, served: Served, name: str) -> None:
    page.screenshot(path=str(served.screens / f"{name}.png"), full_page=True)


def log_in(page: Page, served: Served, token: str = EVERYWHERE, then: str = "/search") -> None:
    page.goto(served.console + then)
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/console/(?!login)"))


def beside(work: Callable[[], Awaitable[T]]) -> T:
    """Run ``work`` to completion in a thread of its own: Playwright's sync API keeps an
    event loop running in this one, where ``anyio.run`` cannot start another."""
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(anyio.run, work).result(timeout=WAIT_MS / 1000)


def stored(served: Served, entries: list[tuple[str, str]], **extra: Any) -> list[str]:
    async def go() -> list[str]:
        return await store(served.url, entries, token=EVERYWHERE, **extra)

    return beside(go)


def results(page: Page) -> list[str]:
    """The ids of the search results shown, best first."""
    found = page.get_by_test_id("result")
    return [str(found.nth(n).get_attribute("data-item-id")) for n in range(found.count())]


def test_a_wrong_token_is_refused_and_the_right_one_logs_in(page: Page, served: Served) -> None:
    from playwright.sync_api import expect

    page.goto(served.console + "/search?q=release+notes")
    expect(page).to_have_url(re.compile(r"/console/login\?next="))
    page.fill("input[name=token]", "not-the-token-not-the-token")
    page.click("button[type=submit]")
    expect(page.get_by_test_id("problem")).to_contain_text("not accepted")
    shot(page, served, "login-refused")
    page.fill("input[name=token]", EVERYWHERE)
    page.click("button[type=submit]")
    expect(page).to_have_url(served.console + "/search?q=release+notes")
    expect(page.get_by_test_id("summary")).to_contain_text("tier")


def test_items_stored_through_mcp_show_in_items_search_and_their_page(
    page: Page, served: Served
) -> None:
    from playwright.sync_api import expect

    ids = stored(
        served,
        [
            ("The flaky login test waits on a fixed sleep; wait for the redirect.", "error"),
            ("Use page.wait_for_url instead of sleeping in UI tests.", "skill"),
            ("Task: make the UI test suite stable on CI.", "task"),
        ],
        tags=["ui-tests"],
    )
    log_in(page, served, then="/items?tag=ui-tests")
    rows = page.get_by_test_id("item-row")
    expect(rows).to_have_count(3)
    assert {rows.nth(n).get_attribute("data-item-id") for n in range(3)} == set(ids)
    expect(page.get_by_test_id("summary")).to_contain_text("items 1-3 of 3")
    shot(page, served, "items")
    page.click(f"a[href='/console/items/{ids[1]}']")
    expect(page.get_by_test_id("content")).to_have_text(
        "Use page.wait_for_url instead of sleeping in UI tests."
    )
    shot(page, served, "item")
    page.goto(served.console + "/search?q=flaky+UI+test+sleeps+instead+of+waiting")
    expect(page.get_by_test_id("tier")).to_have_text("semantic")
    assert set(results(page)) == set(ids)
    first = page.get_by_test_id("result").first
    factors = {
        str(row.get_attribute("data-factor")): float(row.locator("td.num").inner_text())
        for row in first.locator("tr[data-factor]").all()
    }
    assert {"match", "semantic", "lexical", "recency", "feedback", "type_match"} <= set(factors)
    score = float(first.get_by_test_id("score").inner_text())
    product = factors["match"] * factors["recency"] * factors["feedback"] * factors["type_match"]
    assert score == pytest.approx(min(product, 1.0), abs=0.003)
    shot(page, served, "search")


def test_marking_an_item_helpful_lifts_it_in_the_ranking(page: Page, served: Served) -> None:
    from playwright.sync_api import expect

    stored(
        served,
        [
            ("Before restarting the web workers, run the database migrations.", "skill"),
            (
                "Run the database migrations first, then restart the web workers one by one.",
                "skill",
            ),
        ],
    )
    log_in(page, served, then="/search?q=run+the+database+migrations+and+restart+the+web+workers")
    before = results(page)
    assert len(before) == 2
    lifted = before[1]
    clicks = 0
    while results(page)[0] != lifted and clicks < 5:
        page.locator(f"[data-item-id='{lifted}'] button[data-action=helpful]").click()
        clicks += 1
        expect(page.get_by_test_id("flash")).to_contain_text(f"{0.5 + 0.1 * clicks:.2f}")
    assert results(page) == [lifted, before[0]], f"still second after {clicks} helpful clicks"
    lifted_row = page.locator(f"[data-item-id='{lifted}']")
    expect(lifted_row.get_by_test_id("usefulness")).to_have_text(f"{0.5 + 0.1 * clicks:.2f}")
    shot(page, served, "search-after-helpful")


def test_forgetting_an_item_removes_it_from_search(page: Page, served: Served) -> None:
    from playwright.sync_api import expect

    (doomed,) = stored(
        served, [("The staging database password rotates on Sunday nights.", "skill")]
    )
    query = "/search?q=when+does+the+staging+database+password+rotate"
    log_in(page, served, then=query)
    assert doomed in results(page)
    page.once("dialog", lambda dialog: dialog.accept())  # "Forget this item everywhere?"
    page.locator(f"[data-item-id='{doomed}'] button[data-action=forget]").click()
    expect(page.get_by_test_id("flash")).to_contain_text("Forgot")
    expect(page.locator(f"[data-item-id='{doomed}']")).to_have_count(0)
    page.goto(served.console + query)
    assert doomed not in results(page)
    page.goto(served.console + f"/items/{doomed}")
    expect(page.get_by_test_id("problem")).to_contain_text("no item")


def test_the_iterations_and_health_pages_show_the_loop(page: Page, served: Served) -> None:
    from playwright.sync_api import expect

    async def loop() -> None:
        async with mcp_client(served.url, EVERYWHERE) as client:
            for number, error in ((1, None), (2, "ImportError: no module named yaml"), (3, None)):
                await call(
                    client,
                    "store_iteration_result",
                    iteration=number,
                    success=error is None,
                    summary=f"iteration {number} of the loop",
                    error=error,
                    duration_ms=1000 * number,
                    tokens_used=1500,
                    cost=0.01,
                )
            await call(client, "get_relevant_context", query="yaml import error")

    beside(loop)
    log_in(page, served, then="/iterations")
    rows = page.get_by_test_id("iteration-row")
    expect(rows).to_have_count(3)
    expect(rows.nth(1)).to_contain_text("failed")
    expect(rows.nth(1)).to_contain_text("ImportError: no module named yaml")
    shot(page, served, "iterations")
    rows.nth(1).locator("a").click()  # the error item iteration 2 stored
    expect(page.get_by_test_id("item-row")).to_contain_text("no module named yaml")
    page.goto(served.console + "/health")
    expect(page.get_by_test_id("tier")).to_have_text("semantic")
    expect(page.get_by_test_id("status")).to_have_text("healthy")
    expect(page.get_by_test_id("latency")).to_contain_text("p99")
    shot(page, served, "health")


def test_the_namespace_switcher_moves_to_another_namespace(page: Page, served: Served) -> None:
    from playwright.sync_api import expect

    beta = served.url.replace("/mcp", "/ns/beta/mcp")

    async def go() -> list[str]:
        return await store(beta, [("beta's own deploy checklist", "task")], token=EVERYWHERE)

    (item,) = beside(go)
    log_in(page, served, then="/items")
    page.get_by_test_id("namespace").select_option("beta")  # the script submits the form
    expect(page).to_have_url(re.compile(r"ns=beta"))
    expect(page.get_by_test_id("item-row")).to_have_count(1)
    expect(page.locator(f"[data-item-id='{item}']")).to_contain_text("beta's own deploy")
    shot(page, served, "items-beta")


def test_a_read_only_console_shows_no_write_button_and_refuses_a_write(
    page: Page, served: Served
) -> None:
    from playwright.sync_api import expect

    (item,) = stored(served, [("Cache the wheel builds between CI runs.", "skill")])
    process, url = start_http_server(served.config, "--read-only", env=token_env())
    try:
        reader = Served(url, served.config, console_url(url), served.screens)
        log_in(page, reader, then="/search?q=cache+wheel+builds+in+CI")
        expect(page.locator(f"[data-item-id='{item}']")).to_have_count(1)
        expect(page.locator("button[data-action]")).to_have_count(0)
        expect(page.locator(".badge.ro")).to_have_text("read-only")
        shot(page, reader, "search-read-only")
        token = page.locator("meta[name=csrf-token]").get_attribute("content")
        refused = page.request.post(
            reader.console + "/feedback",
            form={"item_id": item, "helpful": "1", "csrf": str(token)},
            max_redirects=0,
        )
        assert refused.status == 403 and "read-only" in refused.text()
    finally:
        process.stop()


def test_items_stored_while_an_iteration_runs_are_counted_under_that_iteration(
    page: Page, served: Served
) -> None:
    async def loop() -> int:
        async with mcp_client(served.url, EVERYWHERE) as client:
            latest = int((await call(client, "health_check"))["current_iteration"])
            # Earlier tests on this server may have stored after its latest iteration:
            # those items belong to latest + 1, so that iteration is recorded first.
            latest += 1
            await call(
                client, "store_iteration_result", iteration=latest, success=True, summary="before"
            )
            # A loop stores during iteration N, then records N: N's items belong to N.
            for offset, contents in enumerate((["first"], ["second", "third"], []), 1):
                for content in contents:
                    await call(client, "store_context", content=content, context_type="output")
                await call(
                    client,
                    "store_iteration_result",
                    iteration=latest + offset,
                    success=True,
                    summary=f"stored {len(contents)}",
                )
            return latest

    latest = beside(loop)
    log_in(page, served, then="/iterations")
    counts: dict[int, int] = {}
    for row in page.get_by_test_id("iteration-row").all():
        cells = row.locator("td").all_inner_texts()
        counts[int(cells[0])] = int(cells[5])
    assert [counts[latest + n] for n in (1, 2, 3)] == [1, 2, 0], counts
    page.goto(served.console + f"/items?iteration={latest + 2}")
    shown = page.get_by_test_id("item-row").locator("td.content").all_inner_texts()
    assert sorted(shown) == ["second", "third"]


def test_a_search_card_agrees_with_the_items_list_and_an_unrated_item_reads_so(
    page: Page, served: Served
) -> None:
    from playwright.sync_api import expect

    (item,) = stored(served, [("The nightly backup job writes to bucket nightly-7.", "output")])
    log_in(page, served, then="/search?q=where+does+the+nightly+backup+go")
    card = page.locator(f"[data-testid=result][data-item-id='{item}']")
    # Looking does not change the data: the console's own search is not a retrieval.
    expect(card).to_contain_text("retrieved 0\u00d7")
    expect(card.locator("tr[data-factor=usefulness]")).to_contain_text("not rated yet")
    expect(card.locator("tr[data-factor=usefulness] svg")).to_have_count(0)  # no half bar
    expect(card.get_by_test_id("usefulness").locator("..")).to_contain_text("(not rated yet)")
    page.goto(served.console + "/items?type=output")
    row = page.locator(f"[data-testid=item-row][data-item-id='{item}']")
    expect(row.locator("td").nth(7)).to_have_text("0")  # the retrieved column agrees


def test_health_leaves_a_configured_off_actor_without_an_error_and_items_filter_by_iteration(
    page: Page, served: Served
) -> None:
    from playwright.sync_api import expect

    log_in(page, served, then="/health")
    inference = page.locator("tr[data-actor=inference]")
    expect(inference).to_contain_text("not_configured")
    expect(inference.get_by_test_id("last-error")).to_have_text("")
    page.goto(served.console + "/items")
    # One filter for when an item was stored: its iteration, not an age range beside it.
    expect(page.locator("form.filters input[type=number]")).to_have_count(1)
    expect(page.locator("form.filters input[name=iteration]")).to_have_count(1)
