"""Fuzz every tool of a real server (stdio) with generated calls; print and save the figures.

    python -m benchmarks.fuzz.run --calls 10000 --out benchmarks/fuzz/results

The server runs on a fresh store in a temporary folder, lifecycle off, the model installed
(``ralph-context model install``), the client writing as any client may (``wire``: lone
surrogates, any depth). Figures: calls, results, typed tool errors, calls refused as
unparseable (a JSON-RPC error naming why; every tool gets a lone surrogate and 1,000 levels
besides the generated calls), crashes (answers that are none of these), actor restarts,
whether the items stored before changed, and calls per tool.
``tests/server/test_fuzz.py`` runs the same with a few hundred calls.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import mcp
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from mcp import StdioServerParameters
from mcp.types import TextContent

from benchmarks.fuzz.calls import (
    SENTINELS,
    Outcome,
    arguments_for,
    check_call,
    check_raw_call,
    sentinel_state,
    unparseable_calls,
)
from benchmarks.fuzz.wire import JsonStdio

__all__ = ["Report", "fuzz", "main", "server_params"]

# Every pack named: every tool the server can list is fuzzed (the language model tools but,
# listed only with a model server).
CONFIG = (
    "learning:\n  mcp_context:\n    storage:\n      path: store\n"
    "    lifecycle:\n      auto_run: false\n"
    "    packs: [prompts, project, evaluation, curation]\n"
)


@dataclass
class Report:
    """What a fuzz run found."""

    calls: int
    results: int
    tool_errors: int
    refused: int
    unparseable_calls: int
    crashes: list[str]
    restarts: dict[str, int]
    status: str
    stored_items_changed: bool
    seconds: float
    per_tool: dict[str, int] = field(default_factory=dict)
    results_by_tool: dict[str, int] = field(default_factory=dict)


def server_params(folder: Path) -> StdioServerParameters:
    """``ralph-context serve`` over stdio on a fresh store in ``folder``."""
    config = folder / "ralph.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    # A developer's own model servers must not answer the evaluation tools here.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("LMSTUDIO_SERVERS", "OLLAMA_HOST", "TOGETHER_API_KEY", "HF_TOKEN")
    }
    env["RALPH_CONTEXT_CONFIG"] = str(config)
    return StdioServerParameters(
        command=sys.executable, args=["-m", "ralph_context", "serve"], env=env, cwd=str(folder)
    )


async def _call_json(client: mcp.Client, tool: str) -> dict[str, Any]:
    result = await client.call_tool(tool, {})
    text = " ".join(c.text for c in result.content if isinstance(c, TextContent))
    assert not result.is_error, text
    return dict(json.loads(text))


async def _store(client: mcp.Client, content: str, context_type: str, tags: list[str]) -> str:
    arguments = {"content": content, "context_type": context_type, "tags": tags}
    result = await client.call_tool("store_context", arguments)
    text = " ".join(c.text for c in result.content if isinstance(c, TextContent))
    assert not result.is_error, text
    return str(json.loads(text)["id"])


def _drive(
    portal: BlockingPortal, client: mcp.Client, wire: JsonStdio, calls: int
) -> tuple[Outcome, Counter[str], int]:
    """``calls`` generated calls, then :func:`unparseable_calls`; what they found, the
    generated calls per tool, and how many unparseable ones were made."""
    tools = {t.name: t for t in portal.call(client.list_tools).tools}
    names = sorted(tools)
    strategy = st.sampled_from(names).flatmap(
        lambda name: st.tuples(st.just(name), arguments_for(tools[name]))
    )
    outcome = Outcome()
    per_tool: Counter[str] = Counter()

    # No shrinking: a crash is recorded and the run goes on (shrinking would replay it).
    @settings(
        max_examples=calls,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def one_call(data: st.DataObject) -> None:
        name, arguments = data.draw(strategy)
        per_tool[name] += 1
        portal.call(check_call, client, name, arguments, outcome)

    one_call()
    unparseable = unparseable_calls(names)
    for name, arguments in unparseable:
        portal.call(check_raw_call, wire, name, arguments, outcome)
    return outcome, per_tool, len(unparseable)


def fuzz(params: StdioServerParameters, calls: int) -> Report:
    """Start the server, store the sentinels, make ``calls`` generated calls, report."""
    started = time.perf_counter()
    with (
        start_blocking_portal("asyncio") as portal,
        portal.wrap_async_context_manager(mcp.Client(wire := JsonStdio(params))) as client,
    ):
        ids = [portal.call(_store, client, *sentinel) for sentinel in SENTINELS]
        before = portal.call(sentinel_state, client, ids)
        outcome, per_tool, unparseable = _drive(portal, client, wire, calls)
        health = portal.call(_call_json, client, "health_check")
        after = portal.call(sentinel_state, client, ids)
    return Report(
        calls=outcome.calls,
        results=outcome.results,
        tool_errors=outcome.tool_errors,
        refused=outcome.refused,
        unparseable_calls=unparseable,
        crashes=outcome.crashes,
        restarts={name: int(actor["restarts"]) for name, actor in health["actors"].items()},
        status=str(health["status"]),
        stored_items_changed=after != before,
        seconds=round(time.perf_counter() - started, 1),
        per_tool=dict(sorted(per_tool.items())),
        results_by_tool=dict(sorted(outcome.results_by_tool.items())),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000, help="generated calls (>= 1)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/fuzz/results"))
    args = parser.parse_args(argv)
    if args.calls < 1:
        parser.error(f"--calls must be at least 1, got {args.calls}")
    with tempfile.TemporaryDirectory(prefix="ralph-fuzz-") as tmp:
        report = fuzz(server_params(Path(tmp)), args.calls)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(asdict(report), indent=2) + "\n")
    print(
        f"calls {report.calls}: results {report.results}, typed tool errors "
        f"{report.tool_errors}, refused unparseable {report.refused}, crashes "
        f"{len(report.crashes)}; actor restarts "
        f"{sum(report.restarts.values())}; status {report.status}; stored items changed: "
        f"{report.stored_items_changed}; {report.seconds} s"
    )
    for crash in report.crashes[:20]:
        print("  crash:", crash)
    clean = not report.crashes and not any(report.restarts.values())
    return 0 if clean and not report.stored_items_changed else 1


if __name__ == "__main__":
    sys.exit(main())
