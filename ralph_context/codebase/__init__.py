"""Memory tied to the code: which files of the project's git repository an item names, as
they were when it was stored (``anchors``), and whether they still are when it is pushed
(``staleness``), read from the work tree's own files (``repository``), no ``git`` process.

The repository is the one holding the settings' project root (the config file's folder,
else the working folder): the agents' server runs in the project's main worktree, Ralph
1.x's hook in the loop's folder, Ralph v2's in its workspace. An item's paths are those of
the worktree its ``cwd`` is in, when that is one of the repository's (an agent in a linked
worktree), and an agent's hooks judge against the worktree it works in. No repository:
nothing is recorded and nothing checked.
"""

from ralph_context.codebase.anchors import KEY, MAX_FILES, anchor
from ralph_context.codebase.repository import Blob, Repository, Worktrees
from ralph_context.codebase.staleness import Finding, Pushable, findings, for_push, marks, words

__all__ = [
    "KEY",
    "MAX_FILES",
    "Blob",
    "Finding",
    "Pushable",
    "Repository",
    "Worktrees",
    "anchor",
    "findings",
    "for_push",
    "marks",
    "words",
]
