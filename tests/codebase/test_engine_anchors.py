"""The engine ties what it stores to the code, wherever items are built (one item, several,
a keyed store, an iteration's error), to the repository holding its project root; an
engine outside git records nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralph_context.codebase import KEY
from ralph_context.engine import Engine, NewItem
from ralph_context.models import ContextItem, IterationResult
from tests.git_repo import commit, git, init_repo, write
from tests.helpers import Loader, SettingsFactory

pytestmark = pytest.mark.model


def _paths(item: ContextItem) -> list[str]:
    recorded = item.metadata.get(KEY)
    files = recorded.get("files") if isinstance(recorded, dict) else None
    return [str(f["path"]) for f in files if isinstance(f, dict)] if isinstance(files, list) else []


async def test_every_path_that_builds_items_records_the_files_they_name(
    tmp_path: Path,
    make_settings: SettingsFactory,
    shared_model: Loader,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo = init_repo(tmp_path / "repo")
    write(repo, {"src/config.py": "TIMEOUT = 30\n", "src/app.py": "import config\n"})
    head = commit(repo)
    monkeypatch.chdir(repo)  # the project root the settings anchor to
    async with Engine(make_settings(), model_loader=shared_model) as engine:
        one = await engine.store("The timeout lives in src/config.py", "file")
        many = await engine.store_many([NewItem("src/app.py imports the config", "file")])
        keyed = await engine.store(
            "edited", "file", metadata={"path": str(repo / "src/app.py")}, idempotency_key="k1"
        )
        await engine.record_iteration(
            IterationResult(
                iteration=1, success=False, summary="failed", error='File "src/app.py", line 1'
            )
        )
        (error,) = (await engine.browse(context_types=["error"])).items
        stored = await engine.get(one.id)
    assert _paths(stored) == ["src/config.py"]
    recorded = stored.metadata[KEY]
    assert isinstance(recorded, dict) and recorded["commit"] == head
    assert recorded["files"] == [
        {"path": "src/config.py", "blob": git(repo, "hash-object", "src/config.py")}
    ]
    assert [_paths(i) for i in (*many, keyed, error)] == [["src/app.py"]] * 3


async def test_an_engine_outside_git_records_nothing(
    tmp_path: Path,
    make_settings: SettingsFactory,
    shared_model: Loader,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = tmp_path / "plain"
    write(folder, {"src/config.py": "TIMEOUT = 30\n"})
    monkeypatch.chdir(folder)
    async with Engine(make_settings(), model_loader=shared_model) as engine:
        item = await engine.store(
            "The timeout lives in src/config.py", "file", metadata={KEY: {"repo": "forged"}}
        )
    assert KEY not in item.metadata
