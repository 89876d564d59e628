"""Memory tied to the code: which files of the project's git repository an item names, as
they were when it was stored (``anchors``), and whether they still are when it is pushed
(``staleness``), read from the work tree's own files (``repository``), no ``git`` process.

The repository is the git work tree holding the settings' project root (the config file's
folder, else the working folder): the agents' server runs in the project's top folder,
Ralph 1.x's hook in the loop's, Ralph v2's in its workspace. No repository: nothing is
recorded and nothing checked.
"""

from ralph_context.codebase.anchors import KEY, MAX_FILES, anchor
from ralph_context.codebase.repository import Blob, Repository
from ralph_context.codebase.staleness import Finding, Pushable, findings, for_push, marks, words

__all__ = [
    "KEY",
    "MAX_FILES",
    "Blob",
    "Finding",
    "Pushable",
    "Repository",
    "anchor",
    "findings",
    "for_push",
    "marks",
    "words",
]
