"""What an item is tied to and how a push judges it, in real repositories: the files it
names recorded (from its edit path, its command, its text; relative to its folder), only
files of the repository (no path outside it, through a symlink, under installed packages,
nor more than eight), a caller's own anchor replaced; then deleted files withheld from a
push but marked for a search, changed ones marked and placed last, unchanged ones as they
were, and a forged or foreign anchor never read."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ralph_context.codebase import (
    KEY,
    Finding,
    Repository,
    Worktrees,
    anchor,
    for_push,
    marks,
    words,
)
from ralph_context.models import ContextItem, ContextType, JsonValue
from tests.git_repo import commit, git, init_repo, write


def _item(content: str, **metadata: JsonValue) -> ContextItem:
    return ContextItem(content=content, content_type=ContextType.ERROR, metadata=metadata)


def _files(item: ContextItem) -> dict[str, str]:
    recorded = item.metadata[KEY]
    assert isinstance(recorded, dict) and isinstance(recorded["files"], list)
    return {str(f["path"]): str(f["blob"]) for f in recorded["files"] if isinstance(f, dict)}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = init_repo(tmp_path / "repo")
    write(
        root,
        {
            "src/config.py": "TIMEOUT = 30\n",
            "src/legacy_parser.py": "def parse(): ...\n",
            "src/dialect.py": "DELIMITER = ';'\n",
            "README.md": "# app\n",
        },
    )
    commit(root, "start")
    return root


def _repository(root: Path) -> Repository:
    found = Repository.find(root)
    assert found is not None
    return found


def test_an_item_records_the_files_it_names_with_their_blobs_and_the_commit(repo: Path) -> None:
    repository = _repository(repo)
    traceback = (
        "Traceback (most recent call last):\n"
        f'  File "{repo}/src/legacy_parser.py", line 1, in parse\n'
        "ValueError: bad header (see config.py:3 and README.md.)"
    )
    item = anchor(
        _item(traceback, cwd=str(repo / "src"), command="python3 src/dialect.py"), repository
    )
    assert _files(item) == {
        name: git(repo, "hash-object", name)
        for name in ("src/dialect.py", "src/legacy_parser.py", "src/config.py", "README.md")
    }
    recorded = item.metadata[KEY]
    assert isinstance(recorded, dict)
    assert recorded["commit"] == git(repo, "rev-parse", "HEAD")
    assert recorded["repo"] == repository.identity
    edit = anchor(_item("edited the parser", path=str(repo / "src/legacy_parser.py")), repository)
    assert list(_files(edit)) == ["src/legacy_parser.py"]
    assert KEY not in anchor(_item("nothing here names a file, e.g. v1.2"), repository).metadata


def test_only_files_of_the_repository_are_recorded_and_at_most_eight(
    repo: Path, tmp_path: Path
) -> None:
    repository = _repository(repo)
    (tmp_path / "outside.txt").write_text("secret\n", encoding="utf-8")
    os.symlink(tmp_path / "outside.txt", repo / "leak.txt")
    os.symlink(repo / "src" / "config.py", repo / "alias.py")
    write(repo, {".venv/lib/site-packages/lib.py": "x\n", "node_modules/m/index.js": "x\n"})
    named = (
        f"../outside.txt {tmp_path}/outside.txt leak.txt .git/config .venv/lib/site-packages/"
        "lib.py node_modules/m/index.js src alias.py"
    )
    item = anchor(_item(named), repository)
    assert list(_files(item)) == ["src/config.py"]  # the symlink's target, as git names it
    write(repo, {f"many/f{n}.py": f"{n}\n" for n in range(12)})
    many = anchor(_item(" ".join(f"many/f{n}.py" for n in range(12))), repository)
    assert list(_files(many)) == [f"many/f{n}.py" for n in range(8)]


def test_a_callers_own_anchor_is_replaced_and_outside_git_dropped(repo: Path) -> None:
    forged: JsonValue = {"repo": "x", "files": [{"path": "README.md", "blob": "0" * 40}]}
    repository = _repository(repo)
    item = anchor(_item("about README.md", **{KEY: forged}), repository)
    assert _files(item) == {"README.md": git(repo, "hash-object", "README.md")}
    assert KEY not in anchor(_item("about nothing", **{KEY: forged}), repository).metadata
    assert KEY not in anchor(_item("about README.md", **{KEY: forged}), None).metadata


def test_a_push_withholds_deleted_files_marks_changed_ones_last_and_keeps_the_rest(
    repo: Path,
) -> None:
    repository = _repository(repo)
    deleted = anchor(_item("the header rules live in src/legacy_parser.py"), repository)
    changed = anchor(_item("the timeout is set in src/config.py"), repository)
    unchanged = anchor(_item("the delimiter is in src/dialect.py"), repository)
    both = anchor(_item("src/legacy_parser.py reads src/dialect.py"), repository)
    plain = _item("no file named")
    (repo / "src" / "legacy_parser.py").unlink()
    write(repo, {"src/config.py": "TIMEOUT = 60\n"})
    commit(repo, "drop the legacy parser, longer timeout")

    judged = for_push([deleted, changed, unchanged, both, plain], repository)
    assert [i.id for i in judged.items] == [unchanged.id, plain.id, changed.id, both.id]
    assert judged.withheld == 1
    assert judged.marks == {
        changed.id: "src/config.py changed just now",
        both.id: "src/legacy_parser.py deleted",
    }
    # A search still finds the item about deleted code, and says so.
    assert marks([deleted, unchanged], repository) == {deleted.id: "src/legacy_parser.py deleted"}
    # Restored as it was: nothing to say any more.
    write(repo, {"src/config.py": "TIMEOUT = 30\n"})
    assert for_push([changed], repository).marks == {}


def test_a_forged_or_foreign_anchor_reads_nothing_and_judges_nothing(
    repo: Path, tmp_path: Path
) -> None:
    repository = _repository(repo)
    (tmp_path / "outside.txt").write_text("x\n", encoding="utf-8")
    os.symlink(tmp_path / "outside.txt", repo / "link.txt")
    paths: list[JsonValue] = [
        "../outside.txt",
        str(tmp_path / "outside.txt"),
        "link.txt",
        ".git/HEAD",
        7,
    ]
    forged: dict[str, JsonValue] = {
        KEY: {
            "repo": repository.identity,
            "files": [{"path": p, "blob": "0" * 40} for p in paths],
        }
    }
    other = init_repo(tmp_path / "other")
    write(other, {"README.md": "# another app\n"})  # not this repository's README.md
    foreign = anchor(_item("about README.md"), _repository(other))
    assert KEY in foreign.metadata
    items = [_item("forged", **forged), foreign]
    judged = for_push(items, repository)
    assert [i.id for i in judged.items] == [i.id for i in items] and judged.marks == {}
    assert for_push(items, None).items == items


def test_a_mark_names_the_files_that_matter_most_and_when(repo: Path) -> None:
    recorded = datetime(2026, 1, 1, 12, tzinfo=UTC)
    now = recorded + timedelta(hours=5)
    at = (recorded + timedelta(hours=3)).timestamp()
    found = [
        Finding("src/a.py", gone=False, modified=at - 3600),
        Finding("src/b.py", gone=False, modified=at),
        Finding("src/gone.py", gone=True),
        Finding("src/c.py", gone=False, modified=at - 7200),
    ]
    assert (
        words(found, recorded, now)
        == "src/gone.py deleted; src/b.py changed 2 hours ago (+2 more files)"
    )
    older = [Finding("src/a.py", gone=False, modified=(recorded - timedelta(days=1)).timestamp())]
    assert words(older, recorded, now) == "src/a.py changed since"


def test_a_file_unchanged_since_the_last_look_is_not_read_again(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repository = _repository(repo)
    item = anchor(_item("the timeout is set in src/config.py"), repository)
    reads: list[Path] = []
    original = Path.read_bytes

    def counted(self: Path) -> bytes:
        reads.append(self)
        return original(self)

    monkeypatch.setattr(Path, "read_bytes", counted)
    for _ in range(3):
        assert for_push([item], repository).marks == {}
    assert reads == []  # hashed once, at store; since then a stat says it is the same
    write(repo, {"src/config.py": "TIMEOUT = 99\n"})
    assert for_push([item], repository).marks
    assert reads == [repo.resolve() / "src" / "config.py"]


def test_an_item_from_a_linked_worktree_is_judged_against_the_worktree_one_works_in(
    repo: Path, tmp_path: Path
) -> None:
    side = tmp_path / "side"
    git(repo, "worktree", "add", "-q", "-b", "side", str(side))
    worktrees = Worktrees(_repository(repo))
    where = worktrees.at(str(side / "src"))
    assert where is not None and where.top == side.resolve()
    item = anchor(_item("the timeout is in config.py", cwd=str(side / "src")), where)
    assert list(_files(item)) == ["src/config.py"]
    (side / "src" / "config.py").unlink()
    commit(side, "no config on the side")
    assert for_push([item], worktrees.at(str(side))).withheld == 1
    assert for_push([item], worktrees.at(str(repo))).items == [item]  # main still has it
    other = init_repo(tmp_path / "other")
    assert worktrees.at(str(other)) is worktrees.home  # another repository: the project's
    assert worktrees.at(None) is worktrees.home
    assert Worktrees(None).at(str(side)) is None
