"""Generated tool calls, hostile and plausible, against a real server through the MCP client.

Each call names a tool the server lists and draws its arguments from that tool's published
schema (values in and out of range, of the wrong JSON type, huge, deeply nested, filter
syntax inside strings, unknown extra arguments). What must hold after every call:

- the server answers with a result or a typed tool error: never a bare ``Error executing
  tool X`` (the SDK's text for an exception the tool did not expect), never a traceback,
  never a dropped connection; a call whose text or depth the server's JSON parser refuses
  (a lone surrogate, 1,000 levels) is answered with a JSON-RPC parse error, as over HTTP;
- no actor restarted (``health_check``);
- the items stored before the run are unchanged (checked once at the end).

Destructive tools always run with ``dry_run: true``; the lifecycle is off (a generated
iteration number advances the clock, and an automatic pass would then legitimately age the
items this checks). Driven by ``benchmarks/fuzz/run.py``.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp
from hypothesis import strategies as st
from mcp import MCPError
from mcp.types import INVALID_REQUEST, PARSE_ERROR, TextContent

from benchmarks.fuzz.wire import JsonStdio, json_text

__all__ = [
    "SENTINELS",
    "Outcome",
    "arguments_for",
    "check_call",
    "check_raw_call",
    "sentinel_state",
    "unparseable_calls",
]

# The items stored before a run, by (content, type, tags).
SENTINELS: tuple[tuple[str, str, list[str]], ...] = (
    ("Retry the upload with exponential backoff when S3 answers 503", "skill", ["upload"]),
    ("The CI cache key includes the lockfile hash", "file", ["ci"]),
    ("TypeError: 'NoneType' object is not subscriptable in parse_config", "error", []),
)

_NASTY_STRINGS = [
    "10",
    "true",
    "null",
    "' OR 1=1 --",
    "id = 'x' OR TRUE",
    "x') OR (1=1",
    "\\'; DROP TABLE context_items; --",
    "../../../../etc/passwd",
    "\x00",
    "🙂" * 50,
    " ",
    "",
    "x" * 70_000,
    "{{query}}",
]
# Secret-shaped values the redactor rewrites (made up): mixed into any text argument, they
# must neither crash a tool nor change what it refuses.
_SECRET_SHAPES = [
    "AKIAZ7Q2MX4LP9RT3VWE",
    "ghp_Qm7Lx2Rt9Vb4Nc8Wd3Yf6Hg1Jk5Pz0As2Df4",
    "sk-ant-api03-Zq9Xw8Ev7Rb6Tn5Ym4Ul3Ik2Oj1Ph0AgSfDeCvBnMzLxKqJwHe-AA",
    "xoxp-1234567890-0987654321-Ab12Cd34Ef56Gh78Ij90",
    "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oQ==\n",
    "postgres://u:p%40ss@h/db",
    "PASSWORD=",
    "token: ",
    "<private>",
    "</private><private>",
    "[REDACTED:github_token]",
]
_secretish = st.builds(
    lambda before, secret, after: before + secret + after,
    st.text(max_size=20),
    st.sampled_from(_SECRET_SHAPES),
    st.text(max_size=20),
)
# Text the server's JSON parser refuses, as over HTTP: lone surrogates (escaped on the wire,
# as JSON.stringify writes them). Never inside the schema's own strings: those must reach
# the tool.
_UNPARSEABLE = ["bad \ud800 text", "\udfff", "reversed pair \udc00\ud800"]
# Seconds a call may take before it counts as unanswered.
ANSWER_WITHIN = 60
# Strings any text argument may hold: they must reach the tool and stay text.
_INJECTIONS = [s for s in _NASTY_STRINGS if len(s) < 100 and s.strip() and "\x00" not in s]
_HUGE_INTS = [2**31, 2**53, 2**63, 2**64, -(2**63) - 1, 10**30, -1, 0]

_scalars = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from(_HUGE_INTS),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.text(max_size=60),
    st.sampled_from(_NASTY_STRINGS),
)
_hostile = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6), st.dictionaries(st.text(max_size=12), inner, max_size=6)
    ),
    max_leaves=40,
)


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


# Our own limit is 8 levels of metadata, the JSON parser's ~200 (past it the request is
# answered with a parse error, as over HTTP): 8-150 probes every layer between. Deeper is
# for unparseable_calls: hypothesis pretty-prints each value it draws, recursively.
_hostile = st.one_of(
    _hostile,
    st.builds(_deep, st.integers(min_value=8, max_value=150)),
    st.sampled_from(_UNPARSEABLE).map(lambda s: [s]),
)


def _plausible(schema: dict[str, Any], defs: dict[str, Any], edge: bool, depth: int = 0) -> Any:
    """Values of the schema's own type within its bounds; with ``edge``, also just beyond
    them and the nastier strings."""
    if "$ref" in schema:
        schema = defs[schema["$ref"].split("/")[-1]]
    if "anyOf" in schema:
        return st.one_of(*(_plausible(s, defs, edge, depth) for s in schema["anyOf"]))
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    kind = schema.get("type")
    if kind == "integer":
        low, high = schema.get("minimum", -(2**64)), schema.get("maximum", 2**64)
        inside = st.integers(min_value=low, max_value=high)
        return st.one_of(inside, st.sampled_from([low - 1, high + 1])) if edge else inside
    if kind == "number":
        low, high = schema.get("minimum", -1e300), schema.get("maximum", 1e300)
        within = st.floats(min_value=low, max_value=high, allow_nan=False)
        return st.one_of(within, st.sampled_from([low - 1, high + 1])) if edge else within
    if kind == "boolean":
        return st.booleans()
    if kind == "string":
        longest = schema.get("maxLength", 80)
        text = st.text(min_size=schema.get("minLength", 0), max_size=min(longest, 80))
        return st.one_of(text, st.sampled_from(_NASTY_STRINGS if edge else _INJECTIONS), _secretish)
    if kind == "array" and depth < 3:
        items = _plausible(schema.get("items", {}), defs, edge, depth + 1)
        low = schema.get("minItems", 0)
        return st.lists(items, min_size=low, max_size=max(low, min(schema.get("maxItems", 5), 5)))
    if kind == "object" and depth < 3:
        properties = schema.get("properties", {})
        if properties:
            needed = set(schema.get("required", []))
            return st.fixed_dictionaries(
                {
                    k: _plausible(v, defs, edge, depth + 1)
                    for k, v in properties.items()
                    if k in needed
                },
                optional={
                    k: _plausible(v, defs, edge, depth + 1)
                    for k, v in properties.items()
                    if k not in needed
                },
            )
        return st.dictionaries(st.text(max_size=10), _scalars, max_size=4)
    if kind == "null":
        return st.none()
    return _hostile if edge else _scalars


def arguments_for(tool: mcp.types.Tool) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments for ``tool``, a third of each kind: all within the schema (they reach the
    tool), one argument hostile or unknown, and anything goes (every argument plausible,
    at its edges, or hostile; unknown ones; a required one missing)."""
    schema = tool.input_schema
    defs = schema.get("$defs", {})
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))

    def shaped(value: Any) -> st.SearchStrategy[dict[str, Any]]:
        return st.fixed_dictionaries(
            {name: value(spec) for name, spec in properties.items() if name in required},
            optional={
                name: value(spec) for name, spec in properties.items() if name not in required
            },
        )

    valid = shaped(lambda spec: _plausible(spec, defs, edge=False))
    wild = shaped(lambda spec: st.one_of(_plausible(spec, defs, edge=True), _hostile))
    names = sorted(properties) or ["bogus"]
    one_bad = st.tuples(valid, st.sampled_from([*names, "bogus", "max_item"]), _hostile).map(
        lambda parts: {**parts[0], parts[1]: parts[2]}
    )
    extra = st.dictionaries(st.sampled_from(["bogus", "max_item", "where", "id"]), _scalars)
    anything = st.tuples(wild, extra, st.booleans()).map(
        lambda parts: {
            **parts[1],
            **{k: v for k, v in parts[0].items() if not (parts[2] and k in required)},
        }
    )

    def with_dry_run(arguments: dict[str, Any]) -> dict[str, Any]:
        if "dry_run" in properties:
            arguments["dry_run"] = True
        return arguments

    return st.one_of(valid, one_bad, anything).map(with_dry_run)


@dataclass
class Outcome:
    """What a run saw."""

    calls: int = 0
    results: int = 0
    tool_errors: int = 0
    # Calls the server could not parse (lone surrogates, 1,000 levels), answered with a
    # JSON-RPC error that says why.
    refused: int = 0
    crashes: list[str] = field(default_factory=list)
    results_by_tool: Counter[str] = field(default_factory=Counter)


async def check_call(
    client: mcp.Client, name: str, arguments: dict[str, Any], outcome: Outcome
) -> None:
    """One call; a crash (an answer that is not a result or a typed error) is recorded,
    and the run goes on."""
    outcome.calls += 1
    shown = json_text(arguments)[:300]
    try:
        with anyio.move_on_after(ANSWER_WITHIN) as waited:
            result = await client.call_tool(name, arguments)
    except MCPError as exc:
        if exc.error.code in (PARSE_ERROR, INVALID_REQUEST) and exc.error.message.strip():
            outcome.refused += 1
        else:
            error = f"JSON-RPC error {exc.error.code}: {exc.error.message[:200]}"
            outcome.crashes.append(f"{name} {shown}: {error}")
        return
    if waited.cancelled_caught:
        outcome.crashes.append(f"{name} {shown}: no answer within {ANSWER_WITHIN} s")
        return
    text = " ".join(c.text for c in result.content if isinstance(c, TextContent))
    if not result.is_error:
        outcome.results += 1
        outcome.results_by_tool[name] += 1
        return
    outcome.tool_errors += 1
    if text.strip() == f"Error executing tool {name}" or "Traceback (most recent" in text:
        outcome.crashes.append(f"{name} {shown}: {text[:200]}")


async def sentinel_state(client: mcp.Client, ids: list[str]) -> list[dict[str, Any]]:
    """The stored sentinels as the item resource shows them (content, type, tags, state,
    usefulness), to compare before and after a run."""
    state = []
    for item_id in ids:
        read = await client.read_resource(f"context://items/{item_id}")
        first = read.contents[0]
        item = json.loads(getattr(first, "text", "{}"))
        item = item.get("item", item)
        state.append(
            {
                key: item.get(key)
                for key in ("content", "content_type", "tags", "state", "usefulness_score")
            }
        )
    return state


async def check_raw_call(
    wire: JsonStdio, name: str, arguments: dict[str, Any], outcome: Outcome
) -> None:
    """One call written past the client's session (:meth:`JsonStdio.call_raw`: its session
    cannot nest 1,000 levels), judged as :func:`check_call` judges."""
    outcome.calls += 1
    request = f"raw-{outcome.calls}"
    call = {"name": name, "arguments": arguments}
    message = {"jsonrpc": "2.0", "id": request, "method": "tools/call", "params": call}
    answer = await wire.call_raw(message, ANSWER_WITHIN)
    shown = json_text(arguments)[:300]
    if answer is None:
        outcome.crashes.append(f"{name} {shown}: no answer within {ANSWER_WITHIN} s")
        return
    error = answer.get("error") or {}
    if error.get("code") in (PARSE_ERROR, INVALID_REQUEST) and str(error.get("message")).strip():
        outcome.refused += 1
    elif "result" in answer:
        outcome.tool_errors += bool(answer["result"].get("isError"))
        outcome.results += not answer["result"].get("isError")
    else:
        outcome.crashes.append(f"{name} {shown}: {json.dumps(answer)[:200]}")


def unparseable_calls(tools: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """For every tool, a call with a lone surrogate and one nested 1,000 levels: whatever
    else a run draws, these are in it (sent with :func:`check_raw_call`)."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for name in tools:
        calls += [(name, {"bogus": text}) for text in _UNPARSEABLE[:1]]
        calls.append((name, {"bogus": _deep(1_000)}))
    return calls
