"""Which failed writes mean the disk refuses writes (the store is then served read-only),
told by the error number wherever the error carries it."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from ralph_context.object_location import ObjectLocation
from ralph_context.storage.write_faults import probe, unwritable


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), "store is full: No space left on"),
        (OSError(errno.EDQUOT, "Disk quota exceeded"), "store is full: Disk quota exceeded"),
        (PermissionError(errno.EACCES, "Permission denied"), "store is not writable: Permis"),
        (OSError(errno.EPERM, "Operation not permitted"), "store is not writable: Operati"),
        (OSError(errno.EROFS, "Read-only file system"), "store is read-only: Read-only f"),
        (OSError(errno.EIO, "Input/output error"), "store could not be written: Input"),
        # As LanceDB raises them from Rust: the number only in the message.
        (
            RuntimeError(
                "lance error: LanceError(IO): Generic LocalFileSystem error: Unable to write "
                "/s/context_items.lance/data/x.lance: No space left on device (os error 28)"
            ),
            "store is full: No space left on",
        ),
        # The upkeep process's answer, as the writer raises it.
        (
            RuntimeError("upkeep compact failed: OSError: [Errno 30] Read-only file system"),
            "store is read-only: Read-only f",
        ),
    ],
)
def test_a_write_the_disk_refused_names_the_store_and_the_cause(
    error: BaseException, expected: str, tmp_path: Path
) -> None:
    found = unwritable(error, tmp_path)
    assert found is not None
    assert str(found).startswith(expected)
    assert str(found).endswith(f" at {tmp_path}")


def test_the_cause_is_found_under_a_chained_error_and_inside_a_task_groups_errors(
    tmp_path: Path,
) -> None:
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as full:
            raise RuntimeError("the commit failed") from full
    except RuntimeError as chained:
        assert unwritable(chained, tmp_path) is not None
        group = ExceptionGroup("unhandled errors in a TaskGroup", [ValueError("x"), chained])
        assert unwritable(group, tmp_path) is not None


@pytest.mark.parametrize(
    "error",
    [
        ValueError("a number too large for its column"),
        FileNotFoundError(errno.ENOENT, "No such file or directory"),
        RuntimeError("lance error: Commit conflict for version 7"),
        RuntimeError("connection reset (os error 104)"),
    ],
)
def test_other_failures_are_not_taken_for_an_unwritable_disk(
    error: BaseException, tmp_path: Path
) -> None:
    assert unwritable(error, tmp_path) is None


def test_only_a_store_on_a_local_disk_is_ever_unwritable() -> None:
    full = OSError(errno.ENOSPC, "No space left on device")
    assert unwritable(full, None) is None
    assert unwritable(full, ObjectLocation("s3://bucket/store", ())) is None


def test_a_probe_leaves_nothing_behind_and_fails_where_the_folder_cannot_be_written(
    tmp_path: Path,
) -> None:
    probe(tmp_path)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(OSError):
        probe(tmp_path / "missing")
    if os.geteuid() != 0:  # root ignores permission bits (see tests/disk_faults.py)
        tmp_path.chmod(0o500)
        try:
            with pytest.raises(PermissionError):
                probe(tmp_path)
        finally:
            tmp_path.chmod(0o700)
