"""The token book (file format, permissions, grants) and the request limits, as mechanisms."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from ralph_context.errors import ConfigError
from ralph_context.server.admission import is_write
from ralph_context.server.http import _does_work
from ralph_context.server.limits import InFlight, RateLimiter, retry_after
from ralph_context.server.tokens import ENV_TOKEN, TokenBook, new_token

LONG = "a-token-long-enough-123"


def _file(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "tokens"
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def test_no_file_and_no_variable_means_no_authentication(tmp_path: Path) -> None:
    assert not TokenBook.load(tmp_path / "missing", environ={}).enabled


def test_grants_from_file_and_environment(tmp_path: Path) -> None:
    path = _file(tmp_path, f"# comment\n{LONG}-1 team-a,ci  # two\n\n{LONG}-2\n")
    book = TokenBook.load(path, environ={ENV_TOKEN: f"{LONG}-env"})
    scoped, everywhere, env = (book.verify(f"{LONG}-{k}") for k in ("1", "2", "env"))
    assert scoped is not None and everywhere is not None and env is not None
    assert scoped.allows("team-a") and scoped.allows("ci") and not scoped.allows("default")
    assert everywhere.allows("anything") and env.allows("default")
    assert book.verify(f"{LONG}-3") is None and book.verify("") is None
    # Labels identify a token in logs without showing it.
    assert LONG not in scoped.label and scoped.label.startswith("token-")


def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    path = _file(tmp_path, f"{LONG}\n", mode=0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        TokenBook.load(path, environ={})


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("short\n", "at least 16 characters"),
        (f"{LONG} Bad-Name\n", "not a valid name"),
        (f"{LONG} a b\n", "expected '<token> \\[namespace"),
    ],
)
def test_bad_lines_name_the_line_and_never_show_the_token(
    tmp_path: Path, text: str, problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem) as refused:
        TokenBook.load(_file(tmp_path, text), environ={})
    assert ":1" in str(refused.value) and LONG not in str(refused.value)


def test_new_tokens_are_added_and_accepted(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "tokens"
    first = new_token(path)
    second = new_token(path, ["ci"])
    assert first != second and len(first) >= 40
    book = TokenBook.load(path, environ={})
    one, two = book.verify(first), book.verify(second)
    assert one is not None and one.allows("x")
    assert two is not None and two.allows("ci") and not two.allows("x")
    assert path.stat().st_mode & 0o777 == 0o600


def test_the_rate_limit_lets_a_burst_through_then_says_when_to_retry() -> None:
    limiter = RateLimiter(rate=1.0, burst=3)
    assert [limiter.wait_for("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    wait = limiter.wait_for("a")
    assert 0.9 < wait <= 1.0
    assert retry_after(wait) == "1"
    assert limiter.wait_for("b") == 0.0  # per client
    assert RateLimiter(rate=0, burst=1).wait_for("a") == 0.0  # 0: no limit


def test_in_flight_refuses_past_its_bound_and_frees_on_leave() -> None:
    gate = InFlight(2)
    assert gate.enter() and gate.enter()
    assert not gate.enter() and gate.active == 2
    gate.leave()
    assert gate.enter()


def test_a_window_of_slow_answers_lowers_the_limit_and_fast_windows_raise_it_back() -> None:
    now = [0.0]
    gate = InFlight(24, target=0.5, clock=lambda: now[0])

    def window(seconds: list[float]) -> None:
        now[0] += 0.5
        for taken in seconds:
            gate.enter()
            gate.leave(taken)

    # One slow call among fast ones (a write behind maintenance) changes nothing: the
    # window's median decides, once per window.
    window([0.1, 0.1, 3.0, 0.1])
    assert gate.allowed == 24
    window([0.9] * 10)
    assert gate.allowed == 18
    for _ in range(30):  # a crowd answered slowly for 15 s: the limit falls to the floor
        window([2.0] * 4)
    assert gate.allowed == 2
    for _ in range(40):  # answered in time again: back to the bound, not past it
        window([0.1] * 4)
    assert gate.allowed == 24
    fixed = InFlight(3)  # no target: the bound stays whatever the answers take
    fixed.enter()
    fixed.leave(30.0)
    assert fixed.allowed == 3


async def test_a_call_past_the_limit_waits_for_the_slot_a_call_leaving_hands_on() -> None:
    gate = InFlight(1, queue_wait=60.0)
    assert await gate.admit()
    admitted: list[bool] = []
    waiting = anyio.Event()

    async def second() -> None:
        waiting.set()
        admitted.append(await gate.admit())

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(second)
            await waiting.wait()
            await anyio.wait_all_tasks_blocked()
            assert gate.queued == 1 and not gate.enter()  # no jumping the queue
            gate.leave()
    assert admitted == [True] and gate.active == 1 and gate.queued == 0
    gate.leave()
    assert gate.active == 0


async def test_a_call_whose_wait_runs_out_is_refused_and_leaves_the_queue() -> None:
    gate = InFlight(1, queue_wait=0.0)
    assert await gate.admit()
    assert not await gate.admit()
    assert gate.queued == 0 and gate.active == 1


async def test_a_cancelled_waiter_gives_up_its_place_and_no_slot_is_lost() -> None:
    gate = InFlight(1, queue_wait=60.0)
    assert await gate.admit()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(gate.admit)
            await anyio.wait_all_tasks_blocked()
            group.cancel_scope.cancel()
    assert gate.queued == 0
    gate.leave()
    assert gate.active == 0 and gate.enter()


def test_retry_after_is_spread_so_a_crowd_refused_together_comes_back_apart() -> None:
    values = {retry_after(1.0, spread=2) for _ in range(200)}
    assert values == {"1", "2", "3"}
    assert retry_after(0.2) == "1"


def test_only_calls_that_run_the_engine_count_against_the_in_flight_bound() -> None:
    def scope(method: str, **headers: str) -> dict[str, object]:
        pairs = [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]
        return {"method": method, "headers": pairs}

    assert _does_work(scope("POST", mcp_method="tools/call", mcp_name="get_relevant_context"))
    assert _does_work(scope("POST", mcp_method="resources/read"))
    assert _does_work(scope("POST", mcp_method="prompts/get"))
    # Connecting and listing: a client refused there gives up rather than retrying.
    assert not _does_work(scope("POST", mcp_method="server/discover"))
    assert not _does_work(scope("POST", mcp_method="tools/list"))
    # Older clients name no method: their session's POSTs count, initialize does not.
    assert _does_work(scope("POST", mcp_session_id="abc"))
    assert not _does_work(scope("POST"))
    assert not _does_work(scope("GET", mcp_session_id="abc"))


def test_calls_wait_less_for_a_slot_while_answers_run_slow() -> None:
    now = [0.0]
    gate = InFlight(8, target=0.3, queue_wait=0.4, clock=lambda: now[0])
    assert gate.wait_now == 0.4
    now[0] += 0.3
    for _ in range(4):
        gate.enter()
        gate.leave(0.5)  # 0.2 s past the target: that much less to wait
    assert abs(gate.wait_now - 0.2) < 1e-9
    now[0] += 0.3
    for _ in range(4):
        gate.enter()
        gate.leave(2.0)  # served that late, a call is better refused than admitted late
    assert gate.wait_now == 0.0


async def test_a_call_is_a_write_by_its_tool_named_in_the_header_or_the_body() -> None:
    writes = frozenset({"store_context"})

    def body(tool: str) -> bytes:
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool}}
        return json.dumps(call).encode()

    async def classify(scope: dict[str, object], payload: bytes) -> tuple[bool, bytes]:
        half = len(payload) // 2
        messages = [
            {"type": "http.request", "body": payload[:half], "more_body": True},
            {"type": "http.request", "body": payload[half:], "more_body": False},
        ]

        async def receive() -> dict[str, object]:
            return messages.pop(0)

        write, replay = await is_write(scope, receive, writes)
        seen = b""
        for _ in range(2):  # the body, handed on unchanged to the session manager
            seen += (await replay())["body"]
        return write, seen

    named: dict[str, object] = {"headers": [(b"mcp-name", b"store_context")]}
    assert (await classify(named, b"{}"))[0]
    assert await classify({"headers": []}, body("store_context")) == (True, body("store_context"))
    assert not (await classify({"headers": []}, body("get_relevant_context")))[0]
    assert not (await classify({"headers": []}, b"not json"))[0]
