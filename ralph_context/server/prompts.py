"""MCP prompts: the built-in ``Search`` and the custom ones from ``ralph.yaml`` ``prompts:``.

``Search`` wraps retrieved context around the user's query in the shape our users asked for
(the renderer's ``search_message``: stored text stays data inside the frame); the query
appears twice on purpose (once to frame the results, once as the question).
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.base import Prompt, PromptArgument, UserMessage

from ralph_context.config import SEARCH_PROMPT
from ralph_context.packs.toolkit import EngineHolder
from ralph_context.rendering import search_message
from ralph_context.server.custom_prompts import CustomPrompt, resolve_prompts

__all__ = ["register_prompts"]


def register_prompts(server: MCPServer, holder: EngineHolder) -> None:
    """Register ``Search`` and every custom prompt.

    Raises:
        ConfigError: A custom prompt's function reference does not import.
    """

    async def search(query: str) -> list[UserMessage]:
        result = await holder.get().search(query)
        return [UserMessage(search_message(query, result.items))]

    server.add_prompt(
        Prompt(
            name=SEARCH_PROMPT,
            description="Search the context memory and answer the query from the results.",
            arguments=[
                PromptArgument(name="query", description="What to search for", required=True)
            ],
            fn=search,
            title=None,
            context_kwarg=None,
        )
    )
    for custom in resolve_prompts(holder.settings.prompts):
        server.add_prompt(_as_prompt(custom))


def _as_prompt(custom: CustomPrompt) -> Prompt:
    async def render(**arguments: str) -> list[UserMessage]:
        return [UserMessage(await custom.render(arguments))]

    return Prompt(
        name=custom.name,
        description=custom.description,
        arguments=[
            PromptArgument(name=a.name, description=a.description, required=a.required)
            for a in custom.arguments
        ],
        fn=render,
        title=None,
        context_kwarg=None,
    )
