"""The import-linter contracts in pyproject.toml cover the whole package: a module without a
layer is checked by no contract, so a new one must be placed (``lint-imports`` checks the
imports themselves, in .ci/run)."""

from __future__ import annotations

import pkgutil
import tomllib
from pathlib import Path
from typing import Any

import ralph_context
import ralph_context.packs

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _contract(contract_id: str) -> dict[str, Any]:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c["id"] == contract_id)


def _children(package: Any) -> set[str]:
    return {f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__)}


def test_every_module_of_the_package_has_a_layer() -> None:
    layered = {
        name.strip()
        for layer in _contract("layers")["layers"]
        for name in layer.replace(":", "|").split("|")
    }
    assert _children(ralph_context) - layered == set()


def test_every_tool_pack_is_in_the_independence_contract() -> None:
    packs = {m.name for m in pkgutil.iter_modules(ralph_context.packs.__path__) if m.ispkg}
    listed = set(_contract("packs")["modules"])
    assert {f"ralph_context.packs.{name}" for name in packs} == listed
