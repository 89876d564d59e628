"""The store is its owner's alone: 0700 folders, 0600 files, whoever writes them."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ralph_context.embeddings.local import Vectors
from ralph_context.models import ContextItem, ContextType
from ralph_context.storage.lance_store import LanceStore
from ralph_context.storage.maintenance import upkeep_worker
from ralph_context.storage.private import secure
from tests.helpers import unit


def loose(root: Path) -> list[str]:
    """Paths under ``root`` (itself included) that a group or others may use."""
    found = [root, *root.rglob("*")]
    return sorted(
        f"{oct(path.lstat().st_mode & 0o777)} {path.relative_to(root)}"
        for path in found
        if path.lstat().st_mode & (stat.S_IRWXG | stat.S_IRWXO)
    )


def note(n: int) -> tuple[ContextItem, Vectors | None]:
    return ContextItem(content=f"note {n}", content_type=ContextType.OUTPUT), unit(1, n, 0, 0)


def test_a_store_opened_to_write_is_made_owner_only_with_what_it_held(tmp_path: Path) -> None:
    root = tmp_path / "store"
    old = os.umask(0o022)  # a store written before: 0644 files under 0755 folders
    try:
        LanceStore(root, model_id="m", dimension=4).add_items([note(1)])
    finally:
        os.umask(old)
    assert loose(root)

    LanceStore(root, model_id="m", dimension=4).close()

    assert loose(root) == []


def test_a_folder_of_other_things_keeps_its_modes(tmp_path: Path) -> None:
    """A store configured at a folder that is not one (a project root) changes nothing in
    it; the store's own entries are tightened once they exist."""
    project = tmp_path / "project"
    project.mkdir(mode=0o755)
    (project / "README.md").write_text("hello")
    (project / "README.md").chmod(0o644)
    secure(project)
    assert stat.S_IMODE(project.stat().st_mode) == 0o755
    assert stat.S_IMODE((project / "README.md").stat().st_mode) == 0o644


def test_the_upkeep_process_writes_owner_only_files(tmp_path: Path) -> None:
    """Compaction in the niced child writes new data and index files: 0600 under 0700,
    whatever the writer's umask."""
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    for n in range(3):  # three writes, three files: compaction merges them
        store.add_items([note(n)])
    before = set(tmp_path.rglob("*"))
    upkeep_worker.worker().run({"op": "compact", "uri": str(store.items.uri)})
    written = [p for p in tmp_path.rglob("*") if p not in before and p.is_file()]
    assert written
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in written)
