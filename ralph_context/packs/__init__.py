"""Tool packs: groups of MCP tools from related specs, served by the same server and engine.

Each pack keeps its own LanceDB tables in the engine's store (``storage/pack_space.py``) and
registers its tools when its switch under ``packs:`` in ``ralph.yaml`` is on (all are by
default). A pack's tools are thin adapters like the context tools: validate, call the pack's
table functions through ``Engine.in_packs``, shape the answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from ralph_context.packs.toolkit import EngineHolder

__all__ = ["register_packs"]


def register_packs(server: MCPServer, holder: EngineHolder) -> list[str]:
    """Register every enabled pack's tools; returns the names of the packs registered."""
    packs = holder.settings.packs
    registered: list[str] = []
    if packs.prompt_learning.enabled:
        from ralph_context.packs.prompts.tools import register_prompt_learning

        register_prompt_learning(server, holder)
        registered.append("prompt_learning")
    if packs.project.enabled:
        from ralph_context.packs.project.tools import register_project_memory

        register_project_memory(server, holder)
        registered.append("project")
    if packs.evaluation.enabled:
        from ralph_context.packs.evaluation.llm_tools import register_llm_tools
        from ralph_context.packs.evaluation.semantic_tools import register_semantic_tools

        register_semantic_tools(server, holder)
        register_llm_tools(server, holder)
        registered.append("evaluation")
    return registered
