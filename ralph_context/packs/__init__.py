"""Tool packs: groups of MCP tools from related specs, served by the same server and engine.

Each pack keeps its own LanceDB tables in the engine's store (``storage/table/pack_space.py``) and
registers its tools only when ``ralph.yaml`` names it (``packs: [prompts, project]``,
``config/packs.py``): every tool listed costs the client's model tokens on every request.
A pack's tools are thin adapters like the context tools: validate, call the pack's table
functions through ``Engine.in_packs``, shape the answer.

``PACK_TOOLS`` names each pack's tools, so a server that does not serve a pack can tell a
client calling one of them which pack to name; ``curation``'s are the server's own context
tools, off the default face (``server/curation.py``). A test checks the names against what
each pack registers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ralph_context.config import Settings
from ralph_context.config.packs import PackName

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from ralph_context.packs.toolkit import EngineHolder

__all__ = ["INFERENCE_TOOLS", "PACK_TOOLS", "has_model_server", "register_packs"]

# The evaluation tools that ask a language model: served only with a server to ask.
INFERENCE_TOOLS = ("list_models", "complete", "react_step", "judge", "generate_variants")
PACK_TOOLS: dict[PackName, tuple[str, ...]] = {
    "prompts": (
        "retrieve_prompts",
        "record_feedback",
        "suggest_improvements",
        "get_analytics",
        "get_prompt_session",
    ),
    "project": (
        "query_learnings",
        "get_learning",
        "list_tags",
        "get_project_context",
        "get_cycle_intent",
        "capture_learning",
        "capture_decision",
        "update_project_state",
    ),
    "evaluation": (
        "calculate_drift",
        "analyze_variants",
        "analyze_trajectory",
        "compare_trajectories",
        *INFERENCE_TOOLS,
    ),
    "curation": ("get_skills", "summarize_old_context", "prune_low_value_context"),
}


def has_model_server(settings: Settings) -> bool:
    """Whether ``inference`` has a language model server: configured under
    ``inference.servers`` or registered from the environment (``register_from_env``).

    Raises:
        ConfigError: ``LMSTUDIO_SERVERS`` holds something that is not an http(s) URL.
    """
    return bool(settings.inference.resolved_servers())


def register_packs(server: MCPServer, holder: EngineHolder) -> list[PackName]:
    """Register the tools of every pack the settings name, but ``curation`` (the server's
    own); returns the packs registered. The evaluation pack's language model tools only
    with a model server (``has_model_server``).

    Raises:
        ConfigError: ``LMSTUDIO_SERVERS`` holds something that is not an http(s) URL.
    """
    served = holder.settings.packs.served()
    registered: list[PackName] = []
    if "prompts" in served:
        from ralph_context.packs.prompts.tools import register_prompt_learning

        register_prompt_learning(server, holder)
        registered.append("prompts")
    if "project" in served:
        from ralph_context.packs.project.tools import register_project_memory

        register_project_memory(server, holder)
        registered.append("project")
    if "evaluation" in served:
        from ralph_context.packs.evaluation.semantic_tools import register_semantic_tools

        register_semantic_tools(server, holder)
        if has_model_server(holder.settings):
            from ralph_context.packs.evaluation.llm_tools import register_llm_tools

            register_llm_tools(server, holder)
        registered.append("evaluation")
    return registered
