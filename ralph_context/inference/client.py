"""One server's HTTP client: model listing and streamed chat completions, with retries.

A 429, a 5xx, a refused or broken connection is retried (tenacity, exponential backoff with
jitter, ``Retry-After`` honoured up to the cap); any other status is final. Chat requests
take a slot of the server's capacity limiter for the duration of one attempt, so a backoff
never holds a slot. Deadlines are not set here: the caller wraps the call in one
``anyio.fail_after`` that covers waiting for a slot, every attempt and every backoff.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TypeVar

import anyio
import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential_jitter,
)

from ralph_context.errors import InferenceServerError, ServerUnreachable
from ralph_context.inference.adapters import Adapter
from ralph_context.inference.messages import ChatRequest, Completion
from ralph_context.inference.stream import StreamAccumulator, sse_data

__all__ = ["Progress", "RetryPolicy", "ServerClient"]

T = TypeVar("T")

# Characters of an error body quoted in a message: enough for a JSON error, not a web page.
_MAX_DETAIL = 300


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry (the ``inference`` settings' numbers)."""

    retries: int = 3
    backoff_initial: float = 0.5
    backoff_max: float = 8.0

    @property
    def attempts(self) -> int:
        """Requests made at most for one call."""
        return self.retries + 1


@dataclass
class Progress:
    """Where a request stands, so a passed deadline can say what it was waiting for."""

    server: str = ""
    attempts: int = 0
    max_attempts: int = 0
    waiting_for_slot: bool = False


class _Transient(Exception):
    """A reply worth retrying (429, 5xx); the last one becomes an ``InferenceServerError``."""

    def __init__(self, status: int, detail: str, retry_after: float | None) -> None:
        super().__init__(f"{status} {detail}")
        self.status = status
        self.detail = detail
        self.retry_after = retry_after


_RETRYABLE = (_Transient, httpx.TransportError)
_UNREACHABLE = (httpx.ConnectError, httpx.ConnectTimeout)


class ServerClient:
    """Talks to one server through a shared ``httpx.AsyncClient``.

    Args:
        adapter: Where the server is and what it expects.
        http: The connection pool (owned by the caller, who closes it).
        max_concurrency: Chat requests in flight to this server at once.
        retry: Attempts and backoff.
    """

    def __init__(
        self,
        adapter: Adapter,
        http: httpx.AsyncClient,
        *,
        max_concurrency: int = 4,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.adapter = adapter
        self.retry = retry if retry is not None else RetryPolicy()
        self.limiter = anyio.CapacityLimiter(max_concurrency)
        self._http = http
        self._backoff = wait_exponential_jitter(
            multiplier=self.retry.backoff_initial,
            max=self.retry.backoff_max,
            jitter=self.retry.backoff_initial,
        )

    @property
    def name(self) -> str:
        """The server's label."""
        return self.adapter.name

    async def fetch_models(self, progress: Progress | None = None) -> tuple[str, ...]:
        """The ids of the models the server lists (no capacity slot: listing is cheap and
        must not wait behind long completions).

        Raises:
            ServerUnreachable: No connection on any attempt.
            InferenceServerError: An error status, a missing key, or not a model list.
        """

        async def attempt() -> tuple[str, ...]:
            response = await self._http.get(self.adapter.models_url, headers=self.adapter.headers())
            await self._raise_for_status(response)
            try:
                payload: object = response.json()
            except ValueError:
                raise InferenceServerError(
                    f"{self.name}: {self.adapter.models_url} did not answer with JSON"
                ) from None
            return self.adapter.parse_models(payload)

        return await self._retrying(attempt, progress or Progress())

    async def chat(self, request: ChatRequest, progress: Progress | None = None) -> Completion:
        """Ask for one completion, streamed, and assemble it.

        Raises:
            ServerUnreachable: No connection on any attempt.
            InferenceServerError: An error status (after retries for 429/5xx), an error in
                the stream, an unreadable reply, or a missing key.
        """
        progress = progress or Progress()
        body = request.body(self.adapter.sampling_fields(request.repeat_penalty))

        async def attempt() -> Completion:
            headers = self.adapter.headers()
            progress.waiting_for_slot = True
            async with self.limiter:
                progress.waiting_for_slot = False
                started = time.perf_counter()
                answer = StreamAccumulator(self.name)
                async with self._http.stream(
                    "POST", self.adapter.chat_url, json=body, headers=headers
                ) as response:
                    await self._raise_for_status(response)
                    if "application/json" in response.headers.get("content-type", ""):
                        answer.feed_whole(_json(await response.aread(), self.name))
                    else:
                        async with aclosing(sse_data(response.aiter_lines())) as events:
                            async for payload in events:
                                answer.feed(payload)
                        answer.check()
                finished = time.perf_counter()
            first = answer.first_token_at
            return Completion(
                model_id=request.model_id,
                server=self.name,
                text=answer.text,
                tool_calls=answer.tool_calls(),
                finish_reason=answer.finish_reason,
                latency_ms=round((finished - started) * 1000, 1),
                first_token_ms=round((first - started) * 1000, 1) if first is not None else None,
                attempts=progress.attempts,
                reasoning=answer.reasoning,
                prompt_tokens=answer.prompt_tokens,
                completion_tokens=answer.completion_tokens,
            )

        return await self._retrying(attempt, progress)

    async def _retrying(self, operation: Callable[[], Awaitable[T]], progress: Progress) -> T:
        """Run ``operation`` until it succeeds, fails for good, or attempts run out."""
        progress.server = self.name
        progress.attempts, progress.max_attempts = 0, self.retry.attempts
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.retry.attempts),
            wait=self._wait,
            retry=retry_if_exception_type(_RETRYABLE),
            sleep=anyio.sleep,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    progress.attempts += 1
                    return await operation()
        except _Transient as exc:
            raise InferenceServerError(
                f"{self.name} answered {exc.status} on all {progress.attempts} attempts: "
                f"{exc.detail}",
                status=exc.status,
            ) from exc
        except _UNREACHABLE as exc:
            raise ServerUnreachable(
                f"cannot connect to {self.name} ({self.adapter.base_url}) after "
                f"{progress.attempts} attempts: {_describe(exc)}"
            ) from exc
        except httpx.HTTPError as exc:
            raise InferenceServerError(
                f"the connection to {self.name} broke on all {progress.attempts} attempts: "
                f"{_describe(exc)}"
            ) from exc
        raise AssertionError("tenacity ends with a value or an exception")

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, _Transient) and error.retry_after is not None:
            return min(error.retry_after, self.retry.backoff_max)
        return float(self._backoff(state))

    async def _raise_for_status(self, response: httpx.Response) -> None:
        status = response.status_code
        if 200 <= status < 300:
            return
        detail = _error_detail(await response.aread())
        if status == 429 or status >= 500:
            raise _Transient(status, detail, _retry_after(response))
        hint = ""
        if status in (401, 403):
            env = self.adapter.api_key_env
            hint = f" (check {env})" if env else " (set api_key_env for this server)"
        raise InferenceServerError(
            f"{self.name} refused the request with {status}: {detail}{hint}", status=status
        )


def _json(raw: bytes, source: str) -> object:
    try:
        parsed: object = json.loads(raw)
    except ValueError:
        raise InferenceServerError(f"{source} answered with JSON it could not parse") from None
    return parsed


def _error_detail(raw: bytes) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the start of the body."""
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        body: object = json.loads(text)
    except ValueError:
        return text[:_MAX_DETAIL] or "(empty body)"
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        error = error.get("message", error)
    return str(error)[:_MAX_DETAIL]


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: a number of seconds or an HTTP date
    (RFC 9110); ``None`` when absent or unreadable."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # an obsolete date form without a zone means GMT
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
