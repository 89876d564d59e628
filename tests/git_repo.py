"""Real git repositories for the tests of memory tied to the code: ``git`` itself makes
them (init, commits, worktrees, packed refs), so what ``codebase`` reads from git's files
is checked against what git wrote."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = [
    "CHANGED",
    "DELETED",
    "NOTES",
    "UNCHANGED",
    "commit",
    "git",
    "init_repo",
    "move_the_code",
    "start_the_code",
    "write",
]

# Three memories about a project's code, and the files they name (``start_the_code``):
# after ``move_the_code`` the first names a deleted file, the second a rewritten one, the
# third a file as it was.
DELETED = "The invoice header rules are parsed by src/legacy_parser.py (parse_header)."
CHANGED = "The invoice import timeout is set in src/config.py (TIMEOUT = 30 seconds)."
UNCHANGED = "The invoice CSV delimiter for the import is defined in src/dialect.py."
NOTES = (DELETED, CHANGED, UNCHANGED)


def git(repo: Path, *args: str) -> str:
    """``git -C repo args``, its output stripped (an identity given, so commits work on a
    machine with no git configuration)."""
    identity = ["-c", "user.name=Test", "-c", "user.email=test@example.invalid"]
    done = subprocess.run(
        ["git", "-C", str(repo), *identity, *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return done.stdout.strip()


def init_repo(repo: Path) -> Path:
    """A new repository at ``repo`` (branch ``main``)."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    return repo


def write(repo: Path, files: dict[str, str]) -> None:
    """Write ``files`` (path relative to ``repo`` -> text), folders made as needed."""
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def commit(repo: Path, message: str = "change") -> str:
    """Commit everything in the work tree (deletions too); the new commit's id."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def start_the_code(repo: Path, extra: dict[str, str] | None = None) -> str:
    """The files :data:`NOTES` name (and ``extra``), committed; the commit's id."""
    write(
        repo,
        {
            "src/legacy_parser.py": "def parse_header(row): ...\n",
            "src/config.py": "TIMEOUT = 30\n",
            "src/dialect.py": "DELIMITER = ';'\n",
            **(extra or {}),
        },
    )
    return commit(repo, "start")


def move_the_code(repo: Path) -> str:
    """:data:`DELETED`'s file deleted and :data:`CHANGED`'s rewritten, committed."""
    (repo / "src" / "legacy_parser.py").unlink()
    write(repo, {"src/config.py": "TIMEOUT = 90\n"})
    return commit(repo, "the header rules moved; a longer timeout")
