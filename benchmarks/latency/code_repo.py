"""The latency suite's stores are memory about a codebase, so the staleness checks run as
they do in a project: the suite's folder is a git repository of :data:`FILES` source
files, every bulk-loaded item is tied to two of them (``metadata.codebase``, as the engine
records it), and after the load a share of the files is deleted or rewritten and committed.
A hook's push then looks at every file its items name (a stat each; a read and a hash for
a file it has not seen since it changed), leaves out the items whose files are all gone
and marks the others that changed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np

from ralph_context.codebase import KEY, Repository
from ralph_context.models import JsonValue

__all__ = ["FILES", "Anchors", "age_the_code", "code_repository"]

FILES = 400
# Of the files, deleted and rewritten once the stores are loaded.
DELETED_SHARE = 0.05
CHANGED_SHARE = 0.10


def _git(folder: Path, *args: str) -> None:
    identity = ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    subprocess.run(
        ["git", "-C", str(folder), *identity, *args], check=True, capture_output=True, timeout=60
    )


def _name(n: int) -> str:
    return f"src/pkg_{n % 20:02d}/module_{n:03d}.py"


def code_repository(folder: Path) -> Repository:
    """``folder`` made a repository of :data:`FILES` committed files (~2 KB each)."""
    for n in range(FILES):
        path = folder / _name(n)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "".join(f"def f_{n}_{k}(x):\n    return x * {k} + {n}\n\n" for k in range(60))
        path.write_text(body, encoding="utf-8")
    _git(folder, "init", "-q", "-b", "main")
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "-m", "the code the memory is about")
    found = Repository.find(folder)
    assert found is not None, "git init made no repository"
    return found


class Anchors:
    """The metadata tying item ``n`` to two files, as the engine records it; one object per
    pair of files, shared (a million items hold :data:`FILES` of them)."""

    def __init__(self, repository: Repository) -> None:
        blobs = []
        for n in range(FILES):
            blob = repository.blob(repository.top / _name(n))
            assert blob is not None
            blobs.append(blob.id)
        head = repository.head() or ""
        self._metadata: list[dict[str, JsonValue]] = [
            {
                KEY: {
                    "repo": repository.identity,
                    "commit": head,
                    "files": [
                        {"path": _name(n), "blob": blobs[n]},
                        {"path": _name((7 * n + 3) % FILES), "blob": blobs[(7 * n + 3) % FILES]},
                    ],
                }
            }
            for n in range(FILES)
        ]

    def of(self, n: int) -> dict[str, JsonValue]:
        return self._metadata[n % FILES]


def age_the_code(folder: Path, rng: np.random.Generator) -> dict[str, int]:
    """Delete :data:`DELETED_SHARE` of the files and rewrite :data:`CHANGED_SHARE`, then
    commit; how many of each."""
    order = rng.permutation(FILES)
    deleted = int(FILES * DELETED_SHARE)
    changed = int(FILES * CHANGED_SHARE)
    for n in order[:deleted]:
        (folder / _name(int(n))).unlink()
    for n in order[deleted : deleted + changed]:
        path = folder / _name(int(n))
        path.write_text(path.read_text(encoding="utf-8") + "# changed\n", encoding="utf-8")
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "-m", "the code moves on")
    return {"files": FILES, "deleted": deleted, "changed": changed}
