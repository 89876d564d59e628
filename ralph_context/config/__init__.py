"""Settings: the ``learning.mcp_context`` block of ``ralph.yaml``, overridable by env vars.

Precedence, strongest first: ``RALPH_CONTEXT_*`` environment variables (nested keys joined by
``__``, e.g. ``RALPH_CONTEXT_STORAGE__PATH``), then the file, then the chosen preset, then the
defaults below. The file is found at ``--config``, else ``$RALPH_CONTEXT_CONFIG``, else
the ``ralph.yaml``/``ralph.yml`` of ``$RALPH_WORKSPACE_ROOT`` (a Ralph v2 loop's workspace),
else ``./ralph.yaml`` or ``./ralph.yml``; without one, defaults and env apply.

A bad value is reported as ``ConfigError`` naming the key, the value and what is allowed, before
anything opens the store.

One module per section of the block (``server``, ``storage``, ``embeddings``, ``retrieval``
with ``scoring``, ``lifecycle``, ``skillbook``, ``packs``, ``inference``, ``prompts``), the
``presets``, and ``loading`` (file lookup, reading, error messages); ``settings`` puts them
together. Import from ``ralph_context.config``: the modules are its parts.
"""

from __future__ import annotations

from ralph_context.config.embeddings import EmbeddingsSettings, default_model_dir
from ralph_context.config.inference import HF_TOKEN_ENV as HF_TOKEN_ENV
from ralph_context.config.inference import LMSTUDIO_SERVERS_ENV as LMSTUDIO_SERVERS_ENV
from ralph_context.config.inference import OLLAMA_HOST_ENV as OLLAMA_HOST_ENV
from ralph_context.config.inference import TOGETHER_KEY_ENV as TOGETHER_KEY_ENV
from ralph_context.config.inference import (
    InferenceServerSettings,
    InferenceSettings,
    InferenceTimeouts,
)
from ralph_context.config.inference import ProviderKind as ProviderKind
from ralph_context.config.inference import ollama_url as ollama_url
from ralph_context.config.lifecycle import LifecycleSettings
from ralph_context.config.loading import CONFIG_ENV as CONFIG_ENV
from ralph_context.config.loading import WORKSPACE_ENV as WORKSPACE_ENV
from ralph_context.config.loading import default_file as default_file
from ralph_context.config.packs import EvaluationSettings as EvaluationSettings
from ralph_context.config.packs import PacksSettings as PacksSettings
from ralph_context.config.packs import ProjectMemorySettings as ProjectMemorySettings
from ralph_context.config.packs import PromptLearningSettings as PromptLearningSettings
from ralph_context.config.presets import PRESETS
from ralph_context.config.presets import Preset as Preset
from ralph_context.config.prompts import (
    RESERVED_PROMPT_NAMES,
    SEARCH_PROMPT,
    PromptArgumentSpec,
    PromptSpec,
)
from ralph_context.config.retrieval import RetrievalSettings, ScoringSettings
from ralph_context.config.server import ServerSettings
from ralph_context.config.settings import Settings
from ralph_context.config.skillbook import SkillbookSettings as SkillbookSettings
from ralph_context.config.storage import StorageSettings

# The same list as before the split; the names imported ``as`` themselves above are
# importable from here too, as they were from config.py, without joining it.
__all__ = [
    "PRESETS",
    "RESERVED_PROMPT_NAMES",
    "SEARCH_PROMPT",
    "EmbeddingsSettings",
    "InferenceServerSettings",
    "InferenceSettings",
    "InferenceTimeouts",
    "LifecycleSettings",
    "PromptArgumentSpec",
    "PromptSpec",
    "RetrievalSettings",
    "ScoringSettings",
    "ServerSettings",
    "Settings",
    "StorageSettings",
    "default_model_dir",
]
