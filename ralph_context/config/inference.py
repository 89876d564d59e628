"""``inference:``: language model servers, configured or registered from the environment."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Literal

from pydantic import Field, field_validator, model_validator

from ralph_context._logging import get_logger
from ralph_context.config.section import Section, definition_error
from ralph_context.errors import ConfigError

__all__ = [
    "HF_TOKEN_ENV",
    "LMSTUDIO_SERVERS_ENV",
    "OLLAMA_HOST_ENV",
    "TOGETHER_KEY_ENV",
    "InferenceServerSettings",
    "InferenceSettings",
    "InferenceTimeouts",
    "ProviderKind",
    "ollama_url",
]

log = get_logger("ralph_context.config")

ProviderKind = Literal["lmstudio", "ollama", "together", "huggingface", "openai"]

# Environment variables that register servers without any file (see InferenceSettings).
LMSTUDIO_SERVERS_ENV = "LMSTUDIO_SERVERS"
TOGETHER_KEY_ENV = "TOGETHER_API_KEY"
HF_TOKEN_ENV = "HF_TOKEN"
OLLAMA_HOST_ENV = "OLLAMA_HOST"
_HTTP_URL = re.compile(r"https?://[^\s/?#]+[^\s]*")
# Addresses a server binds to that a client reaches on the loopback address.
_BIND_ALL = frozenset({"", "0.0.0.0", "::"})


class InferenceServerSettings(Section):
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


class InferenceTimeouts(Section):
    """Seconds each language model tool may take, retries included (the spec's contract)."""

    list_models: float = Field(default=30.0, gt=0, allow_inf_nan=False)
    complete: float = Field(default=300.0, gt=0, allow_inf_nan=False)
    react_step: float = Field(default=300.0, gt=0, allow_inf_nan=False)
    judge: float = Field(default=60.0, gt=0, allow_inf_nan=False)
    generate_variants: float = Field(default=60.0, gt=0, allow_inf_nan=False)
    embedding: float = Field(default=10.0, gt=0, allow_inf_nan=False)


class InferenceSettings(Section):
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
                raise definition_error(f"server name {name!r} is used twice; names label errors")
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
