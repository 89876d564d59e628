"""ralph-context: semantic, persistent, self-pruning memory for agent iteration loops.

The public API is what ``__all__`` lists; everything else may change without notice.
"""

from __future__ import annotations

from ralph_context.config import Settings
from ralph_context.engine import Engine, EngineHealth, NewItem
from ralph_context.errors import (
    ActorUnavailable,
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

__all__ = [
    "ActorUnavailable",
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
    "Tier",
    "UnknownContextType",
    "UnparseableReply",
    "__version__",
]
