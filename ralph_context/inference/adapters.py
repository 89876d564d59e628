"""Adapters: what differs between OpenAI-compatible servers, one small class per kind.

Every kind speaks the same chat-completions protocol; they differ only in where the API
lives, which key they want, how their model list is shaped and what the repetition penalty
is called. Endpoints, relative to the adapter's ``base_url`` (which ends in ``/v1``):

- models: ``GET {base_url}/models``. LM Studio, Together, the Hugging Face router and generic
  servers answer in OpenAI's shape ``{"data": [{"id": ...}]}``; Ollama serves the same shape
  on its OpenAI-compatible ``/v1/models`` (its native ``/api/tags`` is not used); Together
  answers with a bare list whose entries carry a ``type``, of which only chat-capable ones
  are kept.
- chat: ``POST {base_url}/chat/completions`` with ``"stream": true``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import ClassVar
from urllib.parse import urlsplit

from pydantic import JsonValue

from ralph_context.errors import ConfigError, InferenceServerError

__all__ = [
    "Adapter",
    "HuggingFaceAdapter",
    "LMStudioAdapter",
    "OllamaAdapter",
    "OpenAIAdapter",
    "TogetherAdapter",
    "adapter_for",
]


class Adapter:
    """How to reach one server of a kind.

    Args:
        base_url: The API root; ``None`` means the kind's default.
        api_key_env: Variable holding the bearer token; ``None`` means the kind's default.
        name: Label in listings and errors; defaults to ``kind@host:port``.
        environ: Where the key is read from, once, here; ``None`` means ``os.environ``.

    Raises:
        ConfigError: The kind has no default URL and none was given.
    """

    kind: ClassVar[str] = "openai"
    default_base_url: ClassVar[str | None] = None
    default_key_env: ClassVar[str | None] = None
    # The request field for a multiplicative repetition penalty; None: the API has none,
    # and sending an unknown field makes strict servers (OpenAI) refuse the whole request.
    repeat_penalty_field: ClassVar[str | None] = None

    def __init__(
        self,
        base_url: str | None = None,
        api_key_env: str | None = None,
        *,
        name: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        url = base_url or self.default_base_url
        if url is None:
            raise ConfigError(f"a server of kind {self.kind!r} needs a base_url")
        self.base_url = self._api_root(url.rstrip("/"))
        self.api_key_env = api_key_env or self.default_key_env
        self.name = name or f"{self.kind}@{urlsplit(self.base_url).netloc}"
        env = os.environ if environ is None else environ
        self._api_key = env.get(self.api_key_env) if self.api_key_env else None

    def _api_root(self, url: str) -> str:
        return url

    @property
    def models_url(self) -> str:
        """Where the model list is read."""
        return f"{self.base_url}/models"

    @property
    def chat_url(self) -> str:
        """Where chat completions are posted."""
        return f"{self.base_url}/chat/completions"

    def headers(self) -> dict[str, str]:
        """Request headers, with the bearer token if this server takes one.

        Raises:
            InferenceServerError: The server wants a key and its variable is not set.
        """
        if self.api_key_env is None:
            return {}
        if not self._api_key:
            raise InferenceServerError(
                f"{self.name}: the API key variable {self.api_key_env} is not set"
            )
        return {"Authorization": f"Bearer {self._api_key}"}

    def sampling_fields(self, repeat_penalty: float | None) -> dict[str, JsonValue]:
        """Request fields this kind needs beyond the OpenAI standard ones."""
        if repeat_penalty is None or self.repeat_penalty_field is None:
            return {}
        return {self.repeat_penalty_field: repeat_penalty}

    def parse_models(self, payload: object) -> tuple[str, ...]:
        """Model ids from a ``/models`` reply, in the server's order.

        Raises:
            InferenceServerError: The reply is not a model list.
        """
        entries = payload.get("data") if isinstance(payload, dict) else payload
        if not isinstance(entries, list):
            raise InferenceServerError(f"{self.name}: {self.models_url} is not a model list")
        return tuple(
            entry["id"]
            for entry in entries
            if isinstance(entry, dict) and isinstance(entry.get("id"), str) and self._keep(entry)
        )

    def _keep(self, entry: dict[str, object]) -> bool:
        return True


class OpenAIAdapter(Adapter):
    """Any OpenAI-compatible server (vLLM, llama.cpp, OpenRouter, OpenAI): ``base_url`` is
    required and used as given, and a key is sent only if ``api_key_env`` names one."""


class _LocalAdapter(Adapter):
    """A local server whose OpenAI API is always under ``/v1``: accept the URL either way."""

    def _api_root(self, url: str) -> str:
        return url if url.endswith("/v1") else f"{url}/v1"


class LMStudioAdapter(_LocalAdapter):
    """LM Studio (``/v1/models`` lists the models it has, loaded or loadable just in time)."""

    kind = "lmstudio"
    default_base_url = "http://localhost:1234/v1"
    repeat_penalty_field = "repeat_penalty"


class OllamaAdapter(_LocalAdapter):
    """Ollama's OpenAI-compatible API (which has no repetition penalty field)."""

    kind = "ollama"
    default_base_url = "http://localhost:11434/v1"


class TogetherAdapter(Adapter):
    """Together's hosted models, keyed by ``TOGETHER_API_KEY``."""

    kind = "together"
    default_base_url = "https://api.together.xyz/v1"
    default_key_env = "TOGETHER_API_KEY"
    repeat_penalty_field = "repetition_penalty"
    # Its catalogue also lists image, embedding, rerank and audio models.
    _chat_types: ClassVar[frozenset[str]] = frozenset({"chat", "language", "code"})

    def _keep(self, entry: dict[str, object]) -> bool:
        kind = entry.get("type")
        return not isinstance(kind, str) or kind in self._chat_types


class HuggingFaceAdapter(Adapter):
    """The Hugging Face inference router, keyed by ``HF_TOKEN``."""

    kind = "huggingface"
    default_base_url = "https://router.huggingface.co/v1"
    default_key_env = "HF_TOKEN"


_KINDS: dict[str, type[Adapter]] = {
    cls.kind: cls
    for cls in (LMStudioAdapter, OllamaAdapter, TogetherAdapter, HuggingFaceAdapter, OpenAIAdapter)
}


def adapter_for(
    kind: str,
    base_url: str | None = None,
    api_key_env: str | None = None,
    *,
    name: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Adapter:
    """The adapter for ``kind`` (``lmstudio``, ``ollama``, ``together``, ``huggingface``,
    ``openai``).

    Raises:
        ConfigError: Unknown kind, or ``openai`` without a ``base_url``.
    """
    cls = _KINDS.get(kind)
    if cls is None:
        raise ConfigError(f"unknown server kind {kind!r}; allowed: {', '.join(_KINDS)}")
    return cls(base_url, api_key_env, name=name, environ=environ)
