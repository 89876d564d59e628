"""Routing: which server answers a model id, from the servers' own model lists.

Several servers compose into one catalogue. Each server's ``/models`` list (its manifest) is
read on :meth:`Router.list_models` and whenever a model id is asked for that no known list
holds, so a model loaded after start is found without a restart; concurrent misses share
one refresh. When several servers list a model, the one with the most free capacity slots
answers, ties going to the first configured. A server that cannot be reached is dropped
from routing until the next refresh, and the request moves on to the next server listing
the model. A server that lists a model but answers 404 for it (unloaded since it was listed,
or listed as loadable when it is not) is passed over for that model for ``REFUSAL_SECONDS``,
even if its listing still shows it; when no server is left the caller gets
``ModelNotServed`` with the servers' own words at once, not a 404 per request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import anyio

from ralph_context._logging import get_logger
from ralph_context.errors import (
    ConfigError,
    InferenceError,
    InferenceServerError,
    InferenceTimeout,
    ModelNotServed,
    ServerUnreachable,
)
from ralph_context.inference.client import Progress, ServerClient
from ralph_context.inference.messages import ChatRequest, Completion

__all__ = ["ModelListing", "Router", "ServerStatus"]

_NOT_FOUND = 404
# How long a server that answered 404 for a model it lists is passed over for that model.
REFUSAL_SECONDS = 60.0

log = get_logger("ralph_context.inference")


@dataclass(frozen=True)
class ServerStatus:
    """One server as last asked: the models it lists, or why it could not be asked."""

    name: str
    kind: str
    base_url: str
    models: tuple[str, ...] = ()
    error: str | None = None

    @property
    def reachable(self) -> bool:
        """True when the server answered with its model list."""
        return self.error is None


@dataclass(frozen=True)
class ModelListing:
    """Every model the servers serve (sorted, each id once) and each server's status."""

    models: tuple[str, ...]
    servers: tuple[ServerStatus, ...]

    @property
    def unreachable(self) -> tuple[ServerStatus, ...]:
        """Servers that did not answer with a model list, each with its error."""
        return tuple(server for server in self.servers if not server.reachable)


class Router:
    """Sends each request to a server that serves its model.

    Args:
        clients: The servers, in priority order.
        list_timeout: Seconds one server may take to list its models.
        refusal_seconds: How long a server that answered 404 for a model it lists is
            passed over for that model.

    Raises:
        ConfigError: Two servers share a name.
    """

    def __init__(
        self,
        clients: Sequence[ServerClient],
        *,
        list_timeout: float = 30.0,
        refusal_seconds: float = REFUSAL_SECONDS,
    ) -> None:
        names = [client.name for client in clients]
        for name in names:
            if names.count(name) > 1:
                raise ConfigError(
                    f"two inference servers are named {name!r} (the same URL twice?); "
                    "give each a distinct name"
                )
        self.clients = tuple(clients)
        self.list_timeout = list_timeout
        self.refusal_seconds = refusal_seconds
        self._statuses: dict[str, ServerStatus] = {}
        # (server, model) -> (until, the server's words): listed but answered 404.
        self._refused: dict[tuple[str, str], tuple[float, str]] = {}
        self._lock = anyio.Lock()
        self._generation = 0

    async def list_models(self) -> ModelListing:
        """Ask every server for its models now (concurrently) and return the catalogue."""
        await self._refresh()
        return self.listing()

    def listing(self) -> ModelListing:
        """The catalogue as last read, without asking the servers again."""
        servers = tuple(
            self._statuses[client.name] for client in self.clients if client.name in self._statuses
        )
        models = sorted({model for server in servers for model in server.models})
        return ModelListing(tuple(models), servers)

    async def complete(
        self, request: ChatRequest, *, timeout_seconds: float, asked_at: float | None = None
    ) -> Completion:
        """Route ``request`` to a server that serves its model and return the answer.

        ``timeout_seconds`` bounds everything: a manifest refresh, waiting for a free slot,
        every attempt and every backoff. It counts from ``asked_at`` (on
        ``anyio.current_time()``'s clock; default: now), so time a request spent queued
        before reaching the router is not granted twice.

        Raises:
            ModelNotServed: No server lists the model, even after asking them again.
            ServerUnreachable: Every server listing the model refused the connection.
            InferenceServerError: The server answered with an error.
            InferenceTimeout: No complete answer within ``timeout_seconds``.
        """
        progress = Progress()
        start = anyio.current_time() if asked_at is None else asked_at
        try:
            with anyio.fail_after(start + timeout_seconds - anyio.current_time()):
                return await self._route(request, progress)
        except TimeoutError as exc:
            raise InferenceTimeout(_late(request.model_id, timeout_seconds, progress)) from exc

    async def _route(self, request: ChatRequest, progress: Progress) -> Completion:
        failure: ServerUnreachable | None = None
        model_id = request.model_id
        for client in await self._candidates(model_id):
            try:
                return await client.chat(request, progress)
            except ServerUnreachable as exc:
                failure = exc
                self._statuses[client.name] = self._status(client, error=str(exc))
                log.warning("inference_server_unreachable", server=client.name, error=str(exc))
            except InferenceServerError as exc:
                if exc.status != _NOT_FOUND:
                    raise
                # Listed but not served (unloaded since, or listed as downloadable only):
                # not sent there again for a while, even if its listing still shows it.
                self._refused[(client.name, model_id)] = (
                    anyio.current_time() + self.refusal_seconds,
                    str(exc),
                )
                log.warning(
                    "inference_model_not_found", server=client.name, model=model_id, error=str(exc)
                )
        if self._refusals(model_id):
            raise self._not_served(model_id)
        assert failure is not None, "_candidates returns at least one server"
        raise failure

    async def _candidates(self, model_id: str) -> list[ServerClient]:
        serving = self._serving(model_id)
        if not serving and not self._refusals(model_id):
            await self._refresh()
            serving = self._serving(model_id)
        if not serving:
            raise self._not_served(model_id)
        # Most free slots first; sorted() is stable, so ties keep the configured priority.
        return sorted(serving, key=lambda client: -client.limiter.available_tokens)

    def _serving(self, model_id: str) -> list[ServerClient]:
        refused = self._refusals(model_id)
        return [
            client
            for client in self.clients
            if client.name in self._statuses
            and model_id in self._statuses[client.name].models
            and client.name not in refused
        ]

    def _refusals(self, model_id: str) -> dict[str, str]:
        """Servers that answered 404 for ``model_id`` less than ``refusal_seconds`` ago."""
        now = anyio.current_time()
        return {
            server: words
            for (server, model), (until, words) in self._refused.items()
            if model == model_id and until > now
        }

    def _not_served(self, model_id: str) -> ModelNotServed:
        listing = self.listing()
        refused = self._refusals(model_id)
        usable = tuple(model for model in listing.models if not (refused and model == model_id))
        unreachable = tuple(server.name for server in listing.unreachable)
        return ModelNotServed(model_id, usable, unreachable, refused=tuple(refused.values()))

    async def _refresh(self) -> None:
        seen = self._generation
        async with self._lock:
            if self._generation != seen:
                return  # another task refreshed while this one waited: its lists are fresh
            statuses: dict[str, ServerStatus] = {}
            async with anyio.create_task_group() as tg:
                for client in self.clients:
                    tg.start_soon(self._ask, client, statuses)
            self._statuses = statuses
            self._generation += 1

    async def _ask(self, client: ServerClient, into: dict[str, ServerStatus]) -> None:
        with anyio.move_on_after(self.list_timeout) as scope:
            try:
                models = await client.fetch_models()
            except InferenceError as exc:
                into[client.name] = self._status(client, error=str(exc))
            else:
                into[client.name] = self._status(client, models=models)
        if scope.cancelled_caught:
            error = f"{client.name} did not list its models within {self.list_timeout:g}s"
            into[client.name] = self._status(client, error=error)

    @staticmethod
    def _status(
        client: ServerClient, *, models: tuple[str, ...] = (), error: str | None = None
    ) -> ServerStatus:
        adapter = client.adapter
        return ServerStatus(adapter.name, adapter.kind, adapter.base_url, models, error)


def _late(model_id: str, timeout: float, progress: Progress) -> str:
    """Why a deadline passed, in words: what the request was waiting for at that moment."""
    head = f"model {model_id!r} gave no complete answer within {timeout:g}s"
    if not progress.server:
        return f"{head} (still asking the servers which models they serve)"
    if progress.waiting_for_slot:
        return (
            f"{head} (waiting for a free slot on {progress.server}: "
            "all its max_concurrency requests were busy)"
        )
    return f"{head} ({progress.server}, attempt {progress.attempts} of {progress.max_attempts})"
