"""Logging in to the console of a server that keeps the store's owner token (the default):
no session before a login, so anonymous requests cannot push a logged-in browser out; the
login form's CSRF protection without one; and ``ralph-context console``'s one-time link,
given to the browser through an owner-only file, never on its command line. Real server
processes and real ``ralph-context console`` processes."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import httpx
import pytest

from tests.server.console_servers import console_url, csrf_of
from tests.server_process import (
    CLI,
    READY_WITHIN,
    environment,
    owner_token,
    start_http_server,
)

_LINK = re.compile(r'http-equiv="refresh" content="0;url=([^"]+)"')


def _config(folder: Path) -> Path:
    config = folder / "ralph.yaml"
    config.write_text(
        "learning:\n  mcp_context:\n    storage:\n      path: store\n"
        "    lifecycle:\n      auto_run: false\n    skillbook:\n      enabled: false\n",
        encoding="utf-8",
    )
    return config


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A server with the default settings (the owner token, nothing configured): its MCP
    URL and its config."""
    config = _config(tmp_path_factory.mktemp("owner"))
    process, url = start_http_server(config)
    try:
        yield url, config
    finally:
        process.stop()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _log_in(http: httpx.AsyncClient, base: str, token: str) -> None:
    form = await http.get(base + "/login")
    answer = await http.post(base + "/login", data={"token": token, "csrf": csrf_of(form.text)})
    assert answer.status_code == 303, answer.text


async def test_a_thousand_and_one_anonymous_console_requests_leave_a_logged_in_session_logged_in(
    server: tuple[str, Path],
) -> None:
    url, config = server
    base = console_url(url)
    async with httpx.AsyncClient() as owner:
        await _log_in(owner, base, owner_token(config))
        assert (await owner.get(base + "/health")).status_code == 200

        async def anonymous(path: str) -> int:
            # A new client each: no cookie kept from one request to the next.
            async with httpx.AsyncClient() as stranger:
                return (await stranger.get(base + path)).status_code

        statuses: list[int] = []

        async def visit(n: int) -> None:
            statuses.append(await anonymous(f"/login?next=/console/items%3Fp%3D{n}"))

        with anyio.fail_after(300):
            for start in range(0, 1_001, 50):  # 50 at once
                async with anyio.create_task_group() as group:
                    for n in range(start, min(start + 50, 1_001)):
                        group.start_soon(visit, n)
            assert len(statuses) == 1_001 and set(statuses) == {200}
            # Pages without a session: sent to the form, nothing made for them either.
            assert {await anonymous("/search?q=x") for _ in range(20)} == {303}
        still = await owner.get(base + "/health")
        assert still.status_code == 200 and "log out" in still.text
        # The session's CSRF protection is the same as before: logging out takes its token.
        refused = await owner.post(base + "/logout", data={"csrf": "not-the-token"})
        assert refused.status_code == 403
        out = await owner.post(base + "/logout", data={"csrf": csrf_of(still.text)})
        assert out.status_code == 303
        assert (await owner.get(base + "/health")).status_code == 303


async def test_the_login_form_refuses_a_post_without_its_own_cookie_and_csrf_token(
    server: tuple[str, Path],
) -> None:
    url, config = server
    base, token = console_url(url), owner_token(config)
    async with httpx.AsyncClient() as mine, httpx.AsyncClient() as theirs:
        my_csrf = csrf_of((await mine.get(base + "/login")).text)
        their_csrf = csrf_of((await theirs.get(base + "/login")).text)
        assert my_csrf != their_csrf
        # Another browser's form token does not go with this browser's cookie (a page on
        # another site cannot log this browser in to a token of its choosing).
        crossed = await mine.post(base + "/login", data={"token": token, "csrf": their_csrf})
        async with httpx.AsyncClient() as bare:  # no pre-login cookie at all
            cookieless = await bare.post(base + "/login", data={"token": token, "csrf": my_csrf})
        assert crossed.status_code == 403 and cookieless.status_code == 403
        assert "ralph_console" not in mine.cookies
        right = await mine.post(base + "/login", data={"token": token, "csrf": my_csrf})
        assert right.status_code == 303 and "ralph_console" in mine.cookies


def _browser(folder: Path) -> tuple[Path, Path]:
    """A ``$BROWSER`` that writes the URL it was given (its command line) to a file."""
    opened = folder / "opened"
    browser = folder / "browser"
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > {opened}\n', encoding="utf-8")
    browser.chmod(0o755)
    return browser, opened


def _wait_for(path: Path) -> str:
    deadline = time.monotonic() + READY_WITHIN
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return path.read_text(encoding="utf-8")


def _follow(argument: str, base: str) -> str:
    """The login link in the file the browser was given; checks the file is the owner's."""
    assert argument.startswith("file://") and "code=" not in argument  # nothing on argv
    page = Path(urlsplit(argument).path)
    assert page.stat().st_mode & 0o777 == 0o600
    found = _LINK.search(page.read_text(encoding="utf-8"))
    assert found is not None
    link = found.group(1).replace("&amp;", "&")
    assert link.startswith(base + "/login?code=")
    return link


def _logs_in_once(link: str, base: str) -> None:
    with httpx.Client() as browser:
        entered = browser.get(link)
        assert entered.status_code == 303 and "ralph_console" in browser.cookies
        assert browser.get(base + "/health").status_code == 200
    with httpx.Client() as again:  # the link is spent
        replayed = again.get(link)
        assert replayed.status_code == 401 and "expired or was used" in replayed.text
        assert again.get(base + "/health").status_code == 303


def test_the_console_command_logs_the_browser_in_once_through_an_owner_only_file(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path)
    browser, opened = _browser(tmp_path)
    process, url = start_http_server(config, command=("console",), env={"BROWSER": f"{browser} %s"})
    try:
        argument = _wait_for(opened)
        base = console_url(url)
        _logs_in_once(_follow(argument, base), base)
    finally:
        log = process.stop()
    assert f"console {console_url(url)}" in log and "code=" not in log


def test_the_console_command_beside_a_running_server_opens_that_ones_console(
    server: tuple[str, Path], tmp_path: Path
) -> None:
    url, config = server
    browser, opened = _browser(tmp_path)
    done = subprocess.run(
        [*CLI, "console"],
        env={**environment(config), "BROWSER": f"{browser} %s"},
        cwd=config.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "starting" not in done.stderr  # no second server: the store has one
    base = console_url(url)
    _logs_in_once(_follow(opened.read_text(encoding="utf-8"), base), base)
    printed = subprocess.run(
        [*CLI, "console", "--no-browser"],
        env=environment(config),
        cwd=config.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    found = re.search(r"log in to the console once at (\S+)", printed.stderr)
    assert found is not None, printed.stderr
    _logs_in_once(found.group(1), base)
