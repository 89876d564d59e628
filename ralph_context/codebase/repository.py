"""The git work tree memory is checked against, read from its files alone: no ``git``
process, so a check costs stats and reads, never a fork.

- :meth:`Repository.find`: the work tree holding a folder (``.git`` a folder, or a linked
  worktree's ``.git`` file naming its git dir), named by its common git dir (a digest of
  it): every worktree of one repository has the same one, and a store shared by several
  repositories never judges one's paths against another's files.
- :meth:`Repository.head`: the commit checked out (``HEAD``, its loose ref or
  ``packed-refs``).
- :meth:`Repository.inside`: a path as the repository names it (relative, symlinks
  resolved, inside the work tree, not in git's own folder nor in folders of installed or
  generated files), or ``None``.
- :meth:`Repository.blob`: a file's blob id as git computes it
  (``sha1(b"blob <size>\\0" + bytes)``), cached per file by its stat: a file unchanged
  since the last look is not read again.
- :class:`Worktrees`: the checkout a folder is in, among one repository's worktrees: an
  agent in a linked worktree shares the project's memory (and its server, which runs in the
  main worktree), and what it is told is judged against the files it sees.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

__all__ = [
    "MAX_BLOB_BYTES",
    "MAX_PATH_CHARS",
    "SKIPPED_FOLDERS",
    "Blob",
    "Repository",
    "Worktrees",
]

# Files larger than this are not anchored (reading them would cost the hook budget); one
# that grew past it since is changed (it was smaller when recorded).
MAX_BLOB_BYTES = 1 << 20
MAX_PATH_CHARS = 300
# Folders whose files are not the project's code: git's own, the store and the loops'
# files, installed packages, caches. A traceback through site-packages names them often,
# and they would crowd out the project's files an item names.
SKIPPED_FOLDERS = frozenset(
    {
        ".git",
        ".agent",
        ".ralph",
        ".venv",
        "venv",
        "node_modules",
        "site-packages",
        "dist-packages",
        "__pycache__",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
    }
)
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# Blob ids kept per repository (a file's stat and id: ~200 bytes each).
_CACHED_BLOBS = 4096
# Folders whose worktree is remembered.
_CACHED_FOLDERS = 256


@dataclass(frozen=True)
class Blob:
    """A file as it is now: its blob id and when it was last modified (epoch seconds)."""

    id: str
    modified: float


@dataclass
class Repository:
    """One git work tree.

    Attributes:
        top: The work tree's top folder (symlinks resolved).
        git_dir: Its git dir (``<top>/.git``, or a linked worktree's).
        common: The repository's common git dir: its identity.
    """

    top: Path
    git_dir: Path
    common: Path
    _blobs: OrderedDict[str, tuple[tuple[int, int, int, int], Blob]] = field(
        default_factory=OrderedDict, repr=False
    )

    @classmethod
    def find(cls, start: Path) -> Repository | None:
        """The work tree holding ``start``, or ``None`` outside git (or when its git dir
        cannot be read)."""
        try:
            here = start.resolve()
            for folder in (here, *here.parents):
                marker = folder / ".git"
                if marker.is_dir():
                    return cls(folder, marker, marker)
                if marker.is_file():
                    return cls._linked(folder, marker)
        except (OSError, RuntimeError, ValueError):
            return None
        return None

    @classmethod
    def _linked(cls, top: Path, marker: Path) -> Repository | None:
        line = marker.read_text(encoding="utf-8").strip()
        if not line.startswith("gitdir:"):
            return None
        git_dir = (top / line.removeprefix("gitdir:").strip()).resolve()
        common = git_dir
        pointer = git_dir / "commondir"
        if pointer.is_file():
            common = (git_dir / pointer.read_text(encoding="utf-8").strip()).resolve()
        return cls(top, git_dir, common) if git_dir.is_dir() else None

    @property
    def identity(self) -> str:
        """What names this repository in an anchor: a digest of its common git dir (the
        same for each of its worktrees; no path of this machine in what is stored)."""
        return hashlib.blake2b(str(self.common).encode("utf-8"), digest_size=8).hexdigest()

    def head(self) -> str | None:
        """The commit checked out, or ``None`` (no commit yet, or unreadable)."""
        try:
            text = (self.git_dir / "HEAD").read_text(encoding="utf-8").strip()
            if not text.startswith("ref:"):
                return text if _SHA.fullmatch(text) else None
            ref = text.removeprefix("ref:").strip()
            if not ref.startswith("refs/") or ".." in ref:
                return None
            for folder in (self.git_dir, self.common):
                loose = folder / ref
                if loose.is_file():
                    found = loose.read_text(encoding="utf-8").strip()
                    return found if _SHA.fullmatch(found) else None
            return self._packed(ref)
        except (OSError, ValueError):
            return None

    def _packed(self, ref: str) -> str | None:
        packed = self.common / "packed-refs"
        if not packed.is_file():
            return None
        with packed.open(encoding="utf-8") as lines:
            for line in lines:
                sha, _, name = line.strip().partition(" ")
                if name == ref and _SHA.fullmatch(sha):
                    return sha
        return None

    def inside(self, path: Path) -> str | None:
        """``path`` (absolute, or relative to the top) as this repository names a file of
        its own: relative, POSIX, symlinks resolved; ``None`` for a path outside the work
        tree, under a skipped folder, too long, or not a regular file now."""
        try:
            real = (self.top / path).resolve(strict=True)
            relative = real.relative_to(self.top)
        except (OSError, RuntimeError, ValueError):
            return None
        name = relative.as_posix()
        if name == "." or len(name) > MAX_PATH_CHARS or not real.is_file():
            return None
        if SKIPPED_FOLDERS.intersection(relative.parts):
            return None
        return name

    def named(self, recorded: object) -> Path | None:
        """The file a recorded path names, when it is one this repository could have
        recorded (relative, no ``..``, not skipped): an anchor is data a caller may have
        written, so it is checked before it is read."""
        if not isinstance(recorded, str) or not recorded or len(recorded) > MAX_PATH_CHARS:
            return None
        pure = PurePosixPath(recorded)
        if pure.is_absolute() or "\0" in recorded or ".." in pure.parts:
            return None
        if SKIPPED_FOLDERS.intersection(pure.parts):
            return None
        return self.top.joinpath(*pure.parts)

    def blob(self, path: Path) -> Blob | None:
        """The file at ``path`` now (symlinks followed, but only to a file inside the work
        tree), or ``None`` when there is no such file.

        Raises:
            OSError: The file is there but cannot be read (the caller judges nothing).
        """
        try:
            real = path.resolve(strict=True)
            real.relative_to(self.top)
            info = real.stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except ValueError:  # a symlink that leads out of the work tree: not ours to read
            raise PermissionError(f"{path} leads outside the repository") from None
        if not os.path.isfile(real):
            return None
        key = str(real)
        signature = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        cached = self._blobs.get(key)
        if cached is not None and cached[0] == signature:
            self._blobs.move_to_end(key)
            return cached[1]
        if info.st_size > MAX_BLOB_BYTES:
            found = Blob("", info.st_mtime)  # too large to hash: never equal to a record
        else:
            data = real.read_bytes()
            digest = hashlib.sha1(b"blob %d\0" % len(data), usedforsecurity=False)
            digest.update(data)
            found = Blob(digest.hexdigest(), info.st_mtime)
        self._blobs[key] = (signature, found)
        while len(self._blobs) > _CACHED_BLOBS:
            self._blobs.popitem(last=False)
        return found


class Worktrees:
    """The worktrees of one repository (``home``'s), each found once from a folder inside
    it and kept with its cache of blob ids.

    Args:
        home: The project's work tree; ``None``: no repository, nothing to check.
    """

    def __init__(self, home: Repository | None) -> None:
        self.home = home
        self._by_folder: OrderedDict[str, Repository] = OrderedDict()
        self._by_top: dict[Path, Repository] = {} if home is None else {home.top: home}

    def at(self, folder: object) -> Repository | None:
        """The worktree holding ``folder`` (a path as a hook's payload or an item's
        ``cwd`` gives it) when it is one of this repository's, else ``home``."""
        if self.home is None or not isinstance(folder, str) or not folder:
            return self.home
        known = self._by_folder.get(folder)
        if known is None:
            found = Repository.find(Path(folder))
            same = found is not None and found.identity == self.home.identity
            known = self._by_top.setdefault(found.top, found) if same and found else self.home
            self._by_folder[folder] = known
            while len(self._by_folder) > _CACHED_FOLDERS:
                self._by_folder.popitem(last=False)
        self._by_folder.move_to_end(folder)
        return known
