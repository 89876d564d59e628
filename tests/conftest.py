"""Shared fixtures: the real embedding model (loaded once) and engine settings on tmp dirs."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import configuration

from ralph_context.config import Settings
from ralph_context.embeddings.install import read_manifest
from ralph_context.embeddings.local import LocalEmbedder, load_embedder
from tests.disk_faults import small_disk
from tests.helpers import Loader, SettingsFactory


def pytest_configure(config: pytest.Config) -> None:
    """Hypothesis keeps its state (examples, a Unicode table cache) in a temporary folder:
    a fresh clone has no ``.hypothesis/`` to be missing a file from, and two runs share
    nothing."""
    home = Path(tempfile.mkdtemp(prefix="ralph-context-hypothesis-"))
    config.stash[_HYPOTHESIS_HOME] = home
    configuration.set_hypothesis_home_dir(home)


def pytest_unconfigure(config: pytest.Config) -> None:
    home = config.stash.get(_HYPOTHESIS_HOME, None)
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)


_HYPOTHESIS_HOME = pytest.StashKey[Path]()


@pytest.fixture(scope="session")
def embedder() -> LocalEmbedder:
    """The real all-MiniLM-L6-v2 model, from the directory `ralph-context model install` built."""
    settings = Settings.load(None).embeddings
    path = settings.resolved_model_path()
    if read_manifest(path) is None:
        pytest.fail(
            f"no embedding model at {path}: run `ralph-context model install` "
            "(the README's test command does)"
        )
    return load_embedder(settings)


@pytest.fixture
def shared_model(embedder: LocalEmbedder) -> Loader:
    """A model loader handing every engine the already-loaded real model (saves ~0.5 s each)."""
    return lambda _settings: embedder


@pytest.fixture
def make_settings(tmp_path: Path) -> SettingsFactory:
    """Settings with the store in a fresh tmp dir; keyword args override sections."""

    def build(**sections: dict[str, object]) -> Settings:
        storage = {"backend": "lancedb", "persistence": "project", "path": str(tmp_path / "store")}
        storage.update(sections.pop("storage", {}))  # type: ignore[arg-type]
        return Settings.load(None).with_overrides(storage=storage, **sections)

    return build


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs of the test's own (``tests/disk_faults.py``: root only, as in CI)."""
    with small_disk(tmp_path) as mounted:
        yield mounted
