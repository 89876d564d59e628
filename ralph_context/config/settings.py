"""``Settings``: every section together, loaded from the file, the preset and the
environment (``RALPH_CONTEXT_*``), with the paths they resolve to."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, ClassVar

from pydantic import PrivateAttr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

from ralph_context import namespaces
from ralph_context.config.agents import AgentsSettings
from ralph_context.config.embeddings import EmbeddingsSettings
from ralph_context.config.inference import InferenceSettings
from ralph_context.config.lifecycle import LifecycleSettings
from ralph_context.config.loading import (
    DEPRECATED_PROMPT_KEY,
    config_key,
    deep_merge,
    describe,
    find_config,
    read_block,
    refuse_prompt_data,
)
from ralph_context.config.packs import PacksSettings, mapping_form
from ralph_context.config.presets import PRESETS, Preset
from ralph_context.config.prompts import PromptSpec
from ralph_context.config.redaction import RedactionSettings
from ralph_context.config.relevance import model_constants, with_model_constants
from ralph_context.config.retrieval import (
    PUSH_GATES,
    Face,
    PushGate,
    RetrievalSettings,
    ScoringSettings,
)
from ralph_context.config.section import definition_error, xdg
from ralph_context.config.server import ServerSettings
from ralph_context.config.skillbook import SkillbookSettings
from ralph_context.config.storage import StorageSettings
from ralph_context.config.token_file import OWNER_FILE
from ralph_context.errors import ConfigError
from ralph_context.object_location import Location, ObjectLocation

__all__ = ["Settings"]


class Settings(BaseSettings):
    """Everything the engine, server and hook read from configuration."""

    model_config = SettingsConfigDict(
        env_prefix="RALPH_CONTEXT_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
    )

    enabled: bool = True
    preset: Preset = "standard"
    server: ServerSettings = ServerSettings()
    storage: StorageSettings = StorageSettings()
    embeddings: EmbeddingsSettings = EmbeddingsSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    lifecycle: LifecycleSettings = LifecycleSettings()
    skillbook: SkillbookSettings = SkillbookSettings()
    scoring: ScoringSettings = ScoringSettings()
    # NoDecode: RALPH_CONTEXT_PACKS=prompts,project is taken as written (JSON too).
    packs: Annotated[PacksSettings, NoDecode] = PacksSettings()
    inference: InferenceSettings = InferenceSettings()
    redaction: RedactionSettings = RedactionSettings()
    agents: AgentsSettings = AgentsSettings()
    prompts: tuple[PromptSpec, ...] = ()

    _root: Path = PrivateAttr(default_factory=Path.cwd)
    _source: Path | None = PrivateAttr(default=None)

    _sections: ClassVar[tuple[str, ...]] = (
        "server",
        "storage",
        "embeddings",
        "retrieval",
        "lifecycle",
        "skillbook",
        "scoring",
        "packs",
        "inference",
        "redaction",
        "agents",
    )

    @model_validator(mode="before")
    @classmethod
    def _models_own_constants(cls, data: object) -> object:
        """The embedding model's fitted relevance constants (``config/relevance.py``) under
        whatever the file and the environment set."""
        return with_model_constants(data) if isinstance(data, dict) else data

    @field_validator("prompts")
    @classmethod
    def _unique_prompt_names(cls, prompts: tuple[PromptSpec, ...]) -> tuple[PromptSpec, ...]:
        first: dict[str, int] = {}
        for index, prompt in enumerate(prompts):
            if prompt.name in first:
                raise definition_error(
                    f"prompt name {prompt.name!r} is used by items {first[prompt.name]} and "
                    f"{index}; names must be unique"
                )
            first[prompt.name] = index
        return prompts

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The file arrives as init kwargs; the environment must beat it.
        return (env_settings, init_settings)

    @classmethod
    def load(cls, path: str | Path | None = None) -> Settings:
        """Read settings from a file (or the default lookup), the preset and the environment.

        Args:
            path: Explicit config file. ``None`` means ``$RALPH_CONTEXT_CONFIG``, then
                ``./ralph.yaml`` / ``./ralph.yml``, then defaults and env only.

        Raises:
            ConfigError: The file is missing, unreadable or not YAML, a value is invalid, or
                the block still uses the deprecated ``prompt_data`` key.
        """
        source = find_config(path)
        block = read_block(source) if source is not None else {}
        if DEPRECATED_PROMPT_KEY in block:
            # Checked before validation, so this message wins over "unknown key".
            refuse_prompt_data(source)
        preset = os.environ.get("RALPH_CONTEXT_PRESET", block.get("preset", "standard"))
        if preset not in PRESETS:
            raise ConfigError(
                f"{config_key('preset')} = {preset!r} is not a preset; "
                f"allowed: {', '.join(repr(p) for p in PRESETS)}"
            )
        if "packs" in block:  # the list form, so the environment merges into it
            block = {**block, "packs": mapping_form(block["packs"])}
        merged = deep_merge(PRESETS[preset], block)
        try:
            settings = cls(**merged)
        except ValidationError as exc:
            raise ConfigError(describe(exc, source, Settings)) from None
        if source is not None:
            settings._root = source.parent.resolve()
            settings._source = source
        return settings

    @property
    def source(self) -> Path | None:
        """The file these settings came from, if any."""
        return self._source

    @property
    def is_ephemeral(self) -> bool:
        """True when the store lives only as long as the process (memory or session)."""
        return self.storage.backend == "memory" or self.storage.persistence == "session"

    @property
    def project_root(self) -> Path:
        """The folder relative paths resolve against (the config file's, else the working
        directory)."""
        return self._root

    def local_folder(self) -> Path:
        """Where this project keeps local files beside its store: the store's parent folder,
        or ``.agent`` under the project root when the store is on object storage."""
        root = self.store_root()
        return root.parent if isinstance(root, Path) else self._root / ".agent"

    def store_root(self) -> Location:
        """Where the persistent store lives (every namespace; its writer lock).

        Relative paths resolve against the project root (the config file's folder, else the
        working directory), or, with ``persistence: global``, against the user's data folder.
        An object-storage URI is the store as it is (with ``storage.options``).
        """
        if isinstance(self.storage.path, str):
            return ObjectLocation(self.storage.path, tuple(sorted(self.storage.options.items())))
        path = self.storage.path.expanduser()
        if path.is_absolute():
            return path
        if self.storage.persistence == "global":
            return xdg("XDG_DATA_HOME", ".local/share") / "ralph-context" / path
        return self._root / path

    def store_path(self) -> Location:
        """Where this namespace's tables live: the store itself for ``default``."""
        return namespaces.directory(self.store_root(), self.storage.namespace)

    def token_path(self) -> Path:
        """The HTTP server's token file, resolved against the project root."""
        path = self.server.token_file.expanduser()
        return path if path.is_absolute() else self._root / path

    def owner_token_path(self) -> Path:
        """The store's owner token (``config.owner_token``): in the store's own folder,
        which a writer keeps 0700, or for a store on object storage in the project's
        ``.agent`` folder (each machine's replicas have their own)."""
        root = self.store_root()
        folder = root if isinstance(root, Path) else self._root / ".agent"
        return folder / OWNER_FILE

    def ab_results_path(self) -> Path:
        """The A/B results the console plots (``server.ab_results``), against the project root."""
        path = self.server.ab_results.expanduser()
        return path if path.is_absolute() else self._root / path

    def skillbook_path(self) -> Path:
        """The ACE skillbook file, resolved against the project root; a namespace other
        than ``default`` keeps its own inside its folder (a skillbook is one project's)."""
        path = self.skillbook.path.expanduser()
        if self.storage.namespace != namespaces.DEFAULT and not path.is_absolute():
            inside = self.store_path()
            if isinstance(inside, Path):
                return inside / path.name
            # A store on object storage: the skillbook stays a file of this project.
            return self._root / path.with_stem(f"{path.stem}-{self.storage.namespace}")
        return path if path.is_absolute() else self._root / path

    def push_gate(self, face: Face = "prompt") -> PushGate | None:
        """The gate a push of ``face`` passes (``retrieval.push_gate`` for a person's
        prompt, ``retrieval.loop_push_gate`` for a loop's own state): ``auto`` is the
        embedding model's own (``PUSH_GATES``), ``None`` when it has none or it is ``off``."""
        retrieval = self.retrieval
        chosen = retrieval.push_gate if face == "prompt" else retrieval.loop_push_gate
        if chosen == "auto":
            gates = PUSH_GATES.get(self.embeddings.model)
            return None if gates is None else getattr(gates, face)
        return None if chosen == "off" else chosen

    def with_overrides(self, **sections: Mapping[str, object] | Sequence[str]) -> Settings:
        """A copy with some section keys replaced, validated like a file would be
        (``packs`` takes the list form too: ``with_overrides(packs=["project"])``).

        Raises:
            ConfigError: An override is invalid.
        """
        data = self.model_dump()
        over: dict[str, object] = dict(sections)
        embeddings = over.get("embeddings")
        model = embeddings.get("model") if isinstance(embeddings, Mapping) else None
        if model is not None and model != self.embeddings.model:
            # Another model: the constants that were this model's own become the new one's.
            for section, values in model_constants(self.embeddings.model).items():
                kept = data[section]
                for key, value in values.items():
                    if kept.get(key) == value:
                        del kept[key]
        if "packs" in over:  # the list form merges like the file's
            over["packs"] = mapping_form(over["packs"])
        try:
            copy = type(self).model_validate(deep_merge(data, over))
        except ValidationError as exc:
            raise ConfigError(describe(exc, None, Settings)) from None
        copy._root, copy._source = self._root, self._source
        return copy
