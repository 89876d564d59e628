"""ralph-context: semantic, persistent, self-pruning memory for agent iteration loops.

The public API is what ``__all__`` lists; everything else may change without notice.
"""

from __future__ import annotations

from importlib import import_module

# Not typing.TYPE_CHECKING: importing typing costs an agent's hook process ~10 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ralph_context.config import Settings
    from ralph_context.engine import Engine, EngineHealth, NewItem
    from ralph_context.errors import (
        ActorUnavailable,
        AgentFileInvalid,
        ConfigError,
        ContentTooLarge,
        EmptyContent,
        IdempotencyConflict,
        InferenceError,
        InferenceServerError,
        InferenceTimeout,
        InvalidEncoding,
        InvalidInput,
        InvalidMetadata,
        InvalidScore,
        InvalidTags,
        ItemForgotten,
        ItemNotFound,
        ModelError,
        ModelMismatch,
        ModelNotServed,
        PromptFunctionError,
        RalphContextError,
        ServerUnreachable,
        StoreDamaged,
        StoreError,
        StoreLocked,
        StoreUnwritable,
        UnknownContextType,
        UnparseableReply,
    )
    from ralph_context.models import (
        ContextItem,
        ContextState,
        ContextType,
        IterationResult,
        RetrievalResult,
        RetrievedItem,
        Tier,
    )

__version__ = "0.1.0"

# Before anything imports LanceDB, whose import builds a REST client we never call (1.7 s of
# every process that opens a store): see storage/lance_import.py.
from ralph_context.storage import lance_import as _lance_import  # noqa: E402

_lance_import.install()

# Every public name is loaded on first use. The engine pulls in LanceDB (~1.5 s) and the
# settings pydantic and structlog (~0.5 s), which an agent's hook process (``hook claude``,
# a process per prompt with a 250 ms budget) and the CLI's quick commands never need.
_HOMES: dict[str, str] = {
    "Settings": "ralph_context.config",
    **dict.fromkeys(("Engine", "EngineHealth", "NewItem"), "ralph_context.engine"),
    **dict.fromkeys(
        (
            "ActorUnavailable",
            "AgentFileInvalid",
            "ConfigError",
            "ContentTooLarge",
            "EmptyContent",
            "IdempotencyConflict",
            "InferenceError",
            "ItemForgotten",
            "InferenceServerError",
            "InferenceTimeout",
            "InvalidEncoding",
            "InvalidInput",
            "InvalidMetadata",
            "InvalidScore",
            "InvalidTags",
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
        ),
        "ralph_context.errors",
    ),
    **dict.fromkeys(
        (
            "ContextItem",
            "ContextState",
            "ContextType",
            "IterationResult",
            "RetrievalResult",
            "RetrievedItem",
            "Tier",
        ),
        "ralph_context.models",
    ),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'ralph_context' has no attribute {name!r}")
    return getattr(import_module(home), name)


__all__ = [
    "ActorUnavailable",
    "AgentFileInvalid",
    "ConfigError",
    "ContentTooLarge",
    "ContextItem",
    "ContextState",
    "ContextType",
    "EmptyContent",
    "Engine",
    "EngineHealth",
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
    "IterationResult",
    "ModelError",
    "ModelMismatch",
    "ModelNotServed",
    "NewItem",
    "PromptFunctionError",
    "RalphContextError",
    "RetrievalResult",
    "RetrievedItem",
    "ServerUnreachable",
    "Settings",
    "StoreDamaged",
    "StoreError",
    "StoreLocked",
    "StoreUnwritable",
    "Tier",
    "UnknownContextType",
    "UnparseableReply",
    "__version__",
]
