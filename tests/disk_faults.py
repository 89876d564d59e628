"""Disks that refuse writes, for the tests of a store served read-only: a small tmpfs of its
own, filled to the last byte, made immutable or mounted read-only over a folder.

All of it needs root (CI runs the suite as root): mounting does, and root ignores permission
bits (``chmod a-w`` does not stop it: ``CAP_DAC_OVERRIDE``), so a folder is made unwritable
by the file system itself: ``chattr -R +i`` (immutable: ``EPERM``, for root too) or a
read-only bind mount over it (``EROFS``). The tmpfs itself cannot be remounted read-only
while an engine holds its writer lock open for writing (``EBUSY``); a bind mount made after
the lock was taken has no writers of its own.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["fill", "immutable", "read_only_mount", "small_disk"]

DISK_MB = 32


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=30)


def _check(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stderr


@contextmanager
def small_disk(folder: Path) -> Iterator[Path]:
    """A 32 MB tmpfs of its own under ``folder`` (unmounted afterwards); skips the test
    when it cannot be mounted (not root, no mount permission), saying why."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs the suite as root)")
    disk = folder / "disk"
    disk.mkdir()
    mounted = _run("mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(disk))
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()})")
    try:
        yield disk
    finally:
        if shutil.which("chattr") is not None:  # a test that failed half-way
            _run("chattr", "-R", "-i", str(disk))
        # Lazily: with a bind mount still inside it, if a test failed half-way.
        _run("umount", "-l", str(disk))


def fill(disk: Path) -> Callable[[], None]:
    """Fill ``disk`` to the last byte; returns what frees it again."""
    filler = disk / "filler"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 4096, 1):  # big blocks, then what is left of the last page
            block = b"\xa5" * size
            while True:
                try:
                    os.write(descriptor, block)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(descriptor)
    return filler.unlink


def immutable(folder: Path) -> Callable[[], None]:
    """``chattr -R +i`` on ``folder``; returns what undoes it. Skips where it cannot."""
    if shutil.which("chattr") is None:
        pytest.skip("no chattr here (e2fsprogs)")
    made = _run("chattr", "-R", "+i", str(folder))
    if made.returncode:
        pytest.skip(f"chattr +i is not supported here ({made.stderr.strip()})")
    return lambda: _check(_run("chattr", "-R", "-i", str(folder)))


def read_only_mount(folder: Path) -> Callable[[], None]:
    """``folder`` bind-mounted read-only over itself; returns what unmounts it."""
    _check(_run("mount", "--bind", str(folder), str(folder)))
    _check(_run("mount", "-o", "remount,bind,ro", str(folder)))
    # Lazily: a read in flight may hold a file open through the bind mount.
    return lambda: _check(_run("umount", "-l", str(folder)))
