"""Real git repositories for the tests of memory tied to the code: ``git`` itself makes
them (init, commits, worktrees, packed refs), so what ``codebase`` reads from git's files
is checked against what git wrote."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["commit", "git", "init_repo", "write"]


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
