"""Every error ralph-context raises on purpose.

One root, so adapters (MCP server, Ralph hook, CLI) can turn any of them into a message a
person understands with a single ``except RalphContextError``::

    RalphContextError
    ├── ConfigError                 ralph.yaml or RALPH_CONTEXT_* holds a value we cannot use
    │   └── AgentFileInvalid        an agent's own settings file init would edit is malformed
    ├── InvalidInput                a caller handed us something we refuse to store or query
    │   ├── EmptyContent
    │   ├── ContentTooLarge
    │   ├── InvalidEncoding
    │   ├── UnknownContextType
    │   ├── InvalidTags
    │   ├── InvalidScore
    │   ├── InvalidMetadata
    │   ├── IdempotencyConflict     a key used again, with other arguments than its first use
    │   └── ItemForgotten           a write would bring back what a forget deleted
    ├── ItemNotFound                an id that is not (or no longer) in the store
    ├── StoreError                  the store cannot serve the request
    │   ├── ModelMismatch           the store was embedded with another model
    │   ├── StoreLocked             another process writes the store (named in the message)
    │   ├── StoreUnwritable         a write failed for space, permissions or I/O: read-only
    │   └── StoreDamaged            the store's files are damaged: read-only, repair, salvage
    ├── ModelError                  the embedding model cannot be installed or loaded
    ├── ActorUnavailable            an actor is down, restarting, or did not answer in time
    ├── PromptFunctionError         a custom prompt's function raised or returned a non-string
    └── InferenceError              a language model server could not give an answer
        ├── ModelNotServed          no configured server lists that model id
        ├── ServerUnreachable       no connection to the server could be made, after retries
        ├── InferenceTimeout        no complete answer within the tool's timeout
        ├── InferenceServerError    the server answered with an error, or with nothing we can read
        └── UnparseableReply        the model answered, but not in the form the tool asked for

Expected per-request failures (the ``InvalidInput`` family, ``ItemNotFound``) travel from an
actor back to its caller as values; they never crash the actor that found them. So does the
``InferenceError`` family: a model server that is down or slow is a fact to report, not a bug.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "ActorUnavailable",
    "AgentFileInvalid",
    "ConfigError",
    "ContentTooLarge",
    "EmptyContent",
    "IdempotencyConflict",
    "InferenceError",
    "InferenceServerError",
    "InferenceTimeout",
    "InvalidEncoding",
    "InvalidInput",
    "InvalidMetadata",
    "InvalidScore",
    "InvalidTags",
    "ItemForgotten",
    "ItemNotFound",
    "ModelError",
    "ModelMismatch",
    "ModelNotServed",
    "PromptFunctionError",
    "RalphContextError",
    "ServerUnreachable",
    "StoreDamaged",
    "StoreError",
    "StoreLocked",
    "StoreUnwritable",
    "UnknownContextType",
    "UnparseableReply",
]


class RalphContextError(Exception):
    """Root of every error ralph-context raises deliberately."""


class ConfigError(RalphContextError):
    """The configuration names a key with a value we cannot use."""


class AgentFileInvalid(ConfigError):
    """A file of another program's (``.claude/settings.json``, ``.mcp.json``, Codex's
    ``hooks.json`` or ``config.toml``) that ``init --agent`` would edit is malformed; it was
    left as it was and nothing else was written.

    Attributes:
        path: The file.
        problem: What is wrong in it, as a person would fix it.
    """

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}; fix it and run init again (nothing was written)")
        self.path = path
        self.problem = problem


class InvalidInput(RalphContextError, ValueError):
    """A caller's argument is refused; nothing was stored or changed."""


class EmptyContent(InvalidInput):
    """Content is empty or only whitespace."""


class ContentTooLarge(InvalidInput):
    """Content exceeds ``storage.max_content_bytes``."""


class InvalidEncoding(InvalidInput):
    """Content is not valid UTF-8 text."""


class UnknownContextType(InvalidInput):
    """A context type outside task/iteration/skill/file/output/error."""


class InvalidTags(InvalidInput):
    """Tags must be a list of non-empty strings."""


class InvalidScore(InvalidInput):
    """A score is NaN, infinite, or outside its allowed range."""


class InvalidMetadata(InvalidInput):
    """Metadata must be a JSON object of JSON-serialisable values."""


class IdempotencyConflict(InvalidInput):
    """An idempotency key was used before by a request with other arguments: a key stands
    for one request (as with payment APIs), so answering with the first result would drop
    the new content silently. Nothing was stored."""

    # In every message: a client of the server knows the refusal by it (a tool error
    # carries text, not the type).
    MARK = "was used for a different request"


class ItemForgotten(InvalidInput):
    """A write would bring back what a forget deleted: a retry with the idempotency key of
    a forgotten item, an item of a forgotten id, or a capture the hooks spooled before the
    forget. Forget is final (``storage.lifecycle.tombstones``); nothing was stored. ``import
    --include-forgotten`` is the one way to bring forgotten items back."""

    # In every message, as IdempotencyConflict's mark (a tool error carries text only).
    MARK = "was forgotten"


class ItemNotFound(RalphContextError, KeyError):
    """No item with that id exists in the store."""

    def __str__(self) -> str:
        # KeyError.__str__ would wrap the message in quotes.
        return str(self.args[0]) if self.args else "item not found"


class StoreError(RalphContextError):
    """The store cannot serve this request (unreadable, full, or inconsistent)."""


class ModelMismatch(StoreError):
    """The store's vectors come from a different embedding model or dimension."""


class StoreLocked(StoreError):
    """Another process writes this store; the message names it and how to reach it."""


class StoreUnwritable(StoreError):
    """A write failed because the store's disk cannot take it: full (``ENOSPC``, ``EDQUOT``),
    not permitted (``EACCES``, ``EPERM``), read-only (``EROFS``) or failing (``EIO``).

    Not a bug and not a lost store: the store stays readable, so it is served read-only
    (reads, searches and the hooks go on) and writes are refused with this error until a
    probe write succeeds. The message leads with what a person fixes, e.g.
    ``store is full: No space left on device at /path/to/store``.

    Attributes:
        reason: The operating system's words for it (``No space left on device``).
        location: The store.
    """

    def __init__(self, headline: str, reason: str, location: str) -> None:
        super().__init__(f"{headline}: {reason} at {location}")
        self.reason = reason
        self.location = location


class StoreDamaged(StoreError):
    """The store's files are damaged (a latest manifest unreadable, a data file missing or
    changed): it is served read-only with what can be read (a table at its newest readable
    version), ``ralph-context repair`` makes that version current, ``export`` saves what
    can be read. The message names each file and what is wrong with it.

    Attributes:
        damaged: Each unreadable file, with Lance's words for it.
    """

    def __init__(self, location: str, damaged: list[tuple[str, str]]) -> None:
        named = "; ".join(f"{path}: {problem}" for path, problem in damaged)
        super().__init__(
            f"the store at {location} is damaged ({named}); it is served read-only with "
            "what can be read. `ralph-context verify` checks every file; where a latest "
            "version cannot be read, `ralph-context repair` makes the newest readable one "
            "current (and reports what the lost versions held), where a data file is gone "
            "it leaves that file's rows out, then restart; `ralph-context export` saves "
            "every fragment that can be read"
        )
        self.location = location
        self.damaged = damaged


class ModelError(RalphContextError):
    """The embedding model cannot be installed or loaded."""


class ActorUnavailable(RalphContextError):
    """An actor is down, restarting, shut down, or did not answer within the timeout."""


class PromptFunctionError(RalphContextError):
    """A custom prompt's Python function raised, or returned something other than a string.

    The call was valid; the user's code failed, so this is neither ``InvalidInput`` nor
    ``ConfigError`` (the definition loaded and imported fine).
    """


class InferenceError(RalphContextError):
    """A language model server could not give an answer; the message says which and why."""


# Known models named in a ModelNotServed message at most: a hosted catalogue has hundreds.
_MAX_SHOWN = 30


class ModelNotServed(InferenceError):
    """No configured server lists the model id; ``known`` holds the ids that are served.

    Args:
        model_id: The id that was asked for.
        known: Every model id the reachable servers list, sorted.
        unreachable: Servers that could not be asked (they might serve it).
        refused: What servers said that listed the model but answered 404 for it.
    """

    def __init__(
        self,
        model_id: str,
        known: tuple[str, ...],
        unreachable: tuple[str, ...] = (),
        *,
        refused: tuple[str, ...] = (),
    ) -> None:
        self.model_id = model_id
        self.known = known
        self.unreachable = unreachable
        self.refused = refused
        shown = ", ".join(known[:_MAX_SHOWN]) or "none"
        if len(known) > _MAX_SHOWN:
            shown += f" and {len(known) - _MAX_SHOWN} more (see list_models)"
        message = f"no configured server serves model {model_id!r}; known models: {shown}"
        if unreachable:
            message += f" (not asked, unreachable: {', '.join(unreachable)})"
        if refused:
            message += f"; listed but not served: {'; '.join(refused)}"
        super().__init__(message)


class ServerUnreachable(InferenceError):
    """No connection to the server could be made (refused, or no answer to connect) on any
    attempt. A connection that breaks mid-answer is an ``InferenceServerError``."""


class InferenceTimeout(InferenceError):
    """The model gave no complete answer within the tool's timeout (retries included)."""


class InferenceServerError(InferenceError):
    """The server answered with an error status (after retries for 429/5xx), an error inside
    the stream, or a reply that is not OpenAI-shaped; the connection broke on every attempt;
    or its API key variable is not set.

    Args:
        message: What happened, naming the server.
        status: The HTTP status, when the server sent one.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


class UnparseableReply(InferenceError):
    """The model answered, but its reply holds nothing the tool can use (no verdict in a
    judge's reply, no JSON object of variants); the message quotes the reply's start.

    Not ``InvalidInput``: the caller's arguments were fine, the model did not follow the
    format it was asked for. Trying again, or another model, may well succeed.
    """
