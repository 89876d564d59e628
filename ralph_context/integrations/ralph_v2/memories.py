"""``.ralph/agent/memories.md``: Ralph v2's memories file, read as Ralph reads it and given
our entries without touching anyone else's.

Ralph (v2.10.1, ``crates/ralph-core/src/memory_parser.rs`` and ``memory_store.rs``) keeps
memories as markdown::

    ## Fixes

    ### mem-1737372200-e5f6
    > ECONNREFUSED means start docker
    <!-- tags: docker, debugging | created: 2025-01-21 -->

and injects every one of them into every prompt, cut at ``memories.budget`` x 4 bytes. So
the hook writes the few items that matter now as *managed* entries (tag ``ralph-context``,
section ``## Context``), replacing the ones it wrote before, and keeps the user's and the
agent's entries byte for byte. :func:`parse` reproduces Ralph's parser, quirks included
(blank ``>`` lines dropped; lines after a malformed ``###`` header joined to the memory
before it; a content-less memory's tags leaking into the next), so what we check is what
Ralph will see.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ralph_context.atomic import write_text_atomically

__all__ = [
    "MANAGED_TAG",
    "SECTIONS",
    "TEMPLATE",
    "Entry",
    "Memory",
    "injected_block",
    "locked",
    "managed_id",
    "parse",
    "read",
    "write_managed",
]

MANAGED_TAG = "ralph-context"
# Memory types and their sections, in Ralph's order (``MemoryType::all``).
SECTIONS = {"pattern": "Patterns", "decision": "Decisions", "fix": "Fixes", "context": "Context"}
TEMPLATE = "# Memories\n\n## Patterns\n\n## Decisions\n\n## Fixes\n\n## Context\n"
# Seconds to wait for Ralph's lock on memories.md: it holds it for one write (milliseconds);
# well inside the hook's own deadline.
LOCK_WAIT = 10.0

_SECTION = re.compile(r"^## (Patterns|Decisions|Fixes|Context)")
_MEMORY_ID = re.compile(r"^### (mem-\d+-[0-9a-f]{4})")
_CONTENT = re.compile(r"^> (.+)$")
_METADATA = re.compile(r"<!-- tags: ([^|]*) \| created: (\d{4}-\d{2}-\d{2}) -->")
_TYPES = {name: kind for kind, name in SECTIONS.items()}


@dataclass(frozen=True)
class Memory:
    """One memory as Ralph's parser yields it."""

    id: str
    memory_type: str
    content: str
    tags: tuple[str, ...]
    created: str


@dataclass(frozen=True)
class Entry:
    """One managed entry to write: its id (see :func:`managed_id`), text and tags."""

    id: str
    content: str
    tags: tuple[str, ...]
    created: str


def _lines(text: str) -> list[str]:
    """Lines as Rust's ``str::lines`` gives them: split on ``\\n`` (a ``\\r`` before it
    dropped), no empty last line for a trailing newline."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def parse(markdown: str, *, today: str | None = None) -> list[Memory]:
    """The memories Ralph's parser finds in ``markdown`` (its rules, line by line)."""
    memories: list[Memory] = []
    kind = "pattern"
    current: str | None = None
    content: list[str] = []
    tags: list[str] = []
    created: str | None = None
    fallback = today or datetime.now(UTC).strftime("%Y-%m-%d")

    def flush() -> None:
        nonlocal current, tags, created
        if current is not None and content:
            memories.append(
                Memory(current, kind, "\n".join(content), tuple(tags), created or fallback)
            )
            tags, created = [], None
        current = None
        content.clear()

    for line in _lines(markdown):
        if found := _SECTION.match(line):
            flush()
            kind = _TYPES[found.group(1)]
        elif found := _MEMORY_ID.match(line):
            flush()
            current = found.group(1)
        elif found := _CONTENT.match(line):
            content.append(found.group(1))
        elif found := _METADATA.search(line):
            tags = [t.strip() for t in found.group(1).split(",") if t.strip()]
            created = found.group(2)
    flush()
    return memories


def injected_block(memories: Sequence[Memory], budget: int) -> str:
    """The text Ralph puts in the prompt (``format_memories_as_markdown``, then
    ``truncate_to_budget``: cut at ``budget`` x 4 bytes after the last complete entry)."""
    if not memories:
        return ""
    out = "# Memories\n"
    for kind, section in SECTIONS.items():
        chosen = [m for m in memories if m.memory_type == kind]
        if not chosen:
            continue
        out += f"\n## {section}\n"
        for memory in chosen:
            text = memory.content.replace("\n", "\n> ")
            out += (
                f"\n### {memory.id}\n> {text}\n"
                f"<!-- tags: {', '.join(memory.tags)} | created: {memory.created} -->\n"
            )
    data = out.encode("utf-8")
    if budget <= 0 or len(data) <= budget * 4:
        return out
    cut = data[: budget * 4].decode("utf-8", errors="ignore")
    end = cut.rfind("-->")
    if end >= 0:
        end += 3
        newline = cut.find("\n", end)
        cut = out[: newline + 1 if newline >= 0 else end]
    return f"{cut}\n\n<!-- truncated: budget {budget} tokens exceeded -->"


def managed_id(item_id: str, created_at: datetime, taken: set[str]) -> str:
    """A valid ``mem-<secs>-<4 hex>`` id for an item, the same on every write (the agent
    sees one id per item), and not in ``taken``."""
    seconds = int(created_at.timestamp())
    salt = 0
    while True:
        digest = hashlib.sha256(f"{item_id}:{salt}".encode()).hexdigest()[:4]
        candidate = f"mem-{seconds}-{digest}"
        if candidate not in taken:
            taken.add(candidate)
            return candidate
        salt += 1


def _block(entry: Entry) -> str:
    """An entry in Ralph's own block form (``format_memory``), safe from its parser: no
    blank ``>`` line (it would be dropped), one metadata line (so no tags leak in)."""
    lines = [line.rstrip() for line in entry.content.replace("\r", "\n").split("\n")]
    quoted = "\n".join(f"> {line}" for line in lines if line.strip()) or "> (empty)"
    tags = ", ".join(_tag(t) for t in (MANAGED_TAG, *entry.tags) if _tag(t))
    return f"\n### {entry.id}\n{quoted}\n<!-- tags: {tags} | created: {entry.created} -->\n"


def _tag(tag: str) -> str:
    """A tag as the metadata line can hold it: no ``|`` (ends the tags), no ``,``."""
    return " ".join(tag.replace("|", " ").replace(",", " ").split())


def _without_managed(text: str) -> str:
    """``text`` without the entries we wrote: each ``### mem-`` block whose metadata line
    carries :data:`MANAGED_TAG`, with the blank line Ralph's block form puts before it.
    Any line in such a block that is not ours (not its header, a ``>`` line, its metadata
    or blank) is kept."""
    lines = text.split("\n")
    drop: set[int] = set()
    start = 0
    while start < len(lines):
        if not _MEMORY_ID.match(lines[start]):
            start += 1
            continue
        end = start + 1
        while end < len(lines) and not (lines[end].startswith("#") or _metadata(lines[end])):
            end += 1
        found = _metadata(lines[end]) if end < len(lines) else None
        tags = [t.strip() for t in found.group(1).split(",")] if found else []
        if found is not None and MANAGED_TAG in tags:
            block = range(start, end + 1)
            drop.update(i for i in block if i in (start, end) or _ours(lines[i]))
            if start > 0 and lines[start - 1] == "":
                drop.add(start - 1)
        start = end if found is None else end + 1
    return "\n".join(line for i, line in enumerate(lines) if i not in drop)


def _metadata(line: str) -> re.Match[str] | None:
    """A metadata line as the parser sees one: a ``>`` line holding the same text is
    content (the parser tries content first)."""
    return None if _CONTENT.match(line) else _METADATA.search(line)


def _ours(line: str) -> bool:
    return line.startswith(">") or not line.strip()


@contextmanager
def locked(path: Path, *, shared: bool = False, wait: float = LOCK_WAIT) -> Iterator[None]:
    """Ralph's lock on ``path``: ``flock`` on ``<path>.lock``, shared to read, exclusive to
    write, as Ralph takes it. Asked for without blocking, again and again, for at most
    ``wait`` seconds: a blocking ``flock`` could not be interrupted by the hook's deadline.

    Raises:
        TimeoutError: Another process held it for ``wait`` seconds.
    """
    lock = path.with_name(path.name + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    handle = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    mode = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(handle, mode)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"{lock} stayed locked for {wait:g} s") from None
                time.sleep(0.02)
        yield
    finally:
        os.close(handle)  # closing releases the lock


def read(path: Path) -> str | None:
    """``path``'s text, read under Ralph's shared lock (Ralph rewrites it in place, so an
    unlocked read can see it empty or half written); None when there is no file."""
    with locked(path, shared=True):
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None


def write_managed(path: Path, entries: Sequence[Entry], *, budget: int) -> list[Entry]:
    """Replace our entries in ``path`` with ``entries`` (best first) under Ralph's lock;
    returns those written.

    They go right after the ``## Context`` header, as Ralph inserts, so the file stays in
    Ralph's shape (the section is added at the end if missing, the file made from Ralph's
    template if absent). With ``budget`` > 0 the last entries are left out until the whole
    injected block fits the budget untruncated: Ralph renders Context last and cuts the
    end, so an entry past the budget would only cut the agent's own memories' neighbour.
    The file is replaced by a rename (a crash leaves the old text); for the symlink a
    worktree loop has, its target is replaced.
    """
    target = path.resolve()
    with locked(path):
        original = target.read_text(encoding="utf-8") if target.exists() else TEMPLATE
        base = _without_managed(original)
        kept = list(entries)
        while True:
            text = _inserted(base, kept)
            if budget <= 0 or not kept:
                break
            block = injected_block(parse(text), 0)
            if len(block.encode("utf-8")) <= budget * 4:
                break
            kept.pop()
        if text != original:
            target.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomically(target, text)
    return kept


def _inserted(text: str, entries: Sequence[Entry]) -> str:
    if not entries:
        return text
    blocks = "".join(_block(entry) for entry in entries)
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if line.startswith("## Context"):
            head = "\n".join(lines[: index + 1]) + "\n"
            return head + blocks + "\n".join(lines[index + 1 :])
    # As Ralph appends a missing section: at the end, the user's bytes left as they are.
    separator = "" if not text or text.endswith("\n") else "\n"
    return f"{text}{separator}## Context\n{blocks}"
