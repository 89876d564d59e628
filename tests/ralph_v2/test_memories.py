"""Ralph v2's memories file: parsed as Ralph's parser does (fixtures written from its rules
and tests), injected as its prompt builder does, and given our entries without changing a
byte of anyone else's."""

from __future__ import annotations

import fcntl
import os
import re
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ralph_context.integrations.ralph_v2.memories import (
    MANAGED_TAG,
    TEMPLATE,
    Entry,
    injected_block,
    locked,
    managed_id,
    parse,
    read,
    write_managed,
)

MULTI_SECTION = (
    "# Memories\n\n## Patterns\n\n### mem-1737372000-a1b2\n> Uses barrel exports\n"
    "<!-- tags: imports | created: 2025-01-20 -->\n\n## Decisions\n\n"
    "### mem-1737372100-c3d4\n> Chose Postgres over SQLite\n"
    "<!-- tags: database | created: 2025-01-20 -->\n\n## Fixes\n\n### mem-1737372200-e5f6\n"
    "> ECONNREFUSED means start docker\n<!-- tags: docker, debugging | created: 2025-01-21 -->"
    "\n\n## Context\n\n### mem-1737372300-a7b8\n> ralph-core is the shared library\n"
    "<!-- tags: architecture | created: 2025-01-21 -->\n"
)


def test_the_parser_reproduces_ralphs_rules_and_quirks() -> None:
    found = parse(MULTI_SECTION)
    assert [(m.id, m.memory_type, m.tags) for m in found] == [
        ("mem-1737372000-a1b2", "pattern", ("imports",)),
        ("mem-1737372100-c3d4", "decision", ("database",)),
        ("mem-1737372200-e5f6", "fix", ("docker", "debugging")),
        ("mem-1737372300-a7b8", "context", ("architecture",)),
    ]
    multiline = (
        "## Patterns\n\n### mem-1-a1b2\n> one\n>\n> \n> three\n"
        "<!-- tags:  | created: 2025-01-20 -->\n"
    )
    (memory,) = parse(multiline)
    assert memory.content == "one\nthree" and memory.tags == ()  # blank '>' lines dropped
    malformed = (
        "## Patterns\n\n### mem-1737372000-a1b2\n> Valid memory\n"
        "<!-- tags: valid | created: 2025-01-20 -->\n\n### mem-invalid-format\n"
        "> This has an invalid ID format\n\n### mem-1737372100-c3d4\n> Another\n"
        "<!-- tags: also-valid | created: 2025-01-21 -->\n"
    )
    first, second = parse(malformed)
    assert first.content == "Valid memory\nThis has an invalid ID format"  # joined
    assert second.tags == ("also-valid",)
    leaking = (
        "### mem-1-a1b2\n<!-- tags: no-content | created: 2025-01-20 -->\n\n"
        "### mem-2-c3d4\n> has content\n"
    )
    (only,) = parse(leaking)  # before any section: a pattern; content-less: dropped
    assert (only.memory_type, only.tags, only.created) == ("pattern", ("no-content",), "2025-01-20")
    (undated,) = parse("## Fixes\r\n### mem-3-beef\r\n> crlf\r\n", today="2026-11-25")
    assert (undated.memory_type, undated.content, undated.created) == ("fix", "crlf", "2026-11-25")
    assert parse("## Context\n### mem-4-ABCD\n> upper-case hex is not an id\n") == []


def test_the_injected_block_and_its_budget_cut_are_ralphs() -> None:
    memories = parse(MULTI_SECTION)
    assert injected_block(memories, 0) == "# Memories\n" + MULTI_SECTION.removeprefix(
        "# Memories\n"
    )
    assert injected_block(memories, 40) == (
        "# Memories\n\n## Patterns\n\n### mem-1737372000-a1b2\n> Uses barrel exports\n"
        "<!-- tags: imports | created: 2025-01-20 -->\n\n\n"
        "<!-- truncated: budget 40 tokens exceeded -->"
    )
    assert injected_block([], 10) == ""


def entry(n: int, text: str | None = None) -> Entry:
    when = datetime(2026, 11, 25, 8, 0, n, tzinfo=UTC)
    return Entry(
        managed_id(f"item-{n}", when, set()),
        text or f"Stored fact number {n}: run `make lint` before commit",
        ("error",),
        "2026-11-25",
    )


def test_managed_entries_replace_their_predecessors_and_leave_the_rest_byte_for_byte(
    tmp_path: Path,
) -> None:
    path = tmp_path / ".ralph" / "agent" / "memories.md"
    path.parent.mkdir(parents=True)
    path.write_text(MULTI_SECTION, encoding="utf-8")
    written = write_managed(
        path, [entry(1), entry(2, "two lines\n\nwith a blank\r\nbetween")], budget=0
    )
    assert len(written) == 2
    found = parse(path.read_text(encoding="utf-8"))
    ours = [m for m in found if MANAGED_TAG in m.tags]
    assert [m.id for m in ours] == [written[0].id, written[1].id]
    assert {m.memory_type for m in ours} == {"context"}
    assert ours[1].content == "two lines\nwith a blank\nbetween"
    assert [m for m in found if m not in ours] == parse(MULTI_SECTION)
    write_managed(path, [entry(3)], budget=0)
    assert [m.content for m in parse(path.read_text()) if MANAGED_TAG in m.tags] == [
        entry(3).content
    ]
    write_managed(path, [], budget=0)
    assert path.read_text(encoding="utf-8") == MULTI_SECTION


def test_entries_beyond_the_budget_are_left_out(tmp_path: Path) -> None:
    path = tmp_path / "memories.md"
    path.write_text(MULTI_SECTION, encoding="utf-8")
    budget = (len(injected_block(parse(MULTI_SECTION), 0).encode()) + 250) // 4
    written = write_managed(path, [entry(n) for n in range(1, 6)], budget=budget)
    assert 0 < len(written) < 5
    block = injected_block(parse(path.read_text()), budget)
    assert "truncated" not in block
    assert all(e.id in block for e in written)
    # Nothing of ours fits beside memories that fill the budget alone.
    assert write_managed(path, [entry(9)], budget=10) == []
    assert path.read_text(encoding="utf-8") == MULTI_SECTION


def test_a_missing_file_or_section_is_made_as_ralph_makes_it(tmp_path: Path) -> None:
    path = tmp_path / "agent" / "memories.md"
    write_managed(path, [entry(1)], budget=0)
    text = path.read_text(encoding="utf-8")
    assert text.startswith(TEMPLATE) and [m.memory_type for m in parse(text)] == ["context"]
    bare = tmp_path / "bare.md"
    bare.write_text("# Memories\n\n## Fixes\n", encoding="utf-8")
    write_managed(bare, [entry(1)], budget=0)
    assert [m.memory_type for m in parse(bare.read_text())] == ["context"]


def test_our_write_waits_for_ralphs_lock_and_keeps_what_ralph_wrote(tmp_path: Path) -> None:
    path = tmp_path / "memories.md"
    path.write_text(TEMPLATE, encoding="utf-8")
    handle = os.open(tmp_path / "memories.md.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(handle, fcntl.LOCK_EX)
    done = threading.Event()

    def write() -> None:
        write_managed(path, [entry(1)], budget=0)
        done.set()

    thread = threading.Thread(target=write)
    thread.start()
    time.sleep(0.3)
    assert not done.is_set()  # waiting on the lock Ralph holds
    # Ralph's append (memory_store.rs): right after the section header, under its lock.
    block = "\n### mem-1737372400-0b1c\n> agent fact\n<!-- tags: db | created: 2025-01-22 -->\n"
    text = path.read_text().replace("## Fixes\n", "## Fixes\n" + block)
    path.write_text(text, encoding="utf-8")
    fcntl.flock(handle, fcntl.LOCK_UN)
    os.close(handle)
    thread.join(10)
    assert done.is_set()
    contents = {m.content for m in parse(path.read_text())}
    assert {"agent fact", entry(1).content} <= contents


def test_a_read_waits_for_ralphs_write_and_a_lock_never_freed_is_given_up_on(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memories.md"
    path.write_text(TEMPLATE, encoding="utf-8")
    handle = os.open(tmp_path / "memories.md.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(handle, fcntl.LOCK_EX)  # Ralph is writing
    try:
        started = time.monotonic()
        try:
            with locked(path, shared=True, wait=0.3):
                raise AssertionError("read beside Ralph's write")
        except TimeoutError as exc:
            assert "stayed locked for 0.3 s" in str(exc)
        assert time.monotonic() - started < 5  # gave up, did not block
        seen: list[str | None] = []
        reader = threading.Thread(target=lambda: seen.append(read(path)))
        reader.start()
        time.sleep(0.3)
        assert seen == []  # waiting for the write to finish
        path.write_text(TEMPLATE + "written", encoding="utf-8")
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        os.close(handle)
    reader.join(10)
    assert seen == [TEMPLATE + "written"]
    assert read(tmp_path / "absent.md") is None


def test_a_worktrees_symlink_keeps_pointing_at_the_shared_file(tmp_path: Path) -> None:
    shared = tmp_path / "main" / "memories.md"
    shared.parent.mkdir()
    shared.write_text(MULTI_SECTION, encoding="utf-8")
    link = tmp_path / "worktree" / "memories.md"
    link.parent.mkdir()
    link.symlink_to(shared)
    write_managed(link, [entry(1)], budget=0)
    assert link.is_symlink()
    assert entry(1).content in shared.read_text()


def test_managed_ids_are_valid_stable_and_distinct() -> None:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    taken: set[str] = set()
    first = managed_id("a", when, taken)
    assert first == managed_id("a", when, set())
    assert managed_id("a", when, taken) != first
    assert parse(f"### {first}\n> x\n")[0].id == first


user_line = st.one_of(
    st.sampled_from(
        [
            "",
            "## Context",
            "## Fixes",
            "## Other",
            "### mem-17-ab12",
            "### not-an-id",
            "> a fact",
            ">",
            "> <!-- tags: ralph-context | created: 2025-01-01 -->",
            "<!-- tags: x | created: 2025-01-01 -->",
            "free text",
        ]
    ),
    st.text(alphabet=st.characters(exclude_categories=["Cs", "Cc"]), max_size=12),
)


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(user_line, max_size=14), ending=st.sampled_from(["", "\n"]))
def test_any_users_file_is_restored_exactly_and_parsed_the_same(
    lines: list[str], ending: str
) -> None:
    original = "\n".join(lines) + ending
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memories.md"
        path.write_text(original, encoding="utf-8")
        mine = [entry(1), entry(2)]
        write_managed(path, mine, budget=0)
        after = parse(path.read_text(encoding="utf-8"), today="2026-11-25")
        ours = [m for m in after if m.id in {e.id for e in mine}]
        assert [m.id for m in ours] == [e.id for e in mine]
        # Our entries read as written (lines the user left right under the header may
        # join the last one, as they would join any memory there).
        assert ours[0].content == mine[0].content
        write_managed(path, [], budget=0)
        restored = path.read_text(encoding="utf-8")
        # Exact whenever there is a Context section to insert under (a header that ends
        # the file without a newline gets one).
        if re.search(r"^## Context.*\n", original, re.MULTILINE):
            assert restored == original
        else:  # the section Ralph would add goes at the end; the user's bytes stay
            assert restored.startswith(original)
        assert parse(restored, today="2026-11-25") == parse(original, today="2026-11-25")
