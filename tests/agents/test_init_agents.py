"""``ralph-context init --agent claude|codex``: merged into the user's files, idempotent to the
byte, ``--dry-run`` writes nothing, ``--remove`` gives the user's files back byte for byte,
and a malformed file is refused with its name (exit 2, nothing written)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from ralph_context.integrations.agents.setup import CLAUDE_HOOKS, CODEX_HOOKS
from tests.cli.test_cli import cli

# A user's own settings, written as a person would: tabs, a one-line group, no final newline.
USER_SETTINGS = (
    '{\n\t"permissions": {"allow": ["Bash(ls)"]},\n\t"hooks": {\n\t\t"Stop": [\n'
    '\t\t\t{"hooks": [{"type": "command", "command": "notify-send done"}]}\n\t\t],\n'
    '\t\t"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}]'
    '\n\t},\n\t"model": "opus"\n}'
)
USER_MCP = '{"mcpServers": {"github": {"command": "gh-mcp", "args": []}}, "x": 1}\n'
USER_TOML = 'model = "o3"  # mine\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
USER_GITIGNORE = "node_modules/\n# build output\ndist/\n"


def init(project: Path, *args: str, check: bool = True) -> str:
    done = cli("init", "--project", str(project), *args, check=check)
    return done.stdout + done.stderr


def snapshot(project: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(project)): path.read_bytes()
        for path in sorted(project.rglob("*"))
        if path.is_file()
    }


def test_claude_merges_with_the_users_hooks_and_servers_and_remove_restores_their_bytes(
    tmp_path: Path,
) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(USER_SETTINGS, encoding="utf-8")
    (tmp_path / ".mcp.json").write_text(USER_MCP, encoding="utf-8")
    (tmp_path / ".gitignore").write_text(USER_GITIGNORE, encoding="utf-8")
    before = snapshot(tmp_path)

    init(tmp_path, "--agent", "claude")
    ignored = (tmp_path / ".gitignore").read_text(encoding="utf-8")
    assert ignored.startswith(USER_GITIGNORE) and ignored.endswith("\n/.agent/\n")
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text(encoding="utf-8"))
    assert settings["permissions"] == {"allow": ["Bash(ls)"]} and settings["model"] == "opus"
    hooks = settings["hooks"]
    assert list(hooks)[:2] == ["Stop", "PreToolUse"]  # the user's order kept, ours after
    assert hooks["Stop"][0] == {"hooks": [{"type": "command", "command": "notify-send done"}]}
    assert hooks["PreToolUse"][0]["hooks"][0]["command"] == "guard"
    for spec in CLAUDE_HOOKS:
        ours = hooks[spec.event][-1]
        assert ours.get("matcher") == spec.matcher
        (handler,) = ours["hooks"]
        assert handler["type"] == "command" and handler["timeout"] == spec.timeout
        assert handler["command"].endswith("ralph-context hook claude")
    text = (tmp_path / ".claude" / "settings.json").read_text(encoding="utf-8")
    assert '\n\t\t"SessionStart": [\n\t\t\t{\n\t\t\t\t"hooks": [' in text  # the file's tabs
    servers = json.loads((tmp_path / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]
    assert list(servers) == ["github", "ralph-context"]
    assert servers["ralph-context"]["args"] == ["serve", "--shared"]

    once = snapshot(tmp_path)
    assert "already set up" in init(tmp_path, "--agent", "claude")
    assert snapshot(tmp_path) == once  # byte-identical the second time

    init(tmp_path, "--agent", "claude", "--remove")
    assert snapshot(tmp_path) == before
    assert "nothing of ralph-context's" in init(tmp_path, "--agent", "claude", "--remove")
    assert snapshot(tmp_path) == before


def test_claude_on_a_bare_project_creates_both_files_and_remove_deletes_them(
    tmp_path: Path,
) -> None:
    (tmp_path / "README.md").write_text("mine\n", encoding="utf-8")
    init(tmp_path, "--agent", "claude")
    assert (tmp_path / ".claude" / "settings.json").is_file() and (tmp_path / ".mcp.json").is_file()
    assert (tmp_path / ".gitignore").read_text(encoding="utf-8").splitlines()[-1] == "/.agent/"
    init(tmp_path, "--agent", "claude", "--remove")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md"]  # .claude/ too


def test_remove_takes_only_our_handler_out_of_a_group_the_user_shares(tmp_path: Path) -> None:
    shared = {
        "hooks": {
            "Stop": [
                {
                    "hooks": [
                        {"type": "command", "command": "say done"},
                        {"type": "command", "command": "ralph-context hook claude"},
                    ]
                }
            ]
        }
    }
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(shared, indent=2) + "\n", encoding="utf-8")
    init(tmp_path, "--agent", "claude", "--remove")
    left = json.loads(path.read_text(encoding="utf-8"))
    assert left == {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}


def test_dry_run_prints_a_diff_per_file_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(USER_MCP, encoding="utf-8")
    before = snapshot(tmp_path)
    shown = cli("init", "--project", str(tmp_path), "--agent", "claude", "--dry-run").stdout
    assert "--- /dev/null\n+++ " in shown and "settings.json\n" in shown
    assert f"--- {tmp_path / '.mcp.json'}\n+++ {tmp_path / '.mcp.json'}\n" in shown
    # The user's one-line file gets our server on the same line, compact like theirs.
    assert ', "ralph-context": {"command": ' in shown
    assert snapshot(tmp_path) == before
    assert not (tmp_path / ".claude").exists()
    codex = cli("init", "--project", str(tmp_path), "--agent", "codex", "--dry-run").stdout
    assert "+[mcp_servers.ralph-context]\n" in codex
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("relative", "text", "problem"),
    [
        (".claude/settings.json", '{"hooks": {', "is not valid JSON"),
        (".claude/settings.json", '{"hooks": []}', '"hooks" must be an object, not a list'),
        (
            ".claude/settings.json",
            '{"hooks": {"Stop": {"hooks": []}}}',
            '"hooks.Stop" must be a list of hook groups, not an object',
        ),
        (".claude/settings.json", "[1, 2]", "must hold a JSON object, not a list"),
        (".mcp.json", '{"mcpServers": "none"}', '"mcpServers" must be an object, not a string'),
        (".claude/settings.json", '{"n": NaN}', "is not valid JSON"),
    ],
)
def test_a_malformed_claude_file_is_refused_with_its_name_and_nothing_is_written(
    tmp_path: Path, relative: str, text: str, problem: str
) -> None:
    path = tmp_path / relative
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    before = snapshot(tmp_path)
    done = cli("init", "--project", str(tmp_path), "--agent", "claude", check=False)
    assert done.returncode == 2
    message = " ".join(done.stderr.split())
    assert f"{path}: {problem}" in message and "nothing was written" in message
    assert snapshot(tmp_path) == before


def test_codex_merges_with_the_users_config_and_remove_restores_their_bytes(
    tmp_path: Path,
) -> None:
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text(USER_TOML, encoding="utf-8")
    user_hooks = '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "beep"}]}]}}'
    (tmp_path / ".codex" / "hooks.json").write_text(user_hooks, encoding="utf-8")
    before = snapshot(tmp_path)

    init(tmp_path, "--agent", "codex")
    config = tomllib.loads((tmp_path / ".codex" / "config.toml").read_text(encoding="utf-8"))
    assert config["model"] == "o3" and list(config["mcp_servers"]) == ["docs", "ralph-context"]
    assert config["mcp_servers"]["ralph-context"]["args"] == ["serve", "--shared"]
    hooks = json.loads((tmp_path / ".codex" / "hooks.json").read_text(encoding="utf-8"))["hooks"]
    assert list(hooks) == ["Stop"] + [spec.event for spec in CODEX_HOOKS if spec.event != "Stop"]
    assert hooks["SessionEnd"][0]["hooks"][0]["timeout"] <= 3  # Codex's cap
    assert "PostToolUseFailure" not in hooks  # not a Codex event

    once = snapshot(tmp_path)
    init(tmp_path, "--agent", "codex")
    assert snapshot(tmp_path) == once
    init(tmp_path, "--agent", "codex", "--remove")
    assert snapshot(tmp_path) == before


def test_a_url_entry_sends_the_owner_token_the_way_each_agent_reads_it(tmp_path: Path) -> None:
    # The server behind a URL requires the store's owner token (server.owner_token). Claude
    # Code runs the entry's headers helper; Codex reads the token from the environment.
    init(tmp_path, "--agent", "claude", "--transport", "http")
    claude = json.loads((tmp_path / ".mcp.json").read_text(encoding="utf-8"))
    entry = claude["mcpServers"]["ralph-context"]
    assert entry["url"] == "http://127.0.0.1:8765/mcp"
    assert " token owner --header" in entry["headersHelper"]
    init(tmp_path, "--agent", "codex", "--transport", "http")
    text = (tmp_path / ".codex" / "config.toml").read_text(encoding="utf-8")
    codex = tomllib.loads(text)["mcp_servers"]["ralph-context"]
    assert codex == {
        "url": "http://127.0.0.1:8765/mcp",
        "bearer_token_env_var": "RALPH_CONTEXT_TOKEN",
    }
    assert "owner.token" not in text and "Bearer" not in text  # no token in the project
    off = tmp_path / "open"
    off.mkdir()
    (off / "ralph.yaml").write_text(
        "learning:\n  mcp_context:\n    server:\n      owner_token: false\n", encoding="utf-8"
    )
    init(off, "--agent", "claude", "--transport", "http")
    plain = json.loads((off / ".mcp.json").read_text(encoding="utf-8"))
    assert plain["mcpServers"]["ralph-context"] == {
        "type": "http",
        "url": "http://127.0.0.1:8765/mcp",
    }


def test_codex_on_a_bare_project_is_created_and_removed_whole(tmp_path: Path) -> None:
    init(tmp_path, "--agent", "codex")
    assert {p.name for p in (tmp_path / ".codex").iterdir()} == {"config.toml", "hooks.json"}
    init(tmp_path, "--agent", "codex", "--remove")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("toml", "problem"),
    [
        ('[mcp_servers.ralph-context]\ncommand = "mine"\n', "already defines mcp_servers"),
        ('mcp_servers = { a = { command = "x" } }\n', "cannot take the mcp_servers table"),
        ("model = \n", "is not valid TOML"),
    ],
)
def test_a_codex_config_init_cannot_extend_is_refused_with_its_name(
    tmp_path: Path, toml: str, problem: str
) -> None:
    path = tmp_path / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(toml, encoding="utf-8")
    done = cli("init", "--project", str(tmp_path), "--agent", "codex", check=False)
    assert done.returncode == 2
    assert f"{path}: {problem}" in " ".join(done.stderr.split())
    assert [p.name for p in path.parent.iterdir()] == ["config.toml"]
    assert path.read_text(encoding="utf-8") == toml


def test_remove_is_refused_without_an_agent(tmp_path: Path) -> None:
    done = cli("init", "--project", str(tmp_path), "--remove", check=False)
    assert done.returncode == 2 and "--remove" in done.stderr
