"""The one check every installed model file passes: its sha256 against a pinned digest."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ralph_context.errors import ModelError

__all__ = ["check", "check_file"]


def check(name: str, data: bytes, expected: str) -> None:
    """Refuse ``data`` unless its sha256 is ``expected``.

    Raises:
        ModelError: The digests differ.
    """
    _compare(name, hashlib.sha256(data).hexdigest(), expected)


def check_file(name: str, path: Path, expected: str) -> None:
    """:func:`check` for a file too large to read at once (the weights are 438 MB).

    Raises:
        ModelError: The digests differ.
    """
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    _compare(name, digest.hexdigest(), expected)


def _compare(name: str, actual: str, expected: str) -> None:
    if actual != expected:
        raise ModelError(
            f"{name}: sha256 {actual} does not match the published {expected}; "
            "refusing to install a model file we cannot verify"
        )
