"""The repository read from git's own files, checked against what git itself says: blob ids
(``git hash-object``), the commit checked out (loose refs, packed refs, a detached HEAD, a
linked worktree), and no repository outside git."""

from __future__ import annotations

from pathlib import Path

from ralph_context.codebase import Repository
from tests.git_repo import commit, git, init_repo, write


def test_blob_ids_are_the_ones_git_computes(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    write(repo, {"src/config.py": "TIMEOUT = 30\n", "empty.txt": "", "data.bin": "\x00\xff é"})
    found = Repository.find(repo / "src")
    assert found is not None and found.top == repo.resolve()
    for name in ("src/config.py", "empty.txt", "data.bin"):
        blob = found.blob(repo / name)
        assert blob is not None and blob.id == git(repo, "hash-object", name)
    assert found.blob(repo / "missing.py") is None


def test_head_is_the_commit_checked_out_from_loose_or_packed_refs_or_detached(
    tmp_path: Path,
) -> None:
    repo = init_repo(tmp_path / "repo")
    found = Repository.find(repo)
    assert found is not None and found.head() is None  # no commit yet
    write(repo, {"a.txt": "one\n"})
    first = commit(repo, "first")
    assert found.head() == first
    write(repo, {"a.txt": "two\n"})
    second = commit(repo, "second")
    git(repo, "pack-refs", "--all")  # refs/heads/main now only in packed-refs
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert found.head() == second
    git(repo, "checkout", "-q", "--detach", first)
    assert found.head() == first


def test_a_linked_worktree_is_its_own_checkout_of_the_same_repository(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    write(repo, {"a.txt": "one\n"})
    commit(repo)
    git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    write(tmp_path / "side", {"a.txt": "side\n"})
    side_commit = commit(tmp_path / "side", "on the side")
    main, side = Repository.find(repo), Repository.find(tmp_path / "side")
    assert main is not None and side is not None
    assert side.identity == main.identity  # one repository: its memory is shared
    assert side.top == (tmp_path / "side").resolve() and side.head() == side_commit
    assert main.head() != side_commit


def test_outside_git_there_is_no_repository(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    assert Repository.find(folder) is None
