"""The A/B harness: suite loader, environment rules, the reader, metrics and statistics.

Statistics and metrics are checked on hand-computed cases; episodes run against the real
Ralph context manager (and, for ``mcp_enabled``, the real hook, engine and model).
"""

from __future__ import annotations

import json
import math
import random
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.ab.agents import OpenAIAgent, ReaderAgent, parse_action
from benchmarks.ab.environment import Action, Outcome, TaskEnvironment
from benchmarks.ab.loop import BASELINE, MCP, Episode, run_episode
from benchmarks.ab.report import write_outputs
from benchmarks.ab.run import DEFAULT_SUITE, Plan, schedule, summarize
from benchmarks.ab.stats import mann_whitney, mean_ci, ranks
from benchmarks.ab.suite import KINDS, HazardKind, Kind, SuiteError, Task, load_suite
from ralph_context.embeddings.local import LocalEmbedder

SUITE = Path(__file__).with_name("ab_suite.yaml")


def tiny() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(SUITE.read_text())
    return data


def task(task_id: str = "admin-api") -> Task:
    return next(t for t in load_suite(SUITE).tasks if t.id == task_id)


def write(tmp_path: Path, data: dict[str, Any], suffix: str = ".yaml") -> Path:
    path = tmp_path / f"suite{suffix}"
    path.write_text(json.dumps(data) if suffix == ".json" else yaml.safe_dump(data))
    return path


# --- suite loader ----------------------------------------------------------------------------


def test_the_shipped_suite_has_at_least_five_tasks_of_every_kind() -> None:
    suite = load_suite(DEFAULT_SUITE)
    counts = {kind: len(tasks) for kind, tasks in suite.by_kind().items()}
    assert set(counts) == set(Kind) and min(counts.values()) >= 5
    assert all(t.distractors for t in suite.tasks)
    assert {f.source.value for t in suite.tasks for f in t.facts} == {
        "explore",
        "error",
        "prior_session",
    }


def test_json_suites_load_like_yaml(tmp_path: Path) -> None:
    assert load_suite(write(tmp_path, tiny(), ".json")) == load_suite(SUITE)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda d: d["tasks"][0]["facts"][0].update(answer="9432"),
            "tasks[0] (admin-api).facts[0] (port): answer '9432' does not occur in text",
        ),
        (
            lambda d: d["tasks"][0]["facts"][2].pop("error"),
            "tasks[0] (admin-api).facts[2] (flag): a fact with source 'error' needs the 'error'",
        ),
        (
            lambda d: d["tasks"][1].update(kind="docs"),
            "tasks[1] (readme).kind: Input should be 'simple_file_creation'",
        ),
        (
            lambda d: d["tasks"][0]["steps"][0].update(needs=["nope"]),
            "tasks[0] (admin-api): steps need unknown facts ['nope']",
        ),
        (
            lambda d: d["tasks"][1].update(distractors=[]),
            "tasks[1] (readme).distractors: List should have at least 1 item",
        ),
        (
            lambda d: d["tasks"][1].update(prompt="Add the badge for ci-main.yml to the README."),
            "tasks[1] (readme): the answer 'ci-main.yml' of fact 'badge' also occurs in prompt",
        ),
        (
            lambda d: d["tasks"][0]["facts"][0].update(text="x" * 180 + " 9431"),
            "tasks[0] (admin-api).facts[0] (port).text: String should have at most 180",
        ),
        (lambda d: d["tasks"][1].update(id="admin-api"), "task ids repeat: ['admin-api']"),
        (lambda d: d["tasks"][0].pop("steps"), "tasks[0] (admin-api).steps: Field required"),
    ],
)
def test_a_bad_suite_names_the_task_and_field(tmp_path: Path, mutate: Any, message: str) -> None:
    data = tiny()
    mutate(data)
    with pytest.raises(SuiteError, match=re.escape(message)):
        load_suite(write(tmp_path, data))


def test_unreadable_and_unparsable_suites_are_clear(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="cannot read the suite"):
        load_suite(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("tasks: [unclosed")
    with pytest.raises(SuiteError, match="not valid yaml"):
        load_suite(broken)


# --- environment -----------------------------------------------------------------------------


def environment(tmp_path: Path, task_id: str = "admin-api") -> TaskEnvironment:
    return TaskEnvironment(task(task_id), random.Random(3), tmp_path / "PROMPT.md")


def test_exploring_prints_noise_distractors_then_the_fact_last(tmp_path: Path) -> None:
    env = environment(tmp_path)
    output = env.apply(Action.explore("port"), 1)
    assert output.rstrip().endswith("Found: The admin API listens on port 9431 in production.")
    assert "9431" in output[-200:]  # survives Ralph's 200-character tail
    assert len(output) > 1000  # long enough for Ralph to keep it at all
    assert "Note: The staging admin API listened on port 8120" in output
    assert output.count("9431") == 1  # the noise never leaks an answer
    assert env.events[-1].outcome is Outcome.EXPLORED and env.step == 0


def test_an_error_fact_is_only_shown_by_failing_with_its_fix(tmp_path: Path) -> None:
    env = environment(tmp_path)
    output = env.apply(Action.explore("flag"), 1)
    assert "ERROR: deploy: hook legacy-notify failed (exit 3)\nFix: Deploys" in output
    assert env.events[-1].outcome is Outcome.ERROR


def test_steps_complete_in_order_with_the_right_answers_only(tmp_path: Path) -> None:
    env = environment(tmp_path)
    assert env.prompt_file.read_text().startswith(
        "# Fix the admin API config\n\nCurrent step (1/4): Configure the admin port.\n"
        "To finish it, you need to know:\n- [port] Which port does the admin API listen on?"
    )
    wrong = env.apply(Action.attempt({"port": "8120"}), 1)
    assert "(rejected: 8120)" in wrong and env.step == 0
    assert env.events[-1].outcome is Outcome.ERROR
    # An attempt without an error fact runs the step into that fact's error.
    env.step = 2
    assert "Fix: Deploys" in env.apply(Action.attempt({}), 2)
    env.step = 0
    done = env.apply(Action.attempt({"port": "9431"}), 3)
    assert done.startswith("Step 1/4 done") and env.step == 1
    assert env.events[-1].step == 0  # the step it finished
    assert "- [x] Configure the admin port." in env.prompt_file.read_text()
    assert env.apply(Action.explore("unknown"), 4) == "Nothing to do for 'explore' here."


# --- reader ----------------------------------------------------------------------------------


async def test_the_reader_knows_only_what_its_prompt_shows() -> None:
    the_task = task()
    port = [the_task.fact("port")]
    never_guesses = ReaderAgent(random.Random(0), guess_rate=0.0)
    assert await never_guesses.act("no clue", the_task, port) == Action.explore("port")
    known = await never_guesses.act("... port 9431 ...", the_task, port)
    assert known == Action.attempt({"port": "9431"})
    misled = await never_guesses.act("staging used port 8120", the_task, port)
    assert misled == Action.attempt({"port": "8120"})
    # Once the prompt shows the distractor rejected, the reader explores instead.
    wiser = await never_guesses.act("port 8120 ... (rejected: 8120)", the_task, port)
    assert wiser == Action.explore("port")
    always_guesses = ReaderAgent(random.Random(0), guess_rate=1.0)
    guess = await always_guesses.act("no clue", the_task, port)
    assert guess.kind == "attempt" and guess.answers["port"] in {"8120", "9431"}


def test_model_replies_parse_to_actions_or_explore() -> None:
    needed = [task().fact("port")]
    reply = 'Sure.\n```json\n{"action": "attempt", "answers": {"port": " 9431"}}\n```'
    assert parse_action(reply, needed) == Action.attempt({"port": "9431"})
    assert parse_action('{"action": "explore", "fact": "port"}', needed).fact == "port"
    assert parse_action("I am not sure.", needed) == Action.explore("port")
    assert parse_action('{"action": "dance"}', needed) == Action.explore("port")


# --- episodes and metrics --------------------------------------------------------------------


def reader(rng: random.Random) -> ReaderAgent:
    return ReaderAgent(rng, guess_rate=0.0)


async def play(
    variant: str,
    workdir: Path,
    *,
    model: LocalEmbedder | None = None,
    task_id: str = "admin-api",
    agent: Any = reader,
    max_iterations: int = 30,
) -> Episode:
    return await run_episode(
        task(task_id),
        variant,
        seed=1,
        agent=agent,
        workdir=workdir,
        model=model,
        max_iterations=max_iterations,
    )


async def test_baseline_forgets_what_left_ralphs_window(tmp_path: Path) -> None:
    episode = await play(BASELINE, tmp_path / "b")
    # explore port, attempt; explore host, attempt; flag fails with its fix, attempt;
    # the last step needs port and host: both are among Ralph's last three long outputs.
    assert (episode.iterations, episode.success) == (7, True)
    assert (episode.errors, episode.recovered) == (1, 1)
    assert episode.retrieval_ms == [] and episode.relevance == []


@pytest.mark.model
# Ralph runs its loop on asyncio and the hook awaits asyncio futures: under trio it cannot
# store anything (it only passed there through the cached-context rung).
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_memory_brings_the_earlier_sessions_fact(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    episode = await play(MCP, tmp_path / "m", model=embedder)
    # The session-store host was learned in an earlier session: no exploring it.
    assert episode.success and episode.iterations == 6
    assert len(episode.retrieval_ms) == 6
    # The first iteration finds nothing relevant to inject (only unrelated earlier sessions'
    # items, under the score floor); every later one gets a section.
    assert all(0 < u <= 1 for u in episode.utilization[1:])
    assert max(episode.relevance) > 0


async def test_a_run_that_never_finishes_counts_max_iterations(tmp_path: Path) -> None:
    class Stubborn:
        async def act(self, prompt: str, task: Task, needed: list[Any]) -> Action:
            return Action.attempt({})

    episode = await play(
        BASELINE, tmp_path / "s", task_id="readme", agent=lambda _: Stubborn(), max_iterations=4
    )
    assert (episode.iterations, episode.success) == (4, False)
    assert (episode.errors, episode.recovered) == (4, 0)


def fake(kind: str, variant: str, iterations: int, **extra: Any) -> Episode:
    return Episode("t", kind, variant, 0, iterations=iterations, success=True, **extra)


def test_summary_reduction_p_value_and_criteria_by_hand() -> None:
    episodes = [fake("bug_fix", BASELINE, n) for n in (10, 12, 14)]
    episodes += [fake("bug_fix", MCP, n, errors=2, recovered=1) for n in (6, 7, 8)]
    episodes += [fake("simple_file_creation", BASELINE, n) for n in (3, 3)]
    episodes += [fake("simple_file_creation", MCP, n, retrieval_ms=[10.0, 30.0]) for n in (3, 3)]
    episodes[3].relevance, episodes[3].utilization = [0.5, 1.0], [0.2, 0.4]
    episodes[3].injected_tokens = [400, 800]
    results = summarize(load_suite(SUITE), Plan(runs_per_task=3), episodes)
    bug = results["kinds"]["bug_fix"]
    assert bug[BASELINE]["iterations_mean"] == 12 and bug[MCP]["iterations_mean"] == 7
    assert bug["reduction"] == pytest.approx(1 - 7 / 12, abs=1e-4)
    # U = 0, n = 3 + 3: z = (4.5 - 0.5) / sqrt(5.25), p = erfc(z / sqrt 2).
    assert bug["p_value"] == pytest.approx(math.erfc(4 / math.sqrt(5.25) / math.sqrt(2)), abs=1e-6)
    assert bug["effect_size"] == 1.0 and bug["met"] is False  # p = 0.081 > 0.05
    assert bug[MCP]["error_recovery_rate"] == 0.5 and bug[BASELINE]["error_recovery_rate"] is None
    assert bug[MCP]["context_relevance"] == 0.75 and bug[MCP]["context_utilization"] == 0.3
    assert bug[MCP]["injected_tokens_mean"] == 600
    simple = results["kinds"]["simple_file_creation"]
    assert simple["reduction"] == 0 and simple["p_value"] == 1 and simple["met"] is True
    assert results["latency_ms"] == {"p50": 20.0, "p99": 30.0, "samples": 4}
    assert results["criteria"] == {
        "medium_and_high_kinds": False,
        "simple_no_regression": True,
        "latency_p99_under_100ms": True,
    }
    assert KINDS[Kind.BUG_FIX] == "medium"


def test_outputs_are_written(tmp_path: Path) -> None:
    episodes = [fake("bug_fix", v, n, retrieval_ms=[5.0]) for v in (BASELINE, MCP) for n in (4, 5)]
    results = summarize(load_suite(SUITE), Plan(), episodes)
    paths = write_outputs(results, tmp_path)
    assert [p.name for p in paths] == [
        "results.json",
        "results.md",
        "iterations.png",
        "latency.png",
    ]
    saved = json.loads(paths[0].read_text())
    assert saved["kinds"]["bug_fix"]["mcp_enabled"]["iterations_mean"] == 4.5
    assert "_latencies" not in saved
    assert "| bug_fix | medium | 4.50" in paths[1].read_text()


def test_schedule_is_shuffled_paired_and_reproducible() -> None:
    tasks = load_suite(SUITE).tasks
    plan = Plan(runs_per_task=3, seed=5)
    runs = schedule(tasks, plan)
    assert runs == schedule(tasks, plan) and len(runs) == 2 * 3 * 2
    seeds = {(t.id, r, v): s for t, r, v, s in runs}
    assert all(seeds[(t, r, BASELINE)] == seeds[(t, r, MCP)] for t, r, _ in seeds)
    in_order = [(t.id, r, v) for t in tasks for r in range(3) for v in (BASELINE, MCP)]
    assert [(t.id, r, v) for t, r, v, _ in runs] != in_order
    quick = Plan(quick=True).tasks(load_suite(DEFAULT_SUITE))
    # The first task of each kind, then the first holding each kind of hazard.
    assert len({t.kind for t in quick[:5]}) == 5 and len(quick) == 8
    assert {h.kind for t in quick[5:] for h in t.hazards} == set(HazardKind)


# --- statistics (hand-computed) --------------------------------------------------------------


def test_ranks_share_ties() -> None:
    assert ranks([3, 3, 5, 7, 2, 3, 4, 4, 6]) == [3, 3, 7, 9, 1, 3, 5.5, 5.5, 8]


def test_mann_whitney_with_ties_by_hand() -> None:
    # a = 3 3 5 7, b = 2 3 4 4 6. Rank sum of a = 3 + 3 + 7 + 9 = 22, U_a = 22 - 10 = 12.
    # Ties (three 3s, two 4s): sum(t^3 - t) = 24 + 6 = 30; var = 20/12 * (10 - 30/72).
    result = mann_whitney([3, 3, 5, 7], [2, 3, 4, 4, 6])
    assert (result.u_a, result.u_b) == (12, 8)
    z = (12 - 10 - 0.5) / math.sqrt(20 / 12 * (10 - 30 / 72))
    assert result.z == pytest.approx(z)
    assert result.p_value == pytest.approx(0.70742, abs=1e-5)
    assert result.effect_size == pytest.approx(1 - 2 * 8 / 20)


def test_mann_whitney_edge_cases() -> None:
    assert mann_whitney([4, 4], [4, 4]).p_value == 1.0  # all tied: no evidence
    assert mann_whitney([1, 2, 3], [4, 5, 6]).effect_size == -1.0
    with pytest.raises(ValueError, match="at least one value"):
        mann_whitney([], [1])


def test_mean_confidence_interval_by_hand() -> None:
    mean, low, high = mean_ci([2, 4, 6, 8])
    half = 1.96 * math.sqrt(20 / 3) / 2  # s^2 = (9 + 1 + 1 + 9) / 3
    assert (mean, low, high) == pytest.approx((5, 5 - half, 5 + half))
    assert mean_ci([7]) == (7, 7, 7)


class _ChatServer(ThreadingHTTPServer):
    """A local OpenAI-compatible endpoint: explores until the prompt shows the answer."""

    requests: list[tuple[str, dict[str, Any]]]


class _ChatHandler(BaseHTTPRequestHandler):
    server: _ChatServer

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((self.headers.get("Authorization", ""), body))
        prompt = body["messages"][-1]["content"]
        if "ci-main.yml" in prompt:
            action = {"action": "attempt", "answers": {"badge": "ci-main.yml"}}
        else:
            action = {"action": "explore", "fact": "badge"}
        reply = {"choices": [{"message": {"role": "assistant", "content": json.dumps(action)}}]}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


async def test_the_openai_agent_plays_through_a_chat_endpoint(tmp_path: Path) -> None:
    server = _ChatServer(("127.0.0.1", 0), _ChatHandler)
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    agent = OpenAIAgent(f"http://127.0.0.1:{server.server_address[1]}/v1", "tiny-model", "k-1")
    try:
        episode = await play(BASELINE, tmp_path / "o", task_id="readme", agent=lambda _: agent)
    finally:
        await agent.aclose()
        server.shutdown()
        server.server_close()
    # Explore, then Ralph's context shows the found fact and the model answers it.
    assert (episode.iterations, episode.success) == (2, True)
    authorization, body = server.requests[0]
    assert authorization == "Bearer k-1" and body["model"] == "tiny-model"
    assert body["messages"][0]["role"] == "system" and "[badge]" in body["messages"][1]["content"]
