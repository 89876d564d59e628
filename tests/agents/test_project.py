"""Which project a hook is in (git's main worktree: subfolders and linked worktrees share
one), the spool of captures kept while no server answers (redacted before it is written,
owner-only, taken once), and the plain-socket POST the hook speaks."""

from __future__ import annotations

import json
import socket
import stat
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ralph_context.server.agents.post import post
from ralph_context.server.agents.project import (
    SPOOL_FILE,
    ServerNote,
    agent_folder,
    bearer_token,
    project_root,
    read_server,
    spool,
    take_spool,
    write_server,
)


def test_subfolders_and_linked_worktrees_are_the_main_worktrees_project(tmp_path: Path) -> None:
    main = tmp_path / "repo"
    (main / "src" / "deep").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(main)], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(main),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "first",
        ],
        check=True,
    )
    linked = tmp_path / "linked"
    subprocess.run(
        ["git", "-C", str(main), "worktree", "add", "-q", "-b", "side", str(linked)], check=True
    )
    assert project_root(main / "src" / "deep") == main.resolve()
    assert project_root(linked) == main.resolve()
    outside = tmp_path / "plain"
    outside.mkdir()
    assert project_root(outside) == outside.resolve()


def test_the_spool_is_redacted_owner_only_and_taken_once(tmp_path: Path) -> None:
    key = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
    payload = {"hook_event_name": "PostToolUseFailure", "error": f"401 with {key}"}
    assert spool(tmp_path, "claude", payload)
    path = agent_folder(tmp_path) / SPOOL_FILE
    assert key not in path.read_text(encoding="utf-8")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(agent_folder(tmp_path).stat().st_mode) == 0o700
    (taken,) = take_spool(tmp_path)
    assert taken[0] == "claude" and "[REDACTED:stripe_key]" in taken[1]["error"]
    assert take_spool(tmp_path) == [] and not path.exists()


def test_the_note_round_trips_and_the_token_comes_from_the_env_or_the_file(
    tmp_path: Path,
) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("# comment\nonly-b-token b\nshared-token default,b\n", encoding="utf-8")
    tokens.chmod(0o600)  # as `ralph-context token new` writes it
    write_server(tmp_path, ServerNote("http://127.0.0.1:9", "/mcp", 42, str(tokens)))
    note = read_server(tmp_path)
    assert note is not None and (note.base_url, note.pid) == ("http://127.0.0.1:9", 42)
    assert bearer_token(note, {}) == "shared-token"
    assert bearer_token(note, {"RALPH_CONTEXT_TOKEN": "from-env"}) == "from-env"
    (agent_folder(tmp_path) / "agent-server.json").write_text("{not json", encoding="utf-8")
    assert read_server(tmp_path) is None
    # Only a token that grants the note's namespace (or every one) is sent.
    write_server(tmp_path, ServerNote("http://127.0.0.1:9", "/ns/b/mcp", 42, str(tokens)))
    b = read_server(tmp_path)
    assert b is not None and bearer_token(b, {}) == "only-b-token"


def test_a_note_the_hook_did_not_write_is_not_trusted(tmp_path: Path) -> None:
    """A note that came with a cloned repository (mode 0644), or one naming another host,
    would send the user's prompts (and a token) elsewhere: it is ignored."""
    write_server(tmp_path, ServerNote("http://127.0.0.1:9", "/mcp", 42))
    note_file = agent_folder(tmp_path) / "agent-server.json"
    note_file.chmod(0o644)
    assert read_server(tmp_path) is None
    write_server(tmp_path, ServerNote("http://evil.example:80", "/mcp", 42, "/etc/passwd"))
    assert read_server(tmp_path) is None
    write_server(tmp_path, ServerNote("http://[::1]:9", "/mcp", 42))
    assert read_server(tmp_path) is not None


def test_post_speaks_http_to_a_real_server_and_gives_up_at_its_deadline() -> None:
    seen: list[bytes] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return

        def do_POST(self) -> None:
            seen.append(self.rfile.read(int(self.headers["Content-Length"])))
            body = json.dumps({"context": "é"}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        status, body = post(base, "/hooks/claude", b'{"a": 1}', {}, 5.0)
        assert (status, json.loads(body)) == (200, {"context": "é"}) and seen == [b'{"a": 1}']
    finally:
        server.shutdown()
        server.server_close()
    hung = socket.create_server(("127.0.0.1", 0))
    try:
        with pytest.raises(TimeoutError):
            post(f"http://127.0.0.1:{hung.getsockname()[1]}", "/x", b"{}", {}, 0.3)
    finally:
        hung.close()
