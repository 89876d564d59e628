"""ralph-context: semantic, persistent, self-pruning memory for agent iteration loops.

The public API is what ``__all__`` lists; everything else may change without notice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ralph_context.config import Settings
from ralph_context.errors import (
    ActorUnavailable,
    AgentFileInvalid,
    ConfigError,
    ContentTooLarge,
    EmptyContent,
    InferenceError,
    InferenceServerError,
    InferenceTimeout,
    InvalidEncoding,
    InvalidInput,
    InvalidMetadata,
    InvalidScore,
    InvalidTags,
    ItemNotFound,
    ModelError,
    ModelMismatch,
    ModelNotServed,
    PromptFunctionError,
    RalphContextError,
    ServerUnreachable,
    StoreError,
    StoreLocked,
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

if TYPE_CHECKING:
    from ralph_context.engine import Engine, EngineHealth, NewItem

__version__ = "0.1.0"

# Loaded on first use: the engine pulls in LanceDB (~1.5 s), which the CLI's quick commands
# (`--help`, `init`, `model install`, refusals of bad input) never need.
_LAZY = {"Engine", "EngineHealth", "NewItem"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from ralph_context import engine

        return getattr(engine, name)
    raise AttributeError(f"module 'ralph_context' has no attribute {name!r}")


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
    "InferenceError",
    "InferenceServerError",
    "InferenceTimeout",
    "InvalidEncoding",
    "InvalidInput",
    "InvalidMetadata",
    "InvalidScore",
    "InvalidTags",
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
    "StoreError",
    "StoreLocked",
    "Tier",
    "UnknownContextType",
    "UnparseableReply",
    "__version__",
]
