"""A table read fragment by fragment, so what can be read is read when part cannot.

``export`` read the hot table as one scan: one deleted data file made it yield 0 of 755
items (issue 62). Read one fragment at a time instead, each in slices, at one pinned
version, a fragment whose files are gone or damaged costs only its own rows, and they
are counted and named.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

__all__ = ["Piece", "Salvage"]


@dataclass(frozen=True)
class Piece:
    """One fragment: its id, its rows (by its manifest) and its data files."""

    fragment: int
    rows: int
    files: tuple[str, ...]


class Salvage:
    """``table`` (a LanceDB table) at its current version, read a fragment at a time."""

    def __init__(self, table: Any) -> None:
        self._dataset = table.to_lance()
        self.version = int(self._dataset.version)
        root = Path(self._dataset.uri)
        self.pieces = [
            Piece(
                int(fragment.fragment_id),
                int(fragment.metadata.physical_rows - fragment.metadata.num_deletions),
                tuple(f"{root.name}/data/{data.path}" for data in fragment.metadata.files),
            )
            for fragment in self._dataset.get_fragments()
        ]

    def rows(self, fragment: int, offset: int, limit: int) -> pa.Table:
        """Up to ``limit`` live rows of ``fragment`` from ``offset``.

        Raises:
            Exception: Lance's, when the fragment's files cannot be read.
        """
        return self._dataset.get_fragment(fragment).to_table(offset=offset, limit=limit)
