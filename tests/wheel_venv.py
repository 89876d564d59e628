"""A venv outside the repository holding the built wheel and its declared dependencies only.

What a user gets from ``pipx install .`` or ``uv tool install .``: the wheel, what its
metadata requires, and no source tree. Installing those dependencies from the registry costs
~20 s and ~900 MB per run even with a warm cache, so the venv links them instead from the
test interpreter's own environment, file by file, as their RECORDs list them.

Why not a ``.pth`` file naming this venv's site-packages (one line, same speed)? It would
show the wheel everything installed here: pytest, mypy, matplotlib, the Ralph hook's
distribution, pip. An import the wheel does not declare would pass. Linked file by file, the
new venv holds the closure of the wheel's ``Requires-Dist`` (markers evaluated, extras
followed) and nothing else, like a tool venv; the editable install's finder (a ``.pth`` in
this venv) is never linked, and ``ralph_context`` comes from the wheel alone. Like a
``uv tool`` venv, it has no pip.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from email.parser import HeaderParser
from importlib import metadata
from pathlib import Path, PurePosixPath

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

__all__ = ["REPO", "build_wheel", "clean_environment", "make_venv", "requirements_of"]

REPO = Path(__file__).resolve().parent.parent

# Variables that would let the venv's Python see another tree than its own.
_LEAKS = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "VIRTUAL_ENV")


_PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check"]


def clean_environment(base: dict[str, str]) -> dict[str, str]:
    """``base`` without what points a Python at packages outside its venv."""
    return {key: value for key, value in base.items() if key not in _LEAKS}


def _run(command: list[str]) -> str:
    """Run ``command`` (environment cleaned) to completion; its stdout, else an
    AssertionError carrying its stderr."""
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env=clean_environment(dict(os.environ)),
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"{command} exited {done.returncode}: {done.stderr}")
    return done.stdout


def build_wheel(dest: Path) -> Path:
    """The project's wheel, built by pip (hatchling, in pip's isolated build env) into
    ``dest``."""
    _run([*_PIP, "wheel", "--no-deps", "--quiet", "-w", str(dest), str(REPO)])
    (wheel,) = dest.glob("ralph_context-*.whl")
    return wheel


def requirements_of(wheel: Path) -> list[Requirement]:
    """The wheel's own ``Requires-Dist`` lines, read from its METADATA."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = (n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        headers = HeaderParser().parsestr(archive.read(name).decode("utf-8"))
    return [Requirement(line) for line in headers.get_all("Requires-Dist") or []]


def make_venv(root: Path, wheel: Path) -> Path:
    """A venv at ``root`` with ``wheel`` installed by pip and its dependencies linked;
    returns its ``bin`` folder.

    Raises:
        AssertionError: A step failed, or a declared dependency is not installed here or
            has no RECORD.
    """
    _run([sys.executable, "-m", "venv", "--without-pip", str(root)])
    python = root / "bin" / "python"
    # The wheel goes in as a user's installer puts it: by pip, with its console script.
    _run([*_PIP, "--python", str(python), "install", "--quiet", "--no-deps", str(wheel)])
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    for dist in _closure(requirements_of(wheel)):
        _link(dist, Path(purelib.strip()))
    return root / "bin"


def _closure(requirements: list[Requirement]) -> list[metadata.Distribution]:
    """The installed distributions ``requirements`` need here, transitively, extras
    followed (``uvicorn[standard]`` brings what that extra lists)."""
    found: dict[str, metadata.Distribution] = {}
    followed: set[tuple[str, str]] = set()  # (distribution, extra) already expanded
    pending = [(req, "") for req in requirements]
    while pending:
        req, extra = pending.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(req.name)
        if name not in found:
            try:
                found[name] = metadata.distribution(req.name)
            except metadata.PackageNotFoundError:
                raise AssertionError(
                    f"the wheel needs {req}, which is not installed here"
                ) from None
        for wanted in ("", *req.extras):
            if (name, wanted) not in followed:
                followed.add((name, wanted))
                lines = found[name].requires or []
                pending.extend((Requirement(line), wanted) for line in lines)
    return list(found.values())


def _link(dist: metadata.Distribution, purelib: Path) -> None:
    """Symlink every file ``dist`` installed under site-packages into ``purelib``."""
    files = dist.files
    if files is None:
        raise AssertionError(f"{dist.metadata['Name']} has no RECORD to link it by")
    for file in files:
        if ".." in PurePosixPath(file).parts:  # scripts, headers, data outside site-packages
            continue
        source = Path(str(dist.locate_file(file)))
        target = purelib / str(file)
        if source.is_file() and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(source)
