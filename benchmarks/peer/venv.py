"""The peer's own virtual environment: mcp-server-qdrant, pinned, from the package index.

Its dependencies (fastmcp 2.7, mcp 1.x, pydantic < 2.12, qdrant-client) clash with ours, so
it never shares our venv. Made once and reused: a later run only checks the installed
version, and reinstalls the pin in place when it differs.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ralph_context.config.section import xdg

__all__ = ["PACKAGE", "VERSION", "PeerInstall", "PeerInstallError", "default_venv", "ensure_venv"]

PACKAGE = "mcp-server-qdrant"
VERSION = "0.8.1"
# Resolving and installing ~60 packages took 47 s here; a slow mirror may take minutes.
_INSTALL_TIMEOUT = 900.0
_VERSION_PROBE = (
    "import importlib.metadata as m, sys\n"
    "try:\n"
    "    print(m.version(sys.argv[1]))\n"
    "except m.PackageNotFoundError:\n"
    "    print('')\n"
)


class PeerInstallError(RuntimeError):
    """The peer's venv could not be made or the pinned package not installed."""


@dataclass(frozen=True)
class PeerInstall:
    """An installed peer: its interpreter and the console script that serves MCP on stdio."""

    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def server(self) -> Path:
        return self.venv / "bin" / PACKAGE


def default_venv() -> Path:
    """``$XDG_CACHE_HOME/ralph-context/peer-venv`` (``~/.cache`` without the variable)."""
    return xdg("XDG_CACHE_HOME", ".cache") / "ralph-context" / "peer-venv"


def installed_version(venv: Path) -> str | None:
    """The peer's version installed in ``venv``; ``None`` without a venv or the package."""
    python = PeerInstall(venv).python
    if not python.is_file():
        return None
    probe = subprocess.run(
        [str(python), "-c", _VERSION_PROBE, PACKAGE],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    if probe.returncode != 0:
        return None
    return probe.stdout.strip() or None


def ensure_venv(venv: Path, progress: Callable[[str], None] = print) -> PeerInstall:
    """The peer installed in ``venv``: reused when the pinned version is there, else the
    venv is made (if missing) and the pin installed with pip from the configured index.

    Raises:
        PeerInstallError: venv or pip failed (the message ends with pip's last lines).
    """
    install = PeerInstall(venv)
    if installed_version(venv) == VERSION and install.server.is_file():
        progress(f"peer: {PACKAGE} {VERSION} in {venv} (reused)")
        return install
    if not install.python.is_file():
        progress(f"peer: making a venv in {venv}")
        _run([sys.executable, "-m", "venv", str(venv)], "python -m venv")
    progress(f"peer: installing {PACKAGE}=={VERSION} into {venv} (a minute or more)")
    _run(
        [
            str(install.python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            f"{PACKAGE}=={VERSION}",
        ],
        "pip install",
    )
    if installed_version(venv) != VERSION or not install.server.is_file():
        raise PeerInstallError(f"{PACKAGE} {VERSION} is still not installed in {venv}")
    return install


def _run(argv: list[str], what: str) -> None:
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, check=False, timeout=_INSTALL_TIMEOUT
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PeerInstallError(f"{what} failed: {exc}") from exc
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-10:])
        raise PeerInstallError(f"{what} failed ({done.returncode}):\n{tail}")
