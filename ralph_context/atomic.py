"""Replace a file so that readers see the old text or the new one, never half of either.

Used for files other programs read while we write them: the store's model record, a project's
``.mcp.json``, ACE's skillbook, the Ralph hook's context cache.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_text_atomically"]


def write_text_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a temp file beside ``path``, then rename it over ``path``.

    Raises:
        OSError: The folder is missing or not writable; ``path`` is unchanged and no temp
            file is left behind.
    """
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
