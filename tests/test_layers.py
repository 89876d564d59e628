"""The import-linter contracts in pyproject.toml cover the whole package: a module without a
layer is checked by no contract, so a new one must be placed (``lint-imports`` checks the
imports themselves, in .ci/run)."""

from __future__ import annotations

import pkgutil
import tomllib
from pathlib import Path
from typing import Any

import grimp

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


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The package's import circles: each strongly connected set of two or more modules
    (Tarjan's, iterative), every import counted, those only for the type checker too."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            module, following = work[-1]
            step = next(following, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph.find_modules_directly_imported_by(step)))))
                elif step in on_stack:
                    low[module] = min(low[module], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == module:
                        break
                if len(members) > 1:
                    found.append(sorted(members))
    return found


def test_no_module_of_the_package_imports_itself_back_through_others() -> None:
    graph = grimp.build_graph("ralph_context", cache_dir=None)
    assert _circles(graph) == []
