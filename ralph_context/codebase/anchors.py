"""What an item is tied to in the code: the repository's files it names, each with the blob
it had when the item was stored, and the commit checked out then.

The engine stamps it (``Wiring.build_item``, after redaction) as ``metadata["codebase"]``::

    {"repo": "<the repository's identity>", "commit": "<sha, or '' before a commit>",
     "files": [{"path": "src/config.py", "blob": "<sha1>"}, ...]}

It is the engine's key, like ``recorded_by``: whatever a caller put there is replaced, so a
client cannot tie its note to files it never named, or make the loop's own look stale.
The files are read from the item's metadata first (``path``: the file an edit touched;
``command``: what a command named), then its text (a traceback's files, a note's), in
that order; a relative path is looked for from the item's ``cwd`` when that lies inside
the repository, then from its top; at most :data:`MAX_FILES`, each one the repository holds
now (``Repository.inside``).
"""

from __future__ import annotations

from pathlib import Path

from ralph_context.codebase.paths import candidates
from ralph_context.codebase.repository import Repository
from ralph_context.models import ContextItem, JsonValue

__all__ = ["KEY", "MAX_FILES", "anchor"]

KEY = "codebase"
MAX_FILES = 8


def anchor(item: ContextItem, repository: Repository | None) -> ContextItem:
    """``item`` with the files it names recorded under :data:`KEY` (and a caller's value
    of that key dropped); the same object when nothing changes."""
    metadata = {key: value for key, value in item.metadata.items() if key != KEY}
    files = _files(item, repository) if repository is not None else []
    if files and repository is not None:
        metadata[KEY] = {
            "repo": repository.identity,
            "commit": repository.head() or "",
            "files": files,
        }
    if metadata == item.metadata:
        return item
    return item.model_copy(update={"metadata": metadata})


def _files(item: ContextItem, repository: Repository) -> list[JsonValue]:
    given = item.metadata
    texts = [str(given[key]) for key in ("path", "command") if isinstance(given.get(key), str)]
    bases = dict.fromkeys((_base(given.get("cwd"), repository), repository.top))
    found: dict[str, str] = {}
    for word in candidates([*texts, item.content]):
        name = next(filter(None, (repository.inside(base / word) for base in bases)), None)
        if name is None or name in found:
            continue
        try:
            blob = repository.blob(repository.top / name)
        except OSError:
            continue
        if blob is None or not blob.id:  # gone meanwhile, or too large to hash
            continue
        found[name] = blob.id
        if len(found) >= MAX_FILES:
            break
    return [{"path": name, "blob": blob} for name, blob in found.items()]


def _base(cwd: object, repository: Repository) -> Path:
    """Where the item's relative paths start: its working folder, when that is inside the
    repository (a command run in ``src/``), else the repository's top."""
    if isinstance(cwd, str) and cwd:
        try:
            folder = Path(cwd).resolve()
            folder.relative_to(repository.top)
        except (OSError, RuntimeError, ValueError):
            return repository.top
        return folder
    return repository.top
