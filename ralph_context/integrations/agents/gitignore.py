"""The project's ``.gitignore`` entry for what the agents' memory writes in it: ``.agent/``,
the folder of the default store, the hooks' spool and log, the shared server's note and log.

Without it, the first hook call left ``git status`` showing ``.agent/`` in a repository
``init --agent`` had wired (and a ``git add -A`` would commit the store). ``init`` writes the
entry under a marker line, once: a ``.gitignore`` that ignores the folder already is left as
it is; ``init --remove`` takes out the marked entry only, and a ``.gitignore`` that held
nothing else is deleted.
"""

from __future__ import annotations

from pathlib import Path

from ralph_context.integrations.agents.files import FileEdit, read_text

__all__ = ["ENTRY", "MARKER", "gitignore_edit"]

MARKER = "# ralph-context: its store, the hooks' spool and logs (init --agent; --remove drops it)"
ENTRY = "/.agent/"
# Lines that ignore the folder already, as a person may have written them.
_IGNORING = frozenset({".agent", ".agent/", "/.agent", "/.agent/", ".agent/*", "/.agent/*"})


def gitignore_edit(project: Path, *, remove: bool) -> FileEdit:
    """The edit of ``project``'s ``.gitignore`` that adds (or with ``remove``, takes out)
    the marked entry."""
    path = project / ".gitignore"
    before = read_text(path)
    block = f"{MARKER}\n{ENTRY}\n"
    if remove:
        if before is None or block not in before:
            return FileEdit(path, before, before)
        after = before.replace(block, "", 1)
        return FileEdit(path, before, after if after.strip() else None)
    if any(line.strip() in _IGNORING for line in (before or "").splitlines()):
        return FileEdit(path, before, before)
    text = before or ""
    if text and not text.endswith("\n"):
        text += "\n"  # kept by --remove: the file then ends as a text file should
    return FileEdit(path, before, text + block)
