"""Namespaces: several projects' memories in one store, kept apart by construction.

A namespace is a complete store of its own (items, iterations, usage, request keys, archive,
pack tables, skillbook) in ``<store>/namespaces/<name>/``; the ``default`` namespace is the
store folder itself, so a store made before namespaces existed is the default namespace as
it is, with nothing to migrate. Separate tables rather than a namespace column: no query,
cache, lifecycle pass or full-text index can cross namespaces, because none can reach
another namespace's tables. One writer lock at the store folder covers every namespace.

Names go into file paths and URLs (``/ns/<name>/mcp``), so they are checked before either
is built.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ralph_context.errors import InvalidInput
from ralph_context.object_location import Location, ObjectLocation

__all__ = [
    "DEFAULT",
    "NAME_RULE",
    "NamespaceSize",
    "check_name",
    "directory",
    "disk_bytes",
    "endpoint",
    "is_name",
    "listing",
    "names",
]

DEFAULT = "default"
NAME_RULE = "1-63 lowercase letters, digits, '-' or '_', starting with a letter or digit"
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
# The folder under a store that holds every namespace but the default one.
FOLDER = "namespaces"


def is_name(name: object) -> bool:
    """True when ``name`` is a valid namespace name."""
    return isinstance(name, str) and _NAME.fullmatch(name) is not None


def check_name(name: str) -> str:
    """``name`` if it is a valid namespace name.

    Raises:
        InvalidInput: It is not (the message says what is allowed).
    """
    if not is_name(name):
        raise InvalidInput(f"namespace {name!r:.80} is not allowed: use {NAME_RULE}")
    return name


def directory(root: Location, name: str) -> Location:
    """Where namespace ``name`` of the store at ``root`` lives."""
    check_name(name)
    return root if name == DEFAULT else root / FOLDER / name


def endpoint(base: str, name: str) -> str:
    """The MCP URL of namespace ``name`` on a server whose default namespace answers at
    ``base`` (``http://host:port/mcp``)."""
    check_name(name)
    if name == DEFAULT:
        return base
    stem = base.removesuffix("/mcp")
    return f"{stem}/ns/{name}/mcp"


@dataclass(frozen=True)
class NamespaceSize:
    """A namespace and what it holds on disk."""

    name: str
    size_mb: float


def names(root: Location) -> list[str]:
    """Every namespace of the store at ``root``, ``default`` first."""
    nested = root / FOLDER
    if isinstance(nested, ObjectLocation):
        return [DEFAULT, *(n for n in nested.folders() if is_name(n))]
    if not nested.is_dir():
        return [DEFAULT]
    return [DEFAULT, *sorted(p.name for p in nested.iterdir() if p.is_dir() and is_name(p.name))]


def listing(root: Location) -> list[NamespaceSize]:
    """Every namespace of the store at ``root`` with its size on disk, ``default`` first."""
    return [
        NamespaceSize(name, round(disk_bytes(directory(root, name)) / (1024 * 1024), 2))
        for name in names(root)
    ]


def disk_bytes(folder: Location) -> int:
    """Bytes on disk of the store at ``folder``, every version, without the namespaces
    nested in it: the default namespace's size (which its size limit prunes against) is
    its own, not the whole store's."""
    if isinstance(folder, ObjectLocation):
        nested = [folder / FOLDER / n for n in names(folder)[1:]]
        return folder.size_bytes() - sum(n.size_bytes() for n in nested)
    nested_folder = folder / FOLDER
    total = 0
    for here, dirs, files in os.walk(folder):
        if Path(here) == folder and FOLDER in dirs and nested_folder.is_dir():
            dirs.remove(FOLDER)
        for name in files:
            try:
                total += (Path(here) / name).stat().st_size
            except OSError:  # removed while we counted (a compaction's cleanup)
                continue
    return total
