"""A checksum of every data file the store commits, since Lance keeps none.

Lance records each data file's size in the manifest but no checksum of its bytes: 4 KiB
of random bytes written into a data file changed three vectors while ``health`` said
healthy and ``export`` succeeded (issue 62). Data files never change once committed (a
write adds files, compaction replaces them), so each is hashed once, soon after the commit
that made it (the writer ``seal``\\ s after its batches), and ``integrity`` compares: a file
whose size or modification time differs from its entry is hashed again (the quick check
``health`` runs), or every file is (``verify``).

The ledger is ``checksums.jsonl`` in the store's folder, one JSON line per file (its path
under the folder, size, modification time, BLAKE2b): appended as files are sealed, written
again without the files no table references once maintenance has dropped them.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from ralph_context._logging import get_logger
from ralph_context.atomic import write_text_atomically

__all__ = ["LEDGER", "Entry", "Ledger", "digest"]

log = get_logger("ralph_context.storage")

LEDGER = "checksums.jsonl"
_BLOCK = 1 << 20


@dataclass(frozen=True)
class Entry:
    """One sealed file: where (under the store's folder), its size, mtime and BLAKE2b."""

    file: str
    size: int
    mtime_ns: int
    blake2b: str

    def same_stat(self, stat: os.stat_result) -> bool:
        """True when the file's size and modification time are still the sealed ones."""
        return stat.st_size == self.size and stat.st_mtime_ns == self.mtime_ns


def digest(path: Path) -> str:
    """The file's BLAKE2b (16 bytes, hex)."""
    hasher = hashlib.blake2b(digest_size=16)
    with path.open("rb") as file:
        while block := file.read(_BLOCK):
            hasher.update(block)
    return hasher.hexdigest()


class Ledger:
    """The sealed files of the store at ``folder``, read from its ledger (an unreadable
    line is skipped: it seals a file again, it never condemns one)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / LEDGER
        self.entries: dict[str, Entry] = {}
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            lines = []
        for line in lines:
            try:
                entry = Entry(**json.loads(line))
            except (ValueError, TypeError):
                continue
            self.entries[entry.file] = entry

    def seal(self, files: Iterable[Path], budget: int) -> int:
        """Hash ``files`` (committed data files of the store) not sealed yet, at most
        ``budget`` bytes of them (the rest at the next call), and append them; returns
        how many were sealed."""
        fresh: list[Entry] = []
        spent = 0
        for path in files:
            name = path.relative_to(self.folder).as_posix()
            if name in self.entries or spent >= budget:
                continue
            try:
                stat = path.stat()
                entry = Entry(name, stat.st_size, stat.st_mtime_ns, digest(path))
            except FileNotFoundError:
                continue  # dropped by a cleanup since the manifest was read
            spent += entry.size
            fresh.append(entry)
        if fresh:
            with self.path.open("a", encoding="utf-8") as ledger:
                ledger.writelines(json.dumps(asdict(e)) + "\n" for e in fresh)
            self.entries.update((e.file, e) for e in fresh)
        return len(fresh)

    def keep_only(self, files: Iterable[Path]) -> None:
        """Write the ledger again with only ``files`` (every file a table still
        references), after maintenance dropped the others."""
        names = {path.relative_to(self.folder).as_posix() for path in files}
        kept = {name: e for name, e in self.entries.items() if name in names}
        if len(kept) == len(self.entries):
            return
        text = "".join(json.dumps(asdict(e)) + "\n" for e in kept.values())
        try:
            write_text_atomically(self.path, text)
        except OSError as exc:  # appended lines of dropped files do no harm meanwhile
            log.warning("checksums_not_rewritten", error=str(exc))
            return
        self.entries = kept
