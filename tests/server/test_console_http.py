"""The console's edges over plain HTTP (no browser): login and its cookie, CSRF, escaping,
Host/Origin, scoped tokens, read-only serving and the ``console`` command. Real server
processes with a real store and the real model."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tests.server.console_servers import (
    EVERYWHERE,
    ONLY_BETA,
    console_config,
    console_url,
    csrf_of,
    mcp_client,
    store,
    token_env,
)
from tests.server.mcp_scenario import call
from tests.server_process import READY_WITHIN, start_http_server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A writable server without any token (loopback, ``server.owner_token`` off): its MCP
    URL and its config."""
    config = console_config(tmp_path_factory.mktemp("open"), tokens=False)
    process, url = start_http_server(config)
    try:
        yield url, config
    finally:
        process.stop()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server with a token for every namespace and one for namespace beta: its MCP URL."""
    config = console_config(tmp_path_factory.mktemp("guarded"), tokens=True)
    process, url = start_http_server(config, env=token_env())
    try:
        yield url
    finally:
        process.stop()


async def test_without_tokens_the_console_opens_at_once_with_a_strict_httponly_cookie(
    open_server: tuple[str, Path],
) -> None:
    url, _config = open_server
    async with httpx.AsyncClient() as http:
        answer = await http.get(console_url(url), follow_redirects=True)
    assert answer.status_code == 200
    assert answer.url.path == "/console/search"
    cookie = answer.history[0].headers.get("set-cookie") or answer.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/console" in cookie
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    assert answer.headers["cache-control"] == "no-store"
    assert answer.headers["server-timing"].startswith("app;dur=")


async def test_a_post_without_the_right_csrf_token_is_refused_and_forgets_nothing(
    open_server: tuple[str, Path],
) -> None:
    url, _config = open_server
    (item,) = await store(url, [("the cache key includes the locale", "skill")])
    page = console_url(url) + f"/items/{item}"
    forget = console_url(url) + "/forget"
    async with httpx.AsyncClient() as http:
        token = csrf_of((await http.get(page)).text)
        missing = await http.post(forget, data={"item_id": item, "back": "/console/items"})
        wrong = await http.post(forget, data={"item_id": item, "csrf": token[::-1]})
        async with httpx.AsyncClient() as stranger:  # no session cookie at all
            foreign = await stranger.post(forget, data={"item_id": item, "csrf": token})
        still = await http.get(page)
        back = f"/console/items/{item}"
        done = await http.post(forget, data={"item_id": item, "csrf": token, "back": back})
        gone = await http.get(page)
    assert [missing.status_code, wrong.status_code, foreign.status_code] == [403, 403, 403]
    assert "CSRF" in missing.text
    assert still.status_code == 200 and "the cache key includes the locale" in still.text
    assert done.status_code == 303 and done.headers["location"] == back
    assert gone.status_code == 404


async def test_stored_markup_is_shown_as_text_and_never_runs(
    open_server: tuple[str, Path],
) -> None:
    url, _config = open_server
    hostile = '<script>alert("pwned")</script><img src=x onerror="alert(1)"> leaked tokens'
    (item,) = await store(url, [(hostile, "output")], tags=["<b>tag</b>"])
    async with httpx.AsyncClient() as http:
        found = await http.get(console_url(url) + "/search", params={"q": "leaked tokens"})
        shown = await http.get(console_url(url) + f"/items/{item}")
    for page in (found, shown):
        assert page.status_code == 200
        assert item in page.text
        assert "<script>alert" not in page.text and "<img src=x" not in page.text
        assert "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;" in page.text
        assert "<b>tag</b>" not in page.text and "&lt;b&gt;tag&lt;/b&gt;" in page.text


async def test_a_foreign_host_or_origin_is_refused(open_server: tuple[str, Path]) -> None:
    url, _config = open_server
    async with httpx.AsyncClient() as http:
        page = await http.get(console_url(url) + "/search")
        token = csrf_of(page.text)
        rebound = await http.get(console_url(url) + "/search", headers={"Host": "evil.example"})
        posted = await http.post(
            console_url(url) + "/feedback",
            data={"item_id": "x" * 32, "helpful": "1", "csrf": token},
            headers={"Origin": "http://evil.example"},
        )
    assert rebound.status_code == 421
    assert posted.status_code == 403


async def test_a_form_never_redirects_out_of_the_console(open_server: tuple[str, Path]) -> None:
    url, _config = open_server
    (item,) = await store(url, [("retry the upload with backoff", "skill")])
    async with httpx.AsyncClient() as http:
        token = csrf_of((await http.get(console_url(url) + "/search")).text)
        answers = [
            await http.post(
                console_url(url) + "/feedback",
                data={"item_id": item, "helpful": "1", "csrf": token, "back": back},
            )
            for back in ("https://evil.example/", "//evil.example/console", "/console/health")
        ]
        page = await http.get(console_url(url) + "/health")
    assert [a.headers["location"] for a in answers] == ["/console/", "/console/", "/console/health"]
    assert "its usefulness is now 0.80" in page.text  # three helpfuls: 0.5 -> 0.8


async def test_read_only_shows_no_write_button_and_refuses_writes(
    open_server: tuple[str, Path],
) -> None:
    url, config = open_server
    (item,) = await store(url, [("pin the compiler version in CI", "skill")])
    # Beside the writer: a read-only server takes no writer lock.
    process, reader = start_http_server(config, "--read-only")
    try:
        async with httpx.AsyncClient() as http:
            page = await http.get(console_url(reader) + "/search", params={"q": "compiler version"})
            refused = await http.post(
                console_url(reader) + "/feedback",
                data={"item_id": item, "helpful": "1", "csrf": csrf_of(page.text)},
            )
            item_page = await http.get(console_url(reader) + f"/items/{item}")
    finally:
        process.stop()
    assert page.status_code == 200 and item in page.text and "read-only" in page.text
    assert 'data-action="helpful"' not in page.text and 'action="/console/forget"' not in page.text
    assert refused.status_code == 403 and "read-only" in refused.text
    assert "0.50" in item_page.text  # the usefulness the refused write would have moved


async def test_a_page_without_a_session_sends_the_browser_to_the_login_form(
    guarded: str,
) -> None:
    async with httpx.AsyncClient() as http:
        answer = await http.get(console_url(guarded) + "/items?type=skill")
        posted = await http.post(console_url(guarded) + "/forget", data={"item_id": "x" * 32})
    assert answer.status_code == 303
    assert answer.headers["location"] == "/console/login?next=" + quote(
        "/console/items?type=skill", safe=""
    )
    assert posted.status_code == 303 and posted.headers["location"].startswith("/console/login")


async def test_a_wrong_token_is_refused_and_the_right_one_opens_a_fresh_session(
    guarded: str,
) -> None:
    login = console_url(guarded) + "/login"
    async with httpx.AsyncClient() as http:
        form = await http.get(login, params={"next": "/console/health"})
        # No session before a login: the form's CSRF token is bound to a pre-login cookie.
        assert "ralph_console" not in http.cookies
        assert "HttpOnly" in form.headers["set-cookie"]
        assert "SameSite=strict" in form.headers["set-cookie"]
        before = http.cookies["ralph_console_login"]
        token = csrf_of(form.text)
        forged = await http.post(login, data={"token": EVERYWHERE, "next": "/console/health"})
        wrong = await http.post(login, data={"token": "not-the-token-at-all", "csrf": token})
        still_out = await http.get(console_url(guarded) + "/health")
        right = await http.post(
            login, data={"token": EVERYWHERE, "csrf": token, "next": "/console/health"}
        )
        after = http.cookies["ralph_console"]
        inside = await http.get(console_url(guarded) + "/health")
    assert forged.status_code == 403  # a login form without its CSRF token
    assert wrong.status_code == 401 and "not accepted" in wrong.text
    assert still_out.status_code == 303
    assert right.status_code == 303 and right.headers["location"] == "/console/health"
    assert "HttpOnly" in right.headers["set-cookie"]
    assert after != before  # the id seen before logging in is never the trusted one
    assert "ralph_console_login" not in http.cookies
    assert inside.status_code == 200 and "log out" in inside.text


async def test_a_token_for_one_namespace_sees_only_that_namespace(guarded: str) -> None:
    beta = guarded.replace("/mcp", "/ns/beta/mcp")
    await store(beta, [("beta keeps its own notes", "skill")], token=ONLY_BETA)
    async with httpx.AsyncClient() as http:
        login = console_url(guarded) + "/login"
        token = csrf_of((await http.get(login)).text)
        await http.post(login, data={"token": ONLY_BETA, "csrf": token})
        own = await http.get(console_url(guarded) + "/items")
        other = await http.get(console_url(guarded) + "/items", params={"ns": "default"})
    assert own.status_code == 200
    assert "namespace <b>beta</b>" in own.text and "beta keeps its own notes" in own.text
    assert other.status_code == 404


async def test_a_script_reads_pages_with_the_bearer_header(guarded: str) -> None:
    async with httpx.AsyncClient() as http:
        good = await http.get(
            console_url(guarded) + "/health", headers={"Authorization": f"Bearer {EVERYWHERE}"}
        )
        bad = await http.get(
            console_url(guarded) + "/health", headers={"Authorization": "Bearer wrong-wrong-wrong"}
        )
    assert good.status_code == 200 and "semantic" in good.text
    assert bad.status_code == 303


def test_the_console_command_serves_and_opens_the_browser_at_the_console(tmp_path: Path) -> None:
    config = console_config(tmp_path, tokens=False)
    opened = tmp_path / "opened"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > {opened}\n', encoding="utf-8")
    browser.chmod(0o755)
    process, url = start_http_server(config, command=("console",), env={"BROWSER": f"{browser} %s"})
    try:
        deadline = time.monotonic() + READY_WITHIN
        while not opened.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        answer = httpx.get(console_url(url) + "/health", follow_redirects=True)
    finally:
        log = process.stop()
    assert opened.read_text(encoding="utf-8") == console_url(url)
    assert f"console {console_url(url)}" in log
    assert answer.status_code == 200


ODD = [
    "/search?q=x&max_items=abc",
    "/search?q=x&max_items=0",
    "/search?q=x&max_items=1000",
    "/search?q=x&min_score=2",
    "/search?q=x&min_score=nan",
    "/search?q=x&type=bogus&type=skill",
    "/search?q=" + "long " * 3000,
    "/items?page=-3",
    "/items?page=abc",
    "/items?page=99999",
    "/items?min_age=abc",
    "/items?min_age=10&max_age=5",
    "/items?min_age=1000000",
    "/items?iteration=-1",
    "/items?state=bogus",
    "/items?type=bogus",
    "/items?tag=" + "t" * 500,
    "/items?state=archived&tag=x",
    "/items?tag=,,a,%20,b",
    "/items/%3Cscript%3E",
    "/items/" + "a" * 32,
    "/iterations?page=abc",
    "/iterations?page=99999",
    "/health?ns=does-not-exist",
    "/health?ns=..%2F..%2Fetc",
]


async def test_odd_query_strings_get_a_page_never_a_server_error(
    open_server: tuple[str, Path],
) -> None:
    url, _config = open_server
    async with httpx.AsyncClient() as http:
        for path in ODD:
            answer = await http.get(console_url(url) + path)
            assert answer.status_code in (200, 400, 404), (path, answer.status_code)
            assert "<script>" not in answer.text.replace(
                '<script src="/console/static/console.js" defer></script>', ""
            ), path


def test_the_iterations_page_plots_the_ab_results_when_the_file_is_there(
    open_server: tuple[str, Path],
) -> None:
    url, config = open_server
    shipped = Path(__file__).resolve().parents[2] / "benchmarks/ab/results/results.json"
    kinds = json.loads(shipped.read_text(encoding="utf-8"))["kinds"]
    before = httpx.get(console_url(url) + "/iterations")
    target = config.parent / "benchmarks/ab/results/results.json"  # server.ab_results
    target.parent.mkdir(parents=True)
    shutil.copy(shipped, target)
    after = httpx.get(console_url(url) + "/iterations")
    assert "A/B: iterations per task kind" not in before.text
    assert "A/B: iterations per task kind" in after.text
    for name, kind in kinds.items():
        mean = kind["baseline"]["iterations_mean"]
        assert f"{name} without memory: {mean:.2f}" in after.text


async def test_the_items_page_filters_by_any_of_several_tags(
    open_server: tuple[str, Path],
) -> None:
    url, _config = open_server
    ids = {}
    for tag in ("pick-a", "pick-b", "pick-c"):
        (ids[tag],) = await store(url, [(f"a note tagged {tag}", "output")], tags=[tag])
    async with httpx.AsyncClient() as http:
        page = await http.get(console_url(url) + "/items", params={"tag": "pick-a, pick-b"})
    assert page.status_code == 200
    assert ids["pick-a"] in page.text and ids["pick-b"] in page.text
    assert ids["pick-c"] not in page.text
    assert "items 1-2 of 2" in page.text


async def test_the_item_page_marks_where_a_secret_was_redacted_and_health_counts_it(
    open_server: tuple[str, Path],
) -> None:
    url, _config = open_server
    token = "ghp_" + "Zr4Tq8Wm2Xn6Yp0Vb3Lc7Kd1Jf5Hg9Sa2Qe4"
    (item,) = await store(url, [(f"git push failed with <b>{token}</b> as the token", "error")])
    async with httpx.AsyncClient() as http:
        page = (await http.get(console_url(url) + f"/items/{item}", follow_redirects=True)).text
        health = (await http.get(console_url(url) + "/health", follow_redirects=True)).text
    assert token not in page
    # Highlighted, and what was around it still escaped.
    assert (
        '&lt;b&gt;<mark class="redacted" title="a secret was redacted here">'
        "[REDACTED:github_token]</mark>&lt;/b&gt;" in page
    )
    assert 'data-testid="redacted">github_token (secrets replaced' in page
    assert 'data-testid="redacted"' in health and "github_token" in health


async def _retrieved(url: str, item_id: str) -> int:
    async with mcp_client(url) as client:
        read = await client.read_resource(f"context://items/{item_id}")
    return int(json.loads(read.contents[0].text)["access_count"])  # type: ignore[union-attr]


async def test_searching_in_the_console_does_not_count_as_retrieving(
    open_server: tuple[str, Path],
) -> None:
    url, _config = open_server
    (item_id,) = await store(url, [("the flaky login test waits on a redis lock", "error")])
    async with httpx.AsyncClient() as http:
        for _ in range(3):
            page = await http.get(console_url(url) + "/search", params={"q": "redis lock"})
            assert page.status_code == 200 and item_id in page.text
    assert await _retrieved(url, item_id) == 0  # looking changed nothing
    async with mcp_client(url) as client:
        found = await call(client, "get_relevant_context", query="the redis lock test")
    assert item_id in {hit["item"]["id"] for hit in found["items"]}
    assert await _retrieved(url, item_id) == 1  # a loop's retrieval still counts
