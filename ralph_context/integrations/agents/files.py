"""A planned change to files: each file's text before and after, shown as a unified diff
(``--dry-run``) or written (atomically; a file whose text becomes ``None`` is deleted).

Plans are made in full before anything is written, so a malformed file refuses the whole
``init`` and no other file is half changed.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from ralph_context.atomic import write_text_atomically
from ralph_context.errors import AgentFileInvalid

__all__ = ["FileEdit", "read_text"]


@dataclass(frozen=True)
class FileEdit:
    """One file: ``None`` as ``before`` means it did not exist, as ``after`` that it goes.

    ``owned_dir`` is a folder init creates for it (``.claude``, ``.codex``): written
    before the file, and removed with it when the file goes and the folder is left empty.
    """

    path: Path
    before: str | None
    after: str | None
    owned_dir: Path | None = None

    @property
    def changes(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        """The change as a unified diff (``/dev/null`` for a file created or deleted)."""
        if not self.changes:
            return ""
        lines = difflib.unified_diff(
            (self.before or "").splitlines(keepends=True),
            (self.after or "").splitlines(keepends=True),
            str(self.path) if self.before is not None else "/dev/null",
            str(self.path) if self.after is not None else "/dev/null",
        )
        text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
        return text

    def apply(self) -> None:
        """Write or delete the file (nothing when it does not change).

        Raises:
            OSError: The folder cannot be written.
        """
        if not self.changes:
            return
        if self.after is None:
            self.path.unlink(missing_ok=True)
            folder = self.owned_dir
            if folder is not None and folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(self.path, self.after)


def read_text(path: Path) -> str | None:
    """The file's text, or ``None`` when there is none.

    Raises:
        AgentFileInvalid: It exists but is not readable UTF-8 text.
    """
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise AgentFileInvalid(path, f"cannot be read as UTF-8 text ({exc})") from None
