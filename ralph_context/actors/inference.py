"""Inference actor: owns the HTTP pool and the router to the configured language models.

Requests are answered concurrently (``Actor``'s ``max_in_flight``), each in its own task,
because a completion may stream for minutes and must not hold up a model listing or a
10-second judge call behind it. The inbox stays bounded and so do the tasks. Each server's
own ``max_concurrency`` then decides how many requests reach it at once.

With no server configured or registered from the environment the actor is ``down`` at
once (setup raises ``NotConfigured``) and callers get ``ActorUnavailable`` without waiting,
saying how to configure one; the engine keeps its extractive fallbacks. That is an optional
feature left off, not a failure: a crash would be logged as an error on every start of every
engine without a language model. A configuration that is wrong (a malformed
``LMSTUDIO_SERVERS``) does crash permanently, and is logged as such.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import anyio
import httpx
from pydantic import JsonValue

from ralph_context._logging import get_logger
from ralph_context.config import InferenceSettings, InferenceTimeouts
from ralph_context.errors import (
    ActorUnavailable,
    ConfigError,
    InferenceTimeout,
    InvalidInput,
)
from ralph_context.inference import (
    ChatRequest,
    Completion,
    Message,
    ModelListing,
    RetryPolicy,
    Router,
    ServerClient,
    ToolSpec,
    adapter_for,
)
from ralph_context.runtime import Actor, ActorState, NotConfigured, PermanentFailure

__all__ = ["CONFIGURE_MODEL", "NO_MODEL_CONFIGURED", "Complete", "InferenceActor", "ListModels"]

log = get_logger("ralph_context.inference")

# How to give the engine a language model server, said wherever one is missing.
CONFIGURE_MODEL = (
    "add learning.mcp_context.inference.servers to ralph.yaml, "
    "or set LMSTUDIO_SERVERS, OLLAMA_HOST, TOGETHER_API_KEY or HF_TOKEN"
)
NO_MODEL_CONFIGURED = f"no language model configured: {CONFIGURE_MODEL}"


# The actor's own deadline runs this much past the request's, so the typed InferenceTimeout
# raised at the request's deadline reaches the caller instead of a bare ActorUnavailable.
_REPLY_GRACE = 2.0


@dataclass(frozen=True)
class ListModels:
    """Ask every server for its models; the reply is a :class:`ModelListing`."""


@dataclass(frozen=True)
class Complete:
    """One completion, due ``timeout`` seconds after ``asked_at`` (on
    ``anyio.current_time()``'s clock), so time spent queued counts against the caller's
    timeout. The reply is a :class:`Completion`."""

    request: ChatRequest
    timeout: float
    asked_at: float


InferenceRequest = ListModels | Complete
InferenceReply = ModelListing | Completion


class InferenceActor(Actor[InferenceRequest, InferenceReply]):
    """Answers :class:`ListModels` and :class:`Complete`; call the typed wrappers.

    Args:
        settings: The ``inference`` section.
        environ: Where server registrations and API keys are read; ``None`` means
            ``os.environ`` (tests pass their own).
        max_in_flight: Requests answered at once; the rest wait in the inbox.
    """

    def __init__(
        self,
        settings: InferenceSettings,
        *,
        environ: Mapping[str, str] | None = None,
        max_in_flight: int = 64,
    ) -> None:
        super().__init__("inference", inbox_size=64, max_in_flight=max_in_flight)
        self.settings = settings
        self._environ = environ
        self._http: httpx.AsyncClient | None = None
        self._router: Router | None = None

    @property
    def timeouts(self) -> InferenceTimeouts:
        """Per-tool deadlines in seconds (``list_models``, ``complete``, ``judge``...)."""
        return self.settings.timeouts

    async def list_models(self) -> ModelListing:
        """Every model the servers serve, sorted and deduplicated, and each server's status
        (an unreachable one is listed with its error instead of failing the call).

        Raises:
            ActorUnavailable: No model is configured (the message says how to add one), or
                the actor did not answer within ``timeouts.list_models``.
        """
        reply = await self._ask(ListModels(), self.timeouts.list_models + _REPLY_GRACE)
        assert isinstance(reply, ModelListing)
        return reply

    async def complete(
        self,
        model_id: str,
        messages: Sequence[Message],
        *,
        temperature: float = 0.7,
        max_tokens: int = 1024,
        timeout_seconds: float | None = None,
        tools: Sequence[ToolSpec] | None = None,
        seed: int | None = None,
        repeat_penalty: float | None = None,
        response_format: Mapping[str, JsonValue] | None = None,
    ) -> Completion:
        """Ask ``model_id`` for a chat completion (streamed under the hood).

        Args:
            model_id: An id from :meth:`list_models`.
            messages: OpenAI-shaped messages, passed through as given.
            temperature: 0-2.
            max_tokens: Tokens to generate at most.
            timeout_seconds: Bound on the whole call, retries and queueing included;
                defaults to ``timeouts.complete``. Tools pass their own (``timeouts.judge``).
            tools: OpenAI function definitions the model may call.
            seed: For reproducible sampling, where the server supports it.
            repeat_penalty: Multiplicative repetition penalty (1.0 = none), sent to the
                servers that have one (LM Studio, Together) and left out for the others.
            response_format: E.g. ``{"type": "json_object"}`` or a ``json_schema``.

        Returns:
            The text, the tool calls (id, name, raw arguments), latency and attempts.

        Raises:
            InvalidInput: A bad argument.
            ModelNotServed: No server lists ``model_id``; the message lists those that do.
            ServerUnreachable: Every server listing it refused the connection.
            InferenceServerError: The server answered with an error.
            InferenceTimeout: No complete answer within ``timeout_seconds``.
            ActorUnavailable: No model is configured, or the actor is down.
        """
        timeout = self.timeouts.complete if timeout_seconds is None else timeout_seconds
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise InvalidInput(f"timeout_seconds must be a number, got {timeout!r}")
        if not math.isfinite(timeout) or timeout <= 0:
            raise InvalidInput(f"timeout_seconds must be above 0, got {timeout!r}")
        request = ChatRequest(
            model_id,
            tuple(messages),
            temperature,
            max_tokens,
            tuple(tools or ()),
            seed,
            repeat_penalty,
            response_format,
        )
        asked = Complete(request, timeout, anyio.current_time())
        reply = await self._ask(asked, timeout + _REPLY_GRACE)
        assert isinstance(reply, Completion)
        return reply

    async def _ask(self, request: InferenceRequest, within: float) -> InferenceReply:
        if self.health.state is ActorState.DOWN:
            # Say why (usually: nothing configured), not just that it is down.
            if not self.configured:
                raise ActorUnavailable(NO_MODEL_CONFIGURED)
            raise ActorUnavailable(f"inference is down: {self.health.last_error}")
        return await self.call(request, timeout=within)

    # --- the actor --------------------------------------------------------------------------

    async def setup(self) -> None:
        settings = self.settings
        try:
            servers = settings.resolved_servers(self._environ)
            if not servers:
                # Down by choice, not by failure: `configured` turns False and the engine's
                # health does not count it (see EngineHealth.not_configured).
                log.info("inference_not_configured", reason=NO_MODEL_CONFIGURED)
                raise NotConfigured(NO_MODEL_CONFIGURED)
            adapters = [
                adapter_for(
                    server.kind,
                    server.base_url,
                    server.api_key_env,
                    name=server.name,
                    environ=self._environ,
                )
                for server in servers
            ]
        except ConfigError as exc:
            raise PermanentFailure(str(exc)) from exc
        retry = RetryPolicy(
            settings.retries, settings.backoff_initial_seconds, settings.backoff_max_seconds
        )
        # No read timeout: each request's deadline is one anyio scope around all attempts.
        http = httpx.AsyncClient(
            timeout=httpx.Timeout(None, connect=settings.connect_timeout_seconds)
        )
        clients = [
            ServerClient(adapter, http, max_concurrency=server.max_concurrency, retry=retry)
            for adapter, server in zip(adapters, servers, strict=True)
        ]
        try:
            self._router = Router(clients, list_timeout=settings.timeouts.list_models)
        except ConfigError as exc:
            await http.aclose()
            raise PermanentFailure(str(exc)) from exc
        self._http = http
        log.info("inference_servers", servers=[client.name for client in clients])

    async def teardown(self) -> None:
        http, self._http, self._router = self._http, None, None
        if http is not None:
            await http.aclose()

    async def handle(self, request: InferenceRequest) -> InferenceReply:
        router = self._router
        assert router is not None, "setup() builds the router before any request"
        if isinstance(request, ListModels):
            return await router.list_models()
        if anyio.current_time() >= request.asked_at + request.timeout:
            raise InferenceTimeout(
                f"model {request.request.model_id!r} gave no answer within "
                f"{request.timeout:g}s (the request waited in the queue: every slot was busy)"
            )
        return await router.complete(
            request.request, timeout_seconds=request.timeout, asked_at=request.asked_at
        )
