"""The A/B harness's hazards: memory an earlier session left that can hurt, what memory
costs, and that the product keeps a hazard from costing iterations (with a control that
shows the same hazard does cost them when the product's defence is not in play)."""

from __future__ import annotations

import copy
import random
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.ab import prior
from benchmarks.ab.agents import ReaderAgent, marked, trusted
from benchmarks.ab.environment import Action
from benchmarks.ab.loop import BASELINE, MCP, Episode, run_episode
from benchmarks.ab.report import markdown
from benchmarks.ab.run import Plan, summarize
from benchmarks.ab.suite import Suite, SuiteError, Task, load_suite
from ralph_context.embeddings.local import LocalEmbedder

SUITE: dict[str, Any] = yaml.safe_load(
    """
name: hazards
tasks:
  - id: cache-fix
    kind: error_recovery
    title: Get the cache client connecting again
    prompt: The session cache stopped answering after the infrastructure move. Fix the client.
    facts:
      - id: host
        question: "Which host must the session cache client use now?"
        text: "Point the session cache client at cache-07.internal; the old cache host was retired."
        answer: "cache-07.internal"
        source: error
        error: "ConnectionRefusedError: the session cache host did not answer"
      - id: ttl
        question: "What TTL do cached sessions get?"
        text: "Cached sessions get a TTL of 1800s per the security policy."
        answer: "1800s"
        source: explore
    steps:
      - {description: "Make the cache client connect.", needs: [host]}
      - {description: "Set the session TTL.", needs: [ttl]}
      - {description: "Check both settings after a restart.", needs: [host, ttl]}
    distractors:
      - fact: ttl
        text: "The marketing pages are cached with a TTL of 86400s."
        answer: "86400s"
    hazards:
      - kind: stale_fix
        fact: host
        text: >-
          Fix for the session cache refusing connections: set CACHE_HOST to
          cache-05.internal in app/cache/client.py.
        answer: "cache-05.internal"
        file: app/cache/client.py
        code: deleted
"""
)


def suite(mutate: Any = None) -> Suite:
    data = copy.deepcopy(SUITE)
    if mutate is not None:
        mutate(data)
    return Suite.model_validate(data)


def hazard_task(**hazard: Any) -> Task:
    return suite(lambda d: d["tasks"][0]["hazards"][0].update(hazard)).tasks[0]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda h: h.pop("file"),
            "a stale_fix needs the 'file' it names, and its text must name it",
        ),
        (
            lambda h: h.update(kind="irrelevant_skill"),
            "an irrelevant_skill misleads on no fact: no 'fact', 'answer'",
        ),
        (
            lambda h: h.update(kind="misleading_note"),
            "an unrefuted misleading_note is corrected by the earlier session: its fact 'host'",
        ),
        (lambda h: h.update(answer="cache-09.internal"), "does not occur in text"),
        (lambda h: h.update(fact="nope"), "a stale_fix misleads on unknown fact 'nope'"),
    ],
)
def test_a_bad_hazard_is_refused_with_its_field(tmp_path: Path, mutate: Any, message: str) -> None:
    data = copy.deepcopy(SUITE)
    mutate(data["tasks"][0]["hazards"][0])
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(SuiteError, match=re.escape(message)):
        load_suite(path)


def test_a_hazard_answer_may_not_be_given_away_elsewhere(tmp_path: Path) -> None:
    data = copy.deepcopy(SUITE)
    data["tasks"][0]["steps"][0]["description"] = "Stop using cache-05.internal."
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(data))
    expected = "the answer 'cache-05.internal' of stale_fix of 'host'"
    with pytest.raises(SuiteError, match=re.escape(expected)):
        load_suite(path)


STALE_BLOCK = (
    "## Relevant Context from Previous Iterations\n\n"
    "### [ERROR] (python, 2 hours ago, app/cache/client.py changed 5 minutes ago)\n"
    "Fix: set CACHE_HOST to cache-05.internal in app/cache/client.py.\n\n"
    "### [ITERATION] (ralph loop, 1 minute ago)\nSessions get a TTL of 1800s."
)


async def test_the_reader_takes_nothing_from_a_block_marked_stale() -> None:
    task = suite().tasks[0]
    reader = ReaderAgent(random.Random(1), guess_rate=0.0)
    assert marked("### [ERROR] (python, 2 hours ago, app/x.py deleted)")
    assert not marked("### [ERROR] (python, 2 hours ago)")
    assert "cache-05" not in trusted(STALE_BLOCK) and "1800s" in trusted(STALE_BLOCK)
    needed = [task.fact("host")]
    assert await reader.act(STALE_BLOCK, task, needed) == Action.explore("host")
    unmarked = STALE_BLOCK.replace(", app/cache/client.py changed 5 minutes ago", "")
    assert await reader.act(unmarked, task, needed) == Action.attempt({"host": "cache-05.internal"})


async def play(task: Task, variant: str, workdir: Path, model: LocalEmbedder | None) -> Episode:
    return await run_episode(
        task,
        variant,
        seed=3,
        agent=lambda rng: ReaderAgent(rng, guess_rate=0.0),
        workdir=workdir,
        model=model,
        max_iterations=20,
    )


@pytest.mark.model
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("code", ["deleted", "changed"])
async def test_a_stale_fix_costs_no_iteration_but_would_without_the_code_check(
    tmp_path: Path, embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch, code: str
) -> None:
    task = hazard_task(code=code)
    baseline = await play(task, BASELINE, tmp_path / "b", None)
    memory = await play(task, MCP, tmp_path / "m", embedder)
    assert memory.success and memory.hazard_pushed == 0
    assert memory.iterations <= baseline.iterations
    assert sum(memory.injected_items) > 0 and len(memory.injected_tokens) == memory.iterations
    # Control: the code never moved on, so the fix is current as far as memory can tell: it
    # is pushed as fact, the reader acts on it, and the task takes longer than without memory.
    monkeypatch.setattr("benchmarks.ab.loop.code_moves_on", lambda task, project: None)
    unchecked = await play(task, MCP, tmp_path / "c", embedder)
    assert unchecked.hazard_pushed > 0 and unchecked.iterations > baseline.iterations


def test_the_earlier_session_is_stored_in_the_order_it_met_things() -> None:
    task = suite(
        lambda d: d["tasks"][0]["hazards"].append(
            {"kind": "irrelevant_skill", "text": "Rotate the log files before a release build."}
        )
    ).tasks[0]
    assert [h.kind.value for h in task.hazards] == ["stale_fix", "irrelevant_skill"]
    assert prior._hazard(task.hazards[1].kind, task.hazards[1].text).content_type == "skill"
    assert prior._hazard(task.hazards[0].kind, task.hazards[0].text).content_type == "error"


def fake(task: str, variant: str, iterations: int, **extra: Any) -> Episode:
    return Episode(task, "error_recovery", variant, 0, iterations=iterations, success=True, **extra)


def test_costs_and_hazards_are_summarized_by_hand() -> None:
    episodes = [fake("cache-fix", BASELINE, n) for n in (6, 8)]
    episodes += [
        fake(
            "cache-fix",
            MCP,
            n,
            injected_tokens=[0, 500, 500],
            injected_items=[0, 2, 2],
            useful_items=[0, 1, 2],
            hazard_pushed=pushed,
        )
        for n, pushed in ((5, 0), (7, 1))
    ]
    results = summarize(suite(), Plan(runs_per_task=2), episodes)
    kind = results["kinds"]["error_recovery"]
    memory = kind[MCP]
    assert memory["injected_tokens_per_task"] == 1000 and memory["injected_tokens_mean"] == 333.3
    assert memory["precision"] == 0.75 and memory["silent_iterations"] == pytest.approx(1 / 3, 1e-3)
    # 7 - 6 = 1 iteration saved per task, over 1,000 injected tokens per task.
    assert kind["iterations_saved"] == 1 and kind["saved_per_1k_tokens"] == 1
    stale = results["hazards"]["stale_fix"]
    assert stale["extra_iterations"] == -1 and stale["met"] is True
    assert stale["pushed_as_fact"] == pytest.approx(1 / 6, abs=1e-4)
    assert results["criteria"]["hazards_no_more_iterations"] is True
    text = markdown(results)
    assert (
        "| stale_fix | 1 | 7.00" in text and "| error_recovery | +1.00 | 333 | 1,000 | 75%" in text
    )
    worse = episodes[:2] + [fake("cache-fix", MCP, n) for n in (8, 9)]
    assert summarize(suite(), Plan(runs_per_task=2), worse)["hazards"]["stale_fix"]["met"] is False
