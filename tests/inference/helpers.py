"""Building clients and settings against the fake servers."""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from ralph_context.config import InferenceSettings
from ralph_context.inference import RetryPolicy, ServerClient, adapter_for

# Milliseconds of backoff, so retry tests do not wait.
FAST = RetryPolicy(retries=3, backoff_initial=0.001, backoff_max=0.01)

USER = ({"role": "user", "content": "hello"},)


def client_for(
    url: str,
    http: httpx.AsyncClient,
    *,
    kind: str = "lmstudio",
    api_key_env: str | None = None,
    environ: Mapping[str, str] | None = None,
    max_concurrency: int = 4,
    retry: RetryPolicy = FAST,
    name: str | None = None,
) -> ServerClient:
    """A client for the server at ``url`` (``/v1`` appended for the kinds that need it)."""
    base = url if kind in ("lmstudio", "ollama") else f"{url}/v1"
    adapter = adapter_for(kind, base, api_key_env, name=name, environ=environ or {})
    return ServerClient(adapter, http, max_concurrency=max_concurrency, retry=retry)


def inference_section(*servers: Mapping[str, object], **overrides: object) -> dict[str, object]:
    """``inference`` keys for these servers: fast retries, nothing registered from the env."""
    fields: dict[str, object] = {
        "servers": list(servers),
        "register_from_env": False,
        "retries": 3,
        "backoff_initial_seconds": 0.001,
        "backoff_max_seconds": 0.01,
    }
    fields.update(overrides)
    return fields


def settings_for(*servers: Mapping[str, object], **overrides: object) -> InferenceSettings:
    """An ``inference`` section with these servers, fast retries and no env registration."""
    return InferenceSettings.model_validate(inference_section(*servers, **overrides))
