"""Only the store's owner reaches its HTTP server. Another local account (uid 65534, run
with ``setpriv``) can reach the loopback port but cannot read the owner token: every route
of ``serve --transport http`` and of the agents' ``serve --for-agents`` refuses its
requests, sent over the network from its own process. The owner's hooks, CLI and MCP
entries (as ``init`` writes them) work as they did, without a token typed anywhere.

The tests need root (CI runs as root) to switch to the other uid; elsewhere they skip.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp
import pytest
from mcp import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from ralph_context.server.agents.listener import listener_is_ours
from ralph_context.server.agents.project import ServerNote, read_server, write_server
from tests.agents.conftest import agent_env, stop_servers, wait_for_note
from tests.server.mcp_scenario import call
from tests.server_process import (
    CLI,
    INITIALIZE,
    environment,
    owner_client,
    run_cli,
    start_http_server,
    store_config,
)

OTHER = 65534
_SWITCH = ("setpriv", f"--reuid={OTHER}", f"--regid={OTHER}", "--clear-groups")
FACT = "Run make fix-tabs when the widget parser fails on tab characters"
PROMPT = "The widget parser fails on tab characters again: how do I fix it?"
# The same forget a 2026-07-28 client sends with no session (as the CLI's requests are).
FORGET = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {
        "name": "forget_context",
        "arguments": {"query": "widget parser"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "intruder", "version": "0"},
        },
    },
}
HOOK = {"hook_event_name": "UserPromptSubmit", "session_id": "intruder", "prompt": PROMPT}

# Run as the other uid by a Python it may execute: standard library only. It sends every
# probe (name, method, path, JSON body or form, extra headers) and prints what came back;
# the console's login is tried as a browser would (the form's cookie and CSRF token, then
# a guessed token), and last it tries to read the owner token.
_INTRUDER = r"""
import http.cookiejar, json, re, sys, urllib.error, urllib.parse, urllib.request
base, token_file, probes = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])

class Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None

jar = http.cookiejar.CookieJar()
opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), Stay)

def send(method, path, body=None, kind="application/json", headers=None):
    data = None
    if body is not None:
        data = (json.dumps(body) if kind == "application/json" else urllib.parse.urlencode(body))
        data = data.encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("Accept", "application/json, text/event-stream, text/html")
    if data is not None:
        request.add_header("Content-Type", kind)
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    try:
        with opener.open(request, timeout=30) as answer:
            return answer.status, answer.headers.get("location", ""), answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.headers.get("location", ""), refused.read().decode()

out = {}
for name, method, path, body, kind, headers in probes:
    status, location, text = send(method, path, body, kind, headers)
    out[name] = [status, location]
status, _, form = send("GET", "/console/login")
csrf = re.search(r'name="csrf" value="([^"]+)"', form).group(1)
data = {"token": "a-guess-at-the-owner-token-0123456789", "csrf": csrf, "next": "/console/"}
status, location, _ = send("POST", "/console/login", data, "application/x-www-form-urlencoded")
out["console login, a guessed token"] = [status, location]
status, location, _ = send("GET", "/console/search?q=widget")
out["console search after the guess"] = [status, location]
try:
    open(token_file).read()
    out["read the owner token"] = "read"
except OSError as exc:
    out["read the owner token"] = type(exc).__name__
print(json.dumps(out))
"""

_PROBES: list[tuple[str, str, str, object, str, dict[str, str]]] = [
    ("mcp initialize", "POST", "/mcp", INITIALIZE, "application/json", {}),
    ("mcp forget", "POST", "/mcp", FORGET, "application/json", {}),
    ("mcp, a guessed token", "POST", "/mcp", INITIALIZE, "application/json",
     {"Authorization": "Bearer a-guess-at-the-owner-token-0123456789"}),
    ("namespace mcp", "POST", "/ns/team/mcp", INITIALIZE, "application/json", {}),
    ("mcp get", "GET", "/mcp", None, "application/json", {}),
    ("hook", "POST", "/hooks/claude", HOOK, "application/json", {}),
    ("namespace hook", "POST", "/ns/default/hooks/codex", HOOK, "application/json", {}),
    ("replica writes", "POST", "/ns/default/replica/writes", {"items": []},
     "application/json", {}),
    ("keep alive", "GET", "/agents/alive", None, "application/json", {}),
    ("console search", "GET", "/console/search?q=widget", None, "", {}),
    ("console items", "GET", "/console/items", None, "", {}),
    ("console health", "GET", "/console/health", None, "", {}),
    ("console forget", "POST", "/console/forget", {"item_id": "x" * 32},
     "application/x-www-form-urlencoded", {}),
    ("console, a forged login link", "GET", "/console/login?code=1796000000.bad.bad", None,
     "", {}),
]  # fmt: skip
_REFUSED_BY_TOKEN = [
    "mcp initialize",
    "mcp forget",
    "mcp, a guessed token",
    "namespace mcp",
    "mcp get",
    "hook",
    "namespace hook",
    "replica writes",
    "keep alive",
]
_SENT_TO_LOGIN = ["console search", "console items", "console health", "console forget"]


def _can_switch_users() -> str | None:
    if os.geteuid() != 0:
        return "needs root to run a client as another uid (CI runs as root)"
    if shutil.which("setpriv") is None:
        return "needs setpriv (util-linux)"
    return None


pytestmark = pytest.mark.skipif(_can_switch_users() is not None, reason=str(_can_switch_users()))


def as_other(*command: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``command`` run as uid/gid 65534 with no supplementary groups."""
    return subprocess.run(
        [*_SWITCH, *command],
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        cwd="/",
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def other_python() -> str:
    """A Python the other uid may run (the venv's lives under root's 0700 home)."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"):
        if Path(candidate).exists() and as_other(candidate, "-c", "pass").returncode == 0:
            return candidate
    pytest.skip("no Python that uid 65534 may run")


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder every user may enter (pytest's are root's alone): the owner token's own
    folder and mode, not a parent, are what keep the other uid out."""
    folder = Path(tempfile.mkdtemp(prefix="only-the-owner-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def intrude(python: str, base_url: str, token_file: Path) -> dict[str, Any]:
    """Every probe, sent by the other uid's own process over the loopback network."""
    probes = json.dumps(_PROBES)
    done = as_other(python, "-c", _INTRUDER, base_url, str(token_file), probes)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def assert_refused_everywhere(found: dict[str, Any]) -> None:
    for name in _REFUSED_BY_TOKEN:
        assert found[name][0] == 401, (name, found[name])
    for name in _SENT_TO_LOGIN:
        status, location = found[name]
        assert status == 303 and location.startswith("/console/login"), (name, found[name])
    assert found["console, a forged login link"][0] == 401
    assert found["console login, a guessed token"][0] == 401
    # No session came of it: the console still sends the other uid to the login form.
    assert found["console search after the guess"][0] == 303
    assert found["read the owner token"] == "PermissionError"


def _owner_cli_text(config: Path, *arguments: str) -> str:
    """``ralph-context ARGUMENTS`` as the owner runs it beside the server: its stdout."""
    done = run_cli(config, *arguments, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _owner_cli(config: Path, *arguments: str) -> Any:
    return json.loads(_owner_cli_text(config, *arguments))


async def _entry_search(entry: dict[str, Any], headers: dict[str, str], query: str) -> str:
    """``get_relevant_context`` through an ``.mcp.json`` URL entry, as a client sends it."""
    with anyio.fail_after(60):
        async with (
            create_mcp_http_client(headers) as http,
            mcp.Client(streamable_http_client(entry["url"], http_client=http)) as client,
        ):
            return json.dumps(await call(client, "get_relevant_context", query=query))


def test_another_user_is_refused_on_every_route_of_the_http_server_and_the_owner_is_not(
    other_python: str, shared: Path
) -> None:
    config = store_config(shared / "ralph.yaml", shared / "store")
    process, url = start_http_server(config)
    try:

        async def remember() -> None:
            with anyio.fail_after(60):
                async with owner_client(url, config) as client:
                    await call(client, "store_context", content=FACT, context_type="skill")

        anyio.run(remember)
        token_file = shared / "store" / "owner.token"
        assert token_file.stat().st_mode & 0o777 == 0o600
        assert (shared / "store").stat().st_mode & 0o777 == 0o700
        found = intrude(other_python, url.removesuffix("/mcp"), token_file)
        assert_refused_everywhere(found)

        # The owner, untouched: the CLI beside the server (asking it, with the token it
        # reads itself), and the item the other uid tried to forget is still there.
        hits = _owner_cli(config, "search", PROMPT, "--json", "--min-score", "0")
        assert FACT in [hit["item"]["content"] for hit in hits["items"]]
        assert _owner_cli(config, "stats", "--json")["items"] == 1
        # The URL entry `init --transport http` writes: Claude Code runs its headersHelper
        # (a shell command, in the project) for the headers it sends.
        port = url.rsplit(":", 1)[1].removesuffix("/mcp")
        with config.open("a", encoding="utf-8") as more:
            more.write(f"    server:\n      port: {port}\n")
        _owner_cli_text(config, "init", "--project", str(shared), "--transport", "http")
        entry = json.loads((shared / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"][
            "ralph-context"
        ]
        assert entry["url"] == url and "owner.token" not in json.dumps(entry)
        helped = subprocess.run(
            entry["headersHelper"],
            shell=True,
            cwd=shared,
            env=environment(config),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert helped.returncode == 0, helped.stderr
        assert FACT in anyio.run(_entry_search, entry, json.loads(helped.stdout), PROMPT)
        refused = httpx.post(url, json=INITIALIZE, headers={"Accept": "application/json"})
        assert refused.status_code == 401  # and without the helper's header, not
    finally:
        process.stop()


def test_another_user_is_refused_by_the_agents_shared_server_and_the_owners_hooks_and_entry_are_not(
    other_python: str, shared: Path
) -> None:
    root = shared / "project"
    root.mkdir(mode=0o755)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    env = agent_env()
    env.pop("RALPH_CONTEXT_CONFIG", None)
    env.pop("RALPH_CONTEXT_TOKEN", None)
    subprocess.run(
        [*CLI, "init", "--project", str(root), "--agent", "claude"],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    entry = json.loads((root / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"][
        "ralph-context"
    ]
    assert entry["args"] == ["serve", "--shared"]
    try:
        # The agent's MCP entry, as init wrote it: a bridge that starts the project's
        # shared server and relays to it with the owner token it reads itself.
        async def remember() -> None:
            params = StdioServerParameters(
                command=entry["command"], args=entry["args"], env=env, cwd=str(root)
            )
            with anyio.fail_after(240):
                async with mcp.Client(params) as client:
                    await call(client, "store_context", content=FACT, context_type="skill")

        anyio.run(remember)
        wait_for_note(root)
        note = read_server(root)
        assert note is not None and note.owner_token is not None
        found = intrude(other_python, note.base_url, Path(note.owner_token))
        assert_refused_everywhere(found)

        # The owner's hook: the prompt's context, from the store the other uid could not
        # touch.
        payload = {**HOOK, "session_id": "owner", "cwd": str(root)}
        done = subprocess.run(
            [*CLI, "hook", "claude"],
            input=json.dumps(payload),
            env=env,
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0 and done.stdout, done.stderr
        context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "fix-tabs" in context
        assert not (root / ".agent" / "hooks.log").exists()  # no hook failed
    finally:
        stop_servers(root)


_SQUATTER = r"""
import socket, sys
with socket.socket() as server:
    server.bind(("127.0.0.1", 0))
    server.listen()
    print(server.getsockname()[1], flush=True)
    sys.stdin.read()
"""


def test_a_note_pointing_at_a_port_another_user_listens_on_is_not_trusted(
    other_python: str, tmp_path: Path
) -> None:
    """A note outlives a killed server; if another user listens on its port then, a hook
    must send it neither the prompt nor the token: the note is as good as gone."""
    squatter = subprocess.Popen(
        [*_SWITCH, other_python, "-c", _SQUATTER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    try:
        assert squatter.stdout is not None
        port = int(squatter.stdout.readline())
        base = f"http://127.0.0.1:{port}"
        assert not listener_is_ours(base)
        write_server(tmp_path, ServerNote(base, "/mcp", pid=os.getpid()))
        assert read_server(tmp_path) is None
    finally:
        squatter.communicate(input="", timeout=30)
    with socket.socket() as mine:  # the same note, the port the owner's: trusted
        mine.bind(("127.0.0.1", 0))
        mine.listen()
        ours = f"http://127.0.0.1:{mine.getsockname()[1]}"
        write_server(tmp_path, ServerNote(ours, "/mcp", pid=os.getpid()))
        found = read_server(tmp_path)
        assert found is not None and found.base_url == ours
