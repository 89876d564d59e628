"""What the MCP face costs before any work: the tools ``tools/list`` returns, and their bytes,
for the default configuration and with each pack named.

Every tool listed is read by the client's model on every request; its bytes are the JSON of
the ``tools`` array as the client receives it (compact, UTF-8), measured through the real
``mcp`` client against the server ``serve`` builds. The README's table is this script's
``table()``, checked by ``tests/server/test_face.py``.

    python -m benchmarks.face.run     # prints the table, writes results/results.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import anyio
import mcp
from mcp.types import Tool

from ralph_context.config import Settings
from ralph_context.packs.toolkit import EngineHolder
from ralph_context.server.app import build_server

__all__ = ["Face", "listed_bytes", "measure", "table", "tools_of"]

# A model server the evaluation pack's language model tools need (never asked: listing
# tools starts no engine).
MODEL_SERVER = {"servers": [{"kind": "lmstudio"}], "register_from_env": False}
# Without one, whatever the environment holds (HF_TOKEN...).
NO_MODEL_SERVER = {"register_from_env": False}


@dataclass(frozen=True)
class Face:
    """One configuration's listing."""

    label: str
    packs: tuple[str, ...]
    model_server: bool
    tools: int
    bytes: int


def listed_bytes(tools: Sequence[Tool]) -> int:
    """The bytes of ``tools`` as ``tools/list`` sends them: compact JSON, UTF-8."""
    dumped = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
    return len(json.dumps(dumped, separators=(",", ":"), ensure_ascii=False).encode())


async def tools_of(settings: Settings) -> list[Tool]:
    """The tools the server for ``settings`` lists, through the real client."""
    async with mcp.Client(build_server(EngineHolder(settings))) as client:
        return list((await client.list_tools()).tools)


# (label, packs named, a model server configured)
CONFIGURATIONS: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("none (the default face)", (), False),
    ("`prompts`", ("prompts",), False),
    ("`project`", ("project",), False),
    ("`evaluation`", ("evaluation",), False),
    ("`evaluation` with a model server under `inference:`", ("evaluation",), True),
    ("`curation`", ("curation",), False),
    ("all four, with a model server", ("prompts", "project", "evaluation", "curation"), True),
)


async def measure() -> list[Face]:
    """Each of ``CONFIGURATIONS``' listings, from the defaults (no file, no environment's
    model server)."""
    faces = []
    for label, packs, model_server in CONFIGURATIONS:
        inference: Mapping[str, object] = MODEL_SERVER if model_server else NO_MODEL_SERVER
        settings = Settings().with_overrides(packs=list(packs), inference=inference)
        tools = await tools_of(settings)
        faces.append(Face(label, packs, model_server, len(tools), listed_bytes(tools)))
    return faces


def table(faces: Sequence[Face]) -> str:
    """The README's table: each configuration's tools and bytes, and what it adds."""
    core = faces[0]
    lines = [
        "| `packs:` | tools | bytes of `tools/list` | added to the default |",
        "| --- | --- | --- | --- |",
    ]
    for face in faces:
        added = "" if face is core else f"+{face.tools - core.tools}, +{face.bytes - core.bytes:,}"
        lines.append(f"| {face.label} | {face.tools} | {face.bytes:,} | {added} |")
    return "\n".join(lines) + "\n"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/face/results"))
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = parse()
    measured = anyio.run(measure)
    arguments.out.mkdir(parents=True, exist_ok=True)
    rows = [asdict(face) for face in measured]
    (arguments.out / "results.json").write_text(json.dumps(rows, indent=2) + "\n")
    print(table(measured), end="")
