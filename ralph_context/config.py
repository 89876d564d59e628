"""Settings: the ``learning.mcp_context`` block of ``ralph.yaml``, overridable by env vars.

Precedence, strongest first: ``RALPH_CONTEXT_*`` environment variables (nested keys joined by
``__``, e.g. ``RALPH_CONTEXT_STORAGE__PATH``), then the file, then the chosen preset, then the
defaults below. The file is found at ``--config``, else ``$RALPH_CONTEXT_CONFIG``, else
the ``ralph.yaml``/``ralph.yml`` of ``$RALPH_WORKSPACE_ROOT`` (a Ralph v2 loop's workspace),
else ``./ralph.yaml`` or ``./ralph.yml``; without one, defaults and env apply.

A bad value is reported as ``ConfigError`` naming the key, the value and what is allowed, before
anything opens the store.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal, NoReturn, get_args, get_origin

import structlog
import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from ralph_context import namespaces
from ralph_context._logging import ensure_logging
from ralph_context.errors import ConfigError
from ralph_context.models import ContextType

__all__ = [
    "PRESETS",
    "RESERVED_PROMPT_NAMES",
    "SEARCH_PROMPT",
    "EmbeddingsSettings",
    "InferenceServerSettings",
    "InferenceSettings",
    "InferenceTimeouts",
    "LifecycleSettings",
    "PromptArgumentSpec",
    "PromptSpec",
    "RetrievalSettings",
    "ScoringSettings",
    "ServerSettings",
    "Settings",
    "StorageSettings",
    "default_model_dir",
]

CONFIG_ENV = "RALPH_CONTEXT_CONFIG"
WORKSPACE_ENV = "RALPH_WORKSPACE_ROOT"
_DEFAULT_FILES = ("ralph.yaml", "ralph.yml")
_BLOCK = ("learning", "mcp_context")

log = structlog.get_logger("ralph_context.config")


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    return Path(value) if value else Path.home() / fallback


def default_model_dir() -> Path:
    """Where ``ralph-context model install`` puts the model when no path is configured.

    A per-user cache: the model is the same for every project, so one copy serves them all.
    """
    return _xdg("XDG_CACHE_HOME", ".cache") / "ralph-context" / "models" / "all-MiniLM-L6-v2"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerSettings(_Section):
    """How the MCP server is reached."""

    transport: Literal["stdio", "sse", "http"] = "stdio"
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=1, le=65535)
    auto_start: bool = True
    # Bearer tokens for HTTP (see ralph_context.server.tokens), relative to the project
    # root; RALPH_CONTEXT_TOKEN adds one. No file and no variable: no authentication, and
    # a bind beyond loopback is refused. `ralph-context token new` writes here.
    token_file: Path = Path(".agent/server.tokens")
    # Host and Origin headers accepted beyond loopback and this machine's own names
    # ("name:*" allows any port): DNS-rebinding protection stays on for every bind.
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    # Open MCP sessions at most, and how long an idle one is kept.
    max_sessions: int = Field(default=200, ge=1)
    session_idle_minutes: float = Field(default=10.0, gt=0, allow_inf_nan=False)
    # Requests per second per client session, with bursts; 0: no limit. (One client
    # storing items one by one makes ~50 calls/s here.)
    rate_limit_per_second: float = Field(default=100.0, ge=0, allow_inf_nan=False)
    rate_limit_burst: int = Field(default=200, ge=1)
    # Calls answered at once; past this, 429 at once rather than a queue of seconds
    # (two cores answer ~50 searches a second).
    max_in_flight: int = Field(default=24, ge=1)
    # A call slower than this lowers how many are answered at once (down to 2; it grows
    # back while calls are fast), so a crowd is told 429 instead of all waiting; 0: fixed.
    target_latency_ms: float = Field(default=300.0, ge=0, le=60_000, allow_inf_nan=False)
    # Namespaces one server opens at most (each keeps its tables and caches in memory).
    max_namespaces: int = Field(default=32, ge=1)


class StorageSettings(_Section):
    """Where and how items are kept."""

    backend: Literal["lancedb", "memory"] = "lancedb"
    path: Path = Path(".agent/context")
    max_size_mb: float = Field(default=500.0, gt=0, allow_inf_nan=False)
    persistence: Literal["session", "project", "global"] = "project"
    max_content_bytes: int = Field(default=100_000, ge=1)
    # Brute force costs ~5 ms + ~2 ms per 1k rows here (25 ms p50 at 10k); an IVF-SQ index
    # answers 10k in ~11 ms, so it pays from a few thousand rows on (benchmarks/latency).
    vector_index_min_rows: int = Field(default=5_000, ge=256)
    # Every LanceDB write is a table version and a small fragment, and reads slow down with
    # each (a loop storing its results: search p50 +25 ms after 80 iterations at 5k items).
    # Compaction folds them (~0.3 s at 100k, in the writer's lane: reads go on meanwhile).
    optimize_every_writes: int = Field(default=25, ge=1)
    version_retention_minutes: float = Field(default=5.0, ge=0, allow_inf_nan=False)
    # A read or write of the store taking longer fails that call (retrieval steps down a
    # tier); maintenance gets ten times as long.
    timeout_seconds: float = Field(default=30.0, gt=0, allow_inf_nan=False)
    # Whose memory this is, within the store (see ralph_context.namespaces).
    namespace: str = "default"

    @field_validator("namespace")
    @classmethod
    def _namespace_name(cls, name: str) -> str:
        if not namespaces.is_name(name):
            raise ValueError(f"use {namespaces.NAME_RULE}")
        return name


class EmbeddingsSettings(_Section):
    """The local embedding model."""

    provider: Literal["local"] = "local"
    model: str = "all-MiniLM-L6-v2"
    model_path: Path | None = None
    cache_embeddings: bool = True
    cache_size: int = Field(default=10_000, ge=0)
    # onnxruntime's memory pool grows with batch size; past 32 there is no speed to win.
    batch_size: int = Field(default=32, ge=1, le=256)
    threads: int | None = Field(default=None, ge=1)
    timeout_seconds: float = Field(default=30.0, gt=0, allow_inf_nan=False)

    def resolved_model_path(self) -> Path:
        """The configured model directory, or the per-user default."""
        return self.model_path if self.model_path is not None else default_model_dir()


class RetrievalSettings(_Section):
    """Defaults for a query."""

    max_items_per_query: int = Field(default=10, ge=1, le=50)
    # Relevance is on the match's scale (scoring.py): with no shared word an item needs cosine
    # ~0.4 to reach 0.15, a paraphrase; items sharing the query's words need less.
    min_relevance_score: float = Field(default=0.15, ge=0.0, le=1.0, allow_inf_nan=False)
    # The gate before scoring. With the seed's weights a fresh, unrated item scores 0.5 on
    # recency, usefulness and type alone, above any sensible min_score, so an unrelated item
    # would always be returned; candidates must first be at least this similar to the query.
    # MiniLM puts unrelated English sentences at ~0.0-0.15 and paraphrases at 0.5+.
    min_similarity: float = Field(default=0.2, ge=-1.0, le=1.0, allow_inf_nan=False)
    context_types: tuple[ContextType, ...] = (
        ContextType.SKILL,
        ContextType.ERROR,
        ContextType.ITERATION,
    )
    max_context_tokens: int = Field(default=4000, ge=1)
    # When no live candidate is at least this similar (cosine) to the query, archived items
    # are searched too: an old item that is the strong match stays findable after the
    # lifecycle moved it out of the hot table. 1.0: always; below the gate: never.
    archive_search_below: float = Field(default=0.5, ge=-1.0, le=1.0, allow_inf_nan=False)


class LifecycleSettings(_Section):
    """Ages (in iterations) at which an item starts aging, is summarized, archived, pruned."""

    aging_after_iterations: int = Field(default=5, ge=0)
    summarize_after_iterations: int = Field(default=20, ge=1)
    archive_after_iterations: int = Field(default=50, ge=1)
    prune_after_iterations: int = Field(default=100, ge=1)
    prune_min_usefulness: float = Field(default=0.3, ge=0.0, le=1.0, allow_inf_nan=False)
    # A pass after every stored iteration; false leaves it to `run_lifecycle` / the tools.
    auto_run: bool = True
    # How far past the store's latest iteration a recorded iteration may be: the lifecycle
    # ages everything by that clock, so one call claiming iteration 10**9 would archive the
    # whole store. A loop moves one at a time.
    max_iteration_step: int = Field(default=1_000, ge=1)
    # A model id served by `inference` writes the summaries; None (or the model failing)
    # keeps the extractive ones, which need no language model.
    summarizer_model: str | None = Field(default=None, min_length=1)
    # Bound on one summary, and on all the model's summaries in one pass: past the budget
    # the pass finishes with extractive summaries instead of holding up the next one.
    summarizer_timeout_seconds: float = Field(default=60.0, gt=0.0, allow_inf_nan=False)
    summarizer_budget_seconds: float = Field(default=120.0, gt=0.0, allow_inf_nan=False)
    # How long a pass asked for by a tool or the CLI may take (plus twice the summarizer
    # budget when a model writes summaries); background passes are not waited for.
    timeout_seconds: float = Field(default=600.0, gt=0.0, allow_inf_nan=False)

    # Types that do not age: never summarized or archived by the clock (a skill learned in
    # iteration 2 is still the answer in iteration 200); pruned only when judged useless.
    ageless_types: tuple[ContextType, ...] = (ContextType.SKILL, ContextType.TASK)

    @model_validator(mode="after")
    def _ordered(self) -> LifecycleSettings:
        if not (
            self.aging_after_iterations
            < self.summarize_after_iterations
            < self.archive_after_iterations
            < self.prune_after_iterations
        ):
            raise ValueError(
                f"ages must grow: aging_after_iterations ({self.aging_after_iterations}) "
                f"< summarize_after_iterations ({self.summarize_after_iterations}) "
                f"< archive_after_iterations ({self.archive_after_iterations}) "
                f"< prune_after_iterations ({self.prune_after_iterations})"
            )
        return self


class SkillbookSettings(_Section):
    """An ACE skillbook whose active skills are indexed as ``skill`` items."""

    enabled: bool = True
    # Relative to the project root (the config file's folder); a missing file is fine.
    path: Path = Path(".agent/skillbook/skillbook.json")


class ScoringSettings(_Section):
    """How relevance combines match, recency, feedback and type (see ``scoring.py``).

    relevance = match · recency · feedback · type, where only ``match`` can reach 0: the
    loop's own signals scale a match (within a band: at most ``1 - recency_floor`` for age,
    ``usefulness_boost`` either way for feedback, ``type_penalty`` for an unrequested type)
    and never lift an unrelated item above a related one. Defaults are fitted by
    ``benchmarks/retrieval/fit.py`` on LoCoMo and the loop scenarios.
    """

    # Share of an item's own match taken by full-text (BM25) match; the rest is cosine.
    lexical_share: float = Field(default=0.60, ge=0.0, le=1.0, allow_inf_nan=False)
    # How much an adjacent item's match (same source and iteration, stored next to it)
    # counts towards this item's: an answer is often the turn after the question.
    neighbour_share: float = Field(default=0.70, ge=0.0, le=1.0, allow_inf_nan=False)
    # Recency decays from 1 towards this floor, at recency_decay per iteration of age
    # (skills do not age: they are meant to outlive the iterations that taught them).
    recency_floor: float = Field(default=0.75, ge=0.0, le=1.0, allow_inf_nan=False)
    recency_decay: float = Field(default=0.05, ge=0.0, le=10.0, allow_inf_nan=False)
    # Feedback multiplies by 1 + usefulness_boost·(2·usefulness - 1): 0.5 (unrated) is 1.
    usefulness_boost: float = Field(default=0.50, ge=0.0, le=1.0, allow_inf_nan=False)
    # Items of a type that was not asked for are multiplied by 1 - type_penalty.
    type_penalty: float = Field(default=0.20, ge=0.0, le=1.0, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _no_additive_weights(cls, data: object) -> object:
        if isinstance(data, dict):
            old = sorted(set(data) & _ADDITIVE_WEIGHTS)
            if old:
                raise ValueError(
                    f"{', '.join(old)}: the additive weights are gone "
                    "(relevance = match · recency · feedback · type); use lexical_share, "
                    "neighbour_share, recency_floor, recency_decay, usefulness_boost and "
                    "type_penalty (README: Relevance)"
                )
        return data


_ADDITIVE_WEIGHTS = frozenset(
    {"semantic_weight", "recency_weight", "usefulness_weight", "type_match_weight"}
)


class PromptLearningSettings(_Section):
    """The prompt-learning tool pack: prompts, their outcomes, and sessions."""

    enabled: bool = True
    # Weight of a new observation in the moving averages (the spec's 30% new, 70% history).
    ema_alpha: float = Field(default=0.3, gt=0.0, le=1.0, allow_inf_nan=False)
    # A model id served by `inference`: suggest_improvements then also returns the prompt
    # rewritten to apply its suggestions. None: suggestions only.
    rewrite_model: str | None = Field(default=None, min_length=1)
    rewrite_timeout_seconds: float = Field(default=60.0, gt=0.0, allow_inf_nan=False)


class ProjectMemorySettings(_Section):
    """The project tool pack: projects, cycles, learnings and decisions."""

    enabled: bool = True


class EvaluationSettings(_Section):
    """The evaluation tool pack (prompt-prix): drift, variants, trajectories, and the
    language model tools when ``inference`` has a server."""

    enabled: bool = True


class PacksSettings(_Section):
    """Tool packs served next to the context tools, each switchable and on by default."""

    prompt_learning: PromptLearningSettings = PromptLearningSettings()
    project: ProjectMemorySettings = ProjectMemorySettings()
    evaluation: EvaluationSettings = EvaluationSettings()


ProviderKind = Literal["lmstudio", "ollama", "together", "huggingface", "openai"]

# Environment variables that register servers without any file (see InferenceSettings).
LMSTUDIO_SERVERS_ENV = "LMSTUDIO_SERVERS"
TOGETHER_KEY_ENV = "TOGETHER_API_KEY"
HF_TOKEN_ENV = "HF_TOKEN"
OLLAMA_HOST_ENV = "OLLAMA_HOST"
_HTTP_URL = re.compile(r"https?://[^\s/?#]+[^\s]*")
# Addresses a server binds to that a client reaches on the loopback address.
_BIND_ALL = frozenset({"", "0.0.0.0", "::"})


class InferenceServerSettings(_Section):
    """One OpenAI-compatible language model server (an item of ``inference.servers``).

    Keys:
        kind: ``lmstudio``, ``ollama``, ``together``, ``huggingface`` or ``openai`` (any other
            OpenAI-compatible server: vLLM, llama.cpp, OpenRouter, OpenAI itself).
        base_url: Where its API lives. Optional for every kind but ``openai``: LM Studio
            defaults to ``http://localhost:1234``, Ollama to ``http://localhost:11434`` (both
            with or without ``/v1``), Together to ``https://api.together.xyz/v1``, Hugging Face
            to ``https://router.huggingface.co/v1``. For ``openai`` give the root that holds
            ``/models`` and ``/chat/completions``, e.g. ``https://openrouter.ai/api/v1``.
        api_key_env: Name of the environment variable holding its API key (sent as a bearer
            token). Together and Hugging Face default to ``TOGETHER_API_KEY`` / ``HF_TOKEN``;
            the others send no key unless one is named, so a key is never sent to a server
            it was not meant for. The key itself never goes in the file.
        max_concurrency: Requests sent to this server at once; more wait their turn (local
            servers answer one or a few at a time, hosted ones rate-limit).
        name: Label in listings and errors; defaults to ``kind@host:port``.
    """

    kind: ProviderKind
    base_url: str | None = None
    api_key_env: str | None = None
    max_concurrency: int = Field(default=4, ge=1, le=256)
    name: str | None = None

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        if url is not None and not _HTTP_URL.fullmatch(url):
            raise ValueError("base_url must be an http:// or https:// URL")
        return url

    @model_validator(mode="after")
    def _openai_needs_url(self) -> InferenceServerSettings:
        if self.kind == "openai" and self.base_url is None:
            raise ValueError("a server of kind 'openai' needs a base_url")
        return self


class InferenceTimeouts(_Section):
    """Seconds each language model tool may take, retries included (the spec's contract)."""

    list_models: float = Field(default=30.0, gt=0, allow_inf_nan=False)
    complete: float = Field(default=300.0, gt=0, allow_inf_nan=False)
    react_step: float = Field(default=300.0, gt=0, allow_inf_nan=False)
    judge: float = Field(default=60.0, gt=0, allow_inf_nan=False)
    generate_variants: float = Field(default=60.0, gt=0, allow_inf_nan=False)
    embedding: float = Field(default=10.0, gt=0, allow_inf_nan=False)


class InferenceSettings(_Section):
    """Language model servers for summaries and prompt suggestions (all optional).

    With no server configured and none registered from the environment, the inference actor
    is ``down`` and the engine keeps its extractive fallbacks.

    Keys:
        servers: The servers to use, in priority order (see :class:`InferenceServerSettings`).
            A model id is routed to a server whose ``/models`` lists it.
        register_from_env: Also register servers from the environment, after the configured
            ones: ``LMSTUDIO_SERVERS`` (comma-separated URLs) adds LM Studio servers,
            ``OLLAMA_HOST`` (as Ollama reads it, e.g. ``127.0.0.1:11434``) adds Ollama,
            ``TOGETHER_API_KEY`` adds Together, ``HF_TOKEN`` adds the Hugging Face router.
            A kind or URL already in ``servers`` is not added twice.
        retries: Extra attempts after a 429, a 5xx or a failed connection.
        backoff_initial_seconds: First wait between attempts (doubles, with jitter); a
            ``Retry-After`` header is honoured up to ``backoff_max_seconds``.
        backoff_max_seconds: Cap on one wait between attempts.
        connect_timeout_seconds: How long one connection attempt may take.
        timeouts: Per-tool deadlines (:class:`InferenceTimeouts`): ``list_models`` 30 s,
            ``complete`` and ``react_step`` 300 s, ``judge`` and ``generate_variants`` 60 s,
            ``embedding`` 10 s.
    """

    servers: tuple[InferenceServerSettings, ...] = ()
    register_from_env: bool = True
    retries: int = Field(default=3, ge=0, le=10)
    backoff_initial_seconds: float = Field(default=0.5, gt=0, le=60, allow_inf_nan=False)
    backoff_max_seconds: float = Field(default=8.0, gt=0, le=300, allow_inf_nan=False)
    connect_timeout_seconds: float = Field(default=10.0, gt=0, le=300, allow_inf_nan=False)
    timeouts: InferenceTimeouts = InferenceTimeouts()

    @field_validator("servers")
    @classmethod
    def _unique_names(
        cls, servers: tuple[InferenceServerSettings, ...]
    ) -> tuple[InferenceServerSettings, ...]:
        names = [server.name for server in servers if server.name is not None]
        for name in names:
            if names.count(name) > 1:
                raise _definition_error(f"server name {name!r} is used twice; names label errors")
        return servers

    def resolved_servers(
        self, environ: Mapping[str, str] | None = None
    ) -> tuple[InferenceServerSettings, ...]:
        """The configured servers, then those the environment registers.

        Args:
            environ: Where to look for the variables; ``None`` means ``os.environ``.

        Raises:
            ConfigError: ``LMSTUDIO_SERVERS`` holds something that is not an http(s) URL.
                (An unusable ``OLLAMA_HOST`` is logged and skipped: it is often set for the
                Ollama server, not for us.)
        """
        servers = list(self.servers)
        if not self.register_from_env:
            return tuple(servers)
        env = os.environ if environ is None else environ
        kinds = {server.kind for server in servers}
        urls = {_bare_url(server.base_url) for server in servers if server.base_url}
        for listed in env.get(LMSTUDIO_SERVERS_ENV, "").split(","):
            url = listed.strip()
            if not url or _bare_url(url) in urls:
                continue
            if not _HTTP_URL.fullmatch(url):
                raise ConfigError(
                    f"{LMSTUDIO_SERVERS_ENV} holds {url!r}, which is not an http(s) URL "
                    "(expected comma-separated URLs such as http://localhost:1234)"
                )
            urls.add(_bare_url(url))
            servers.append(InferenceServerSettings(kind="lmstudio", base_url=url))
        ollama = env.get(OLLAMA_HOST_ENV, "").strip()
        if ollama and "ollama" not in kinds:
            reached = ollama_url(ollama)
            if reached is None:
                # Often set for the Ollama server itself: a value we cannot use must not
                # take down the servers that are configured.
                log.warning("ollama_host_ignored", value=ollama, reason="not an http(s) address")
            elif _bare_url(reached) not in urls:
                servers.append(InferenceServerSettings(kind="ollama", base_url=reached))
        if env.get(TOGETHER_KEY_ENV) and "together" not in kinds:
            servers.append(InferenceServerSettings(kind="together"))
        if env.get(HF_TOKEN_ENV) and "huggingface" not in kinds:
            servers.append(InferenceServerSettings(kind="huggingface"))
        return tuple(servers)


def ollama_url(value: str) -> str | None:
    """The URL a client reaches Ollama at, from ``OLLAMA_HOST`` read the way Ollama reads it
    (``envconfig.Host``): surrounding quotes dropped; no scheme means ``http`` on port 11434,
    an explicit ``http://`` or ``https://`` defaults to port 80 or 443; a missing or invalid
    port falls back to that default. A listen-everywhere host (``0.0.0.0``, ``::``, empty) is
    reached on ``127.0.0.1``. ``None`` when the value names another scheme or is not a usable
    address.
    """
    text = value.strip().strip("\"'")
    scheme, separator, rest = text.partition("://")
    port = "11434"
    if not separator:
        scheme, rest = "http", text
    else:
        scheme = scheme.lower()
        if scheme not in ("http", "https"):
            return None
        port = "80" if scheme == "http" else "443"
    hostport, _, path = rest.partition("/")
    split = _split_host_port(hostport)
    if split is None:
        host = hostport.strip("[]") if hostport else "127.0.0.1"
    else:
        host, given = split
        if given.isdigit() and 0 <= int(given) <= 65535:
            port = given
    if host in _BIND_ALL:
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    url = f"{scheme}://{host}:{port}" + (f"/{path.rstrip('/')}" if path.strip("/") else "")
    return url if _HTTP_URL.fullmatch(url) else None


def _split_host_port(hostport: str) -> tuple[str, str] | None:
    """``host:port`` or ``[v6]:port`` split like Go's ``net.SplitHostPort``; ``None`` when
    there is no port separator (or an IPv6 address is not bracketed)."""
    if hostport.startswith("["):
        close = hostport.find("]")
        if close == -1 or hostport[close + 1 : close + 2] != ":":
            return None
        return hostport[1:close], hostport[close + 2 :]
    if hostport.count(":") != 1:
        return None
    host, _, port = hostport.partition(":")
    return host, port


def _bare_url(url: str) -> str:
    """A URL without a trailing ``/`` or ``/v1``, to spot a server listed twice."""
    return url.rstrip("/").removesuffix("/v1")


# Names of the MCP server's built-in prompts: a custom prompt may not shadow one.
SEARCH_PROMPT = "Search"
RESERVED_PROMPT_NAMES = frozenset({SEARCH_PROMPT})
_ARGUMENT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
# Errors about a definition as a whole: reported without echoing the (long) offending input.
_DEFINITION_ERROR = "prompt_definition"


def _definition_error(detail: str) -> PydanticCustomError:
    # The detail goes in as context, so braces in user text are not read as placeholders.
    return PydanticCustomError(_DEFINITION_ERROR, "{detail}", {"detail": detail})


def _lowercase_keys(data: object, fields: Iterable[str]) -> object:
    """Rename ``Name``-style keys to ``name``: prompt lists copied from other MCP servers use both.

    Only the capitalized spelling of a declared field is renamed; anything else is left for
    ``extra="forbid"`` to report.
    """
    if not isinstance(data, Mapping):
        return data  # pydantic reports the wrong type with the key's path
    normalized = dict(data)
    for field in fields:
        spelled = field.capitalize()
        if spelled == field or spelled not in normalized:
            continue
        if field in normalized:
            raise _definition_error(f"both {field!r} and {spelled!r} are set; keep one")
        normalized[field] = normalized.pop(spelled)
    return normalized


class _CapitalizedKeysSection(_Section):
    """A section that also accepts ``Name``-style keys (see :func:`_lowercase_keys`)."""

    @model_validator(mode="before")
    @classmethod
    def _accept_capitalized_keys(cls, data: object) -> object:
        return _lowercase_keys(data, cls.model_fields)


class PromptArgumentSpec(_CapitalizedKeysSection):
    """One argument of a custom prompt, as ``prompts/list`` shows it (lowercase keys only)."""

    name: str
    description: str = ""
    required: bool = False

    @field_validator("name")
    @classmethod
    def _identifier_like(cls, name: str) -> str:
        # The name is also the `{name}` placeholder in a text template and a key of the dict
        # a function receives, so spaces and punctuation would only cause surprises.
        if not _ARGUMENT_NAME.fullmatch(name):
            raise ValueError(
                "an argument name starts with a letter or '_' and holds only letters, "
                "digits, '_' and '-'"
            )
        return name


class PromptSpec(_CapitalizedKeysSection):
    """A custom MCP prompt from the ``prompts`` list: a text template or a Python function.

    ``type: auto`` decides by ``content``: a ``module:function`` reference is a function,
    anything else a template. Whether a function reference imports is checked when the server
    resolves its prompts (``ralph_context.server.custom_prompts``), not here, so loading the
    settings never runs user code.
    """

    name: str
    description: str = ""
    arguments: tuple[PromptArgumentSpec, ...] = ()
    type: Literal["text", "function", "auto"] = "auto"
    content: str

    @field_validator("name")
    @classmethod
    def _usable_name(cls, name: str) -> str:
        if not name or any(char.isspace() for char in name):
            raise ValueError("a prompt name must be non-empty and contain no whitespace")
        if name in RESERVED_PROMPT_NAMES:
            raise ValueError(f"{name!r} is a built-in prompt; choose another name")
        return name

    @field_validator("content")
    @classmethod
    def _has_content(cls, content: str) -> str:
        if not content.strip():
            raise ValueError("content must be a template or a 'module:function' reference")
        return content

    @model_validator(mode="after")
    def _unique_arguments(self) -> PromptSpec:
        seen: set[str] = set()
        for argument in self.arguments:
            if argument.name in seen:
                raise _definition_error(
                    f"prompt {self.name!r} declares argument {argument.name!r} more than once"
                )
            seen.add(argument.name)
        return self


Preset = Literal["minimal", "standard", "aggressive"]

# The seed's preset table. Its "aggressive" column asks for OpenAI embeddings; we have no
# network to reach them, so every preset embeds locally. Archive/prune ages scale with
# summarize_after so the three stay ordered.
PRESETS: dict[str, dict[str, dict[str, object]]] = {
    "minimal": {
        "storage": {"persistence": "session", "max_size_mb": 100},
        "retrieval": {"max_items_per_query": 5},
        "lifecycle": {
            "summarize_after_iterations": 10,
            "archive_after_iterations": 25,
            "prune_after_iterations": 50,
        },
    },
    "standard": {},
    "aggressive": {
        "storage": {"persistence": "global", "max_size_mb": 2000},
        "retrieval": {"max_items_per_query": 25},
        "lifecycle": {
            "summarize_after_iterations": 50,
            "archive_after_iterations": 125,
            "prune_after_iterations": 250,
        },
    },
}


class Settings(BaseSettings):
    """Everything the engine, server and hook read from configuration."""

    model_config = SettingsConfigDict(
        env_prefix="RALPH_CONTEXT_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
    )

    enabled: bool = True
    preset: Preset = "standard"
    server: ServerSettings = ServerSettings()
    storage: StorageSettings = StorageSettings()
    embeddings: EmbeddingsSettings = EmbeddingsSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    lifecycle: LifecycleSettings = LifecycleSettings()
    skillbook: SkillbookSettings = SkillbookSettings()
    scoring: ScoringSettings = ScoringSettings()
    packs: PacksSettings = PacksSettings()
    inference: InferenceSettings = InferenceSettings()
    prompts: tuple[PromptSpec, ...] = ()

    _root: Path = PrivateAttr(default_factory=Path.cwd)
    _source: Path | None = PrivateAttr(default=None)

    _sections: ClassVar[tuple[str, ...]] = (
        "server",
        "storage",
        "embeddings",
        "retrieval",
        "lifecycle",
        "skillbook",
        "scoring",
        "packs",
        "inference",
    )

    @field_validator("prompts")
    @classmethod
    def _unique_prompt_names(cls, prompts: tuple[PromptSpec, ...]) -> tuple[PromptSpec, ...]:
        first: dict[str, int] = {}
        for index, prompt in enumerate(prompts):
            if prompt.name in first:
                raise _definition_error(
                    f"prompt name {prompt.name!r} is used by items {first[prompt.name]} and "
                    f"{index}; names must be unique"
                )
            first[prompt.name] = index
        return prompts

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The file arrives as init kwargs; the environment must beat it.
        return (env_settings, init_settings)

    @classmethod
    def load(cls, path: str | Path | None = None) -> Settings:
        """Read settings from a file (or the default lookup), the preset and the environment.

        Args:
            path: Explicit config file. ``None`` means ``$RALPH_CONTEXT_CONFIG``, then
                ``./ralph.yaml`` / ``./ralph.yml``, then defaults and env only.

        Raises:
            ConfigError: The file is missing, unreadable or not YAML, a value is invalid, or
                the block still uses the deprecated ``prompt_data`` key.
        """
        source = _find_config(path)
        block = _read_block(source) if source is not None else {}
        if _DEPRECATED_PROMPT_KEY in block:
            # Checked before validation, so this message wins over "unknown key".
            _refuse_prompt_data(source)
        preset = os.environ.get("RALPH_CONTEXT_PRESET", block.get("preset", "standard"))
        if preset not in PRESETS:
            raise ConfigError(
                f"{_key('preset')} = {preset!r} is not a preset; "
                f"allowed: {', '.join(repr(p) for p in PRESETS)}"
            )
        merged = _deep_merge(PRESETS[preset], block)
        try:
            settings = cls(**merged)
        except ValidationError as exc:
            raise ConfigError(_describe(exc, source)) from None
        if source is not None:
            settings._root = source.parent.resolve()
            settings._source = source
        return settings

    @property
    def source(self) -> Path | None:
        """The file these settings came from, if any."""
        return self._source

    @property
    def is_ephemeral(self) -> bool:
        """True when the store lives only as long as the process (memory or session)."""
        return self.storage.backend == "memory" or self.storage.persistence == "session"

    def store_root(self) -> Path:
        """Where the persistent store lives (every namespace; its writer lock).

        Relative paths resolve against the project root (the config file's folder, else the
        working directory), or, with ``persistence: global``, against the user's data folder.
        """
        path = self.storage.path.expanduser()
        if path.is_absolute():
            return path
        if self.storage.persistence == "global":
            return _xdg("XDG_DATA_HOME", ".local/share") / "ralph-context" / path
        return self._root / path

    def store_path(self) -> Path:
        """Where this namespace's tables live: the store itself for ``default``."""
        return namespaces.directory(self.store_root(), self.storage.namespace)

    def token_path(self) -> Path:
        """The HTTP server's token file, resolved against the project root."""
        path = self.server.token_file.expanduser()
        return path if path.is_absolute() else self._root / path

    def skillbook_path(self) -> Path:
        """The ACE skillbook file, resolved against the project root; a namespace other
        than ``default`` keeps its own inside its folder (a skillbook is one project's)."""
        path = self.skillbook.path.expanduser()
        if self.storage.namespace != namespaces.DEFAULT and not path.is_absolute():
            return self.store_path() / path.name
        return path if path.is_absolute() else self._root / path

    def with_overrides(self, **sections: Mapping[str, object]) -> Settings:
        """A copy with some section keys replaced, validated like a file would be.

        Raises:
            ConfigError: An override is invalid.
        """
        data = self.model_dump()
        try:
            copy = type(self).model_validate(_deep_merge(data, sections))
        except ValidationError as exc:
            raise ConfigError(_describe(exc, None)) from None
        copy._root, copy._source = self._root, self._source
        return copy


def _find_config(path: str | Path | None) -> Path | None:
    if path is not None:
        explicit = Path(path).expanduser()
        if not explicit.is_file():
            raise ConfigError(f"config file {str(explicit)!r} does not exist")
        return explicit
    from_env = os.environ.get(CONFIG_ENV)
    if from_env:
        env_path = Path(from_env).expanduser()
        if not env_path.is_file():
            raise ConfigError(f"{CONFIG_ENV}={from_env!r} names a file that does not exist")
        return env_path
    # Ralph v2 sets this for the agents it runs, and so for the servers they start: the
    # loop's workspace, whose ralph.yml anchors the project's store.
    workspace = os.environ.get(WORKSPACE_ENV)
    if workspace:
        found = default_file(Path(workspace).expanduser())
        if found is not None:
            return found
    return default_file(Path.cwd())


def default_file(folder: Path) -> Path | None:
    """``folder``'s own ``ralph.yaml`` or ``ralph.yml``, if it has one."""
    for name in _DEFAULT_FILES:
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


def _read_block(source: Path) -> dict[str, Any]:
    try:
        document = yaml.safe_load(source.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {str(source)!r}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {str(source)!r} is not valid YAML: {exc}") from None
    node: Any = document if document is not None else {}
    walked: list[str] = []
    switched_off = False
    for name in _BLOCK:
        if not isinstance(node, dict):
            raise ConfigError(
                f"{'.'.join(walked) or 'the document'} in {str(source)!r} must be a mapping, "
                f"got {type(node).__name__}"
            )
        # The seed has a switch at each level: `learning.enabled` turns all learning off.
        switched_off = switched_off or node.get("enabled") is False
        walked.append(name)
        node = node.get(name, {})
        if node is None:
            node = {}
    if not isinstance(node, dict):
        raise ConfigError(
            f"{'.'.join(_BLOCK)} in {str(source)!r} must be a mapping, got {type(node).__name__}"
        )
    return {**node, "enabled": False} if switched_off else node


_DEPRECATED_PROMPT_KEY = "prompt_data"


def _refuse_prompt_data(source: Path | None) -> NoReturn:
    """Stop on the old ``prompt_data`` key rather than silently serving no prompts."""
    key, replacement = _key(_DEPRECATED_PROMPT_KEY), _key("prompts")
    ensure_logging()  # stderr: stdout may belong to the MCP stdio protocol
    log.warning(
        "deprecated_config_key",
        key=key,
        replacement=replacement,
        source=str(source) if source is not None else None,
    )
    where = f" in {str(source)!r}" if source is not None else ""
    raise ConfigError(
        f"{key}{where} is deprecated and no longer read: rename it to {replacement} "
        "(each item keeps its shape: name, description, arguments, type, content)"
    )


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _key(*parts: str | int) -> str:
    return ".".join([*_BLOCK, *(str(p) for p in parts)])


def _allowed_keys(loc: tuple[str | int, ...]) -> str:
    model: type[BaseModel] = Settings
    for part in loc[:-1]:
        if isinstance(part, int):
            continue  # an index into a tuple of models, e.g. prompts.0.arguments.1
        field = model.model_fields.get(part)
        inner = _model_of(field.annotation if field is not None else None)
        if inner is None:
            return ""
        model = inner
    return ", ".join(model.model_fields)


def _model_of(annotation: object) -> type[BaseModel] | None:
    """The model a field holds, directly or as the items of ``tuple[Model, ...]``."""
    if get_origin(annotation) is tuple:
        annotation = next(iter(get_args(annotation)), None)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _env_name(loc: tuple[str | int, ...]) -> str:
    # A list item has no variable of its own: the whole list is set at once, as JSON.
    path: list[str] = []
    for part in loc:
        if isinstance(part, int):
            return "RALPH_CONTEXT_" + "__".join(path) + ", as JSON"
        path.append(part.upper())
    return "RALPH_CONTEXT_" + "__".join(path)


def _describe(exc: ValidationError, source: Path | None) -> str:
    where = f" in {str(source)!r}" if source is not None else ""
    lines = [f"invalid configuration{where}:"]
    for error in exc.errors():
        loc = tuple(error["loc"])
        key = _key(*loc) if loc else ".".join(_BLOCK)
        env = _env_name(loc)
        if error["type"] == "extra_forbidden":
            lines.append(
                f"  {key}: unknown key (value {error['input']!r}); "
                f"allowed keys here: {_allowed_keys(loc)}"
            )
            continue
        if error["type"] == _DEFINITION_ERROR:
            lines.append(f"  {key}: {error['msg']}")
            continue
        message = error["msg"].removeprefix("Value error, ")
        lines.append(
            f"  {key} = {error['input']!r} is invalid: {message} (set in the file or via {env})"
        )
    return "\n".join(lines)
