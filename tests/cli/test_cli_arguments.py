"""The CLI checks what it is given before it starts an engine, takes the shared options
before or after the subcommand, and shows help a person can read."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import mcp
import pytest
import typer
from typer.testing import CliRunner

import ralph_context.engine
from ralph_context.arguments import MIN_SCORE_HELP
from ralph_context.cli import app
from tests.server_process import CLI, stdio_server

runner = CliRunner()


@pytest.fixture
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """Help rendered 300 columns wide, so no line is folded inside a word."""
    monkeypatch.setenv("COLUMNS", "300")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class EngineStarted(Exception):
    """Raised in place of starting an engine: a check came too late."""


@pytest.fixture
def no_engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """Every engine the CLI tries to build is recorded, and refused."""
    built: list[object] = []

    class Refused:
        def __init__(self, *args: object, **kwargs: object) -> None:
            built.append(args)
            raise EngineStarted

    monkeypatch.setattr(ralph_context.engine, "Engine", Refused)
    yield built


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "ralph.yaml"
    path.write_text(f"learning:\n  mcp_context:\n    storage:\n      path: {tmp_path / 'store'}\n")
    return path


DEEP = json.dumps({"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": 1}}}}}}}}})


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["search", "x", "--limit", "99"], "--limit"),
        (["search", "x", "--limit", "0"], "--limit"),
        (["search", "x", "--min-score", "2"], "--min-score"),
        (["search", "x", "--type", "memo"], "--type"),
        (["search", "   "], "query"),
        (["search", "x", "--tag", "t" * 300], "tags[0]"),
        (["search", "x", "--where", "priority"], "--where"),
        (["store", "   "], "content"),
        (["store", "x", "--type", "memo"], "--type"),
        (["store", "x", "--metadata", "notjson"], "--metadata"),
        (["store", "x", "--metadata", DEEP], "metadata"),
        (["store", "x", "--iteration", "-1"], "--iteration"),
        (["store", "x", "--thread", "  "], "--thread"),
        (["store", "x", "--thread", "t" * 201], "--thread"),
        (["forget"], "selector"),
        (["forget", "--older-than", "-3"], "--older-than"),
        (["serve", "--transport", "ftp"], "--transport"),
        (["serve", "--port", "0"], "--port"),
        (["init", "--ralph", "v3"], "--ralph"),
        (["--log-level", "loud", "stats"], "--log-level"),
    ],
)
def test_a_bad_argument_is_refused_before_any_engine_starts(
    no_engine: list[object], config: Path, args: list[str], named: str
) -> None:
    done = runner.invoke(
        app, [*args, "--config", str(config)] if args[0] != "--log-level" else args
    )
    assert done.exit_code == 2, done.output
    assert named in done.output
    assert no_engine == []  # refused before the model and the store were touched
    assert not (config.parent / "store").exists()


def test_config_and_log_level_work_before_the_subcommand(config: Path) -> None:
    stored = subprocess.run(
        [*CLI, "--config", str(config), "--log-level", "debug", "store", "Deploys ran", "--json"],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    assert json.loads(stored.stdout)["id"]
    assert "[info" in stored.stderr  # the level given before the subcommand took effect
    assert (config.parent / "store").is_dir()  # and so did the config
    after = subprocess.run(
        [*CLI, "--config", str(config), "stats", "--json"],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    assert json.loads(after.stdout)["items"] == 1


def _commands(command: typer.core.TyperGroup, path: list[str]) -> Iterator[list[str]]:
    yield path
    for name, sub in getattr(command, "commands", {}).items():
        if not sub.hidden:
            yield from _commands(sub, [*path, name])


@pytest.mark.usefixtures("wide")
def test_help_shows_what_to_type_not_python_types() -> None:
    root = typer.main.get_command(app)
    seen = 0
    for path in _commands(root, []):  # type: ignore[arg-type]
        done = runner.invoke(app, [*path, "--help"])
        assert done.exit_code == 0, (path, done.output)
        placeholders = re.findall(
            r"<(?:bool|int|float|str|path|list\[[^\]]*\])>|\{[A-Za-z_]+\}", done.output
        )
        assert placeholders == [], (path, placeholders)
        seen += 1
    assert seen > 25  # every command and group was looked at


@pytest.mark.usefixtures("wide")
def test_choices_are_listed_as_choices() -> None:
    search = runner.invoke(app, ["search", "--help"]).output
    assert "[task|iteration|skill|file|output|error]" in search
    assert "[debug|info|warning|error]" in search
    serve = runner.invoke(app, ["serve", "--help"]).output
    assert "[stdio|http|sse]" in serve


@pytest.mark.usefixtures("wide")
async def test_min_score_reads_the_same_in_the_cli_and_the_mcp_tool(tmp_path: Path) -> None:
    cli_help = runner.invoke(app, ["search", "--help"]).output
    assert " ".join(MIN_SCORE_HELP.split()) in " ".join(cli_help.split())
    async with mcp.Client(stdio_server(tmp_path)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    schema = tools["get_relevant_context"].input_schema["properties"]["min_score"]
    assert schema["description"].startswith(MIN_SCORE_HELP)


def _modules_after(*arguments: str) -> list[str]:
    """The CLI's own modules and the settings' that ``ralph-context ARGUMENTS`` imported."""
    probe = (
        "import json, runpy, sys\n"
        "sys.argv = ['ralph-context', *sys.argv[1:]]\n"
        "try:\n"
        "    runpy.run_module('ralph_context', run_name='__main__')\n"
        "finally:\n"
        "    mine = sorted(m for m in sys.modules if m.startswith("
        "('ralph_context.cli.', 'ralph_context.config')))\n"
        "    sys.stderr.write('\\nMODULES ' + json.dumps(mine) + '\\n')\n"
    )
    done = subprocess.run(
        [CLI[0], "-c", probe, *arguments], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    last = done.stderr.rstrip().rsplit("\n", 1)[-1]
    assert last.startswith("MODULES "), done.stderr
    modules: list[str] = json.loads(last.removeprefix("MODULES "))
    return modules


def test_version_imports_no_command_and_no_settings() -> None:
    shared = ["ralph_context.cli.base", "ralph_context.cli.commands", "ralph_context.cli.output"]
    assert _modules_after("--version") == shared


def test_a_command_imports_its_own_group_only() -> None:
    groups = {"access", "bench", "hook", "items", "model", "serve", "store", "studio"}
    imported = {m.rsplit(".", 1)[-1] for m in _modules_after("model", "--help")}
    assert imported & groups == {"model"}


def test_help_at_80_columns_cuts_no_option_and_lists_the_main_commands_first() -> None:
    root = typer.main.get_command(app)
    for path in _commands(root, []):  # type: ignore[arg-type]
        done = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
        assert done.exit_code == 0, (path, done.output)
        options = done.output.split("Options:", 1)[-1].split("Commands:", 1)[0]
        assert "…" not in options, (path, options)
        assert max(map(len, done.output.splitlines())) <= 80, (path, done.output)
    listed = runner.invoke(app, ["--help"], env={"COLUMNS": "80"}).output
    commands = [line.split()[0] for line in listed.split("Commands:", 1)[1].splitlines() if line]
    assert commands[:5] == ["serve", "init", "search", "store", "forget"]
    assert "demo" in commands
    forget = runner.invoke(app, ["forget", "--help"], env={"COLUMNS": "80"}).output
    assert "[forgotten]" in forget  # a docstring's brackets are text, not markup
