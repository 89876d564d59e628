"""The MCP server object: the engine's lifetime, readable errors, and registration.

``build_server(holder)`` returns an ``MCPServer`` serving whatever engine the holder carries
(``serve`` starts one per process and shares it with every connection). Tools, resources and
prompts reach it through ``EngineHolder`` (``packs/toolkit.py``, shared with the packs); static
resources get no request context, so a holder is the one way all three can share it.

Errors: the SDK hides the text of any exception it did not expect and shows pydantic's raw
report for bad arguments. ``ContextServer`` turns both into one sentence naming the tool,
the argument, what was wrong and what is allowed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from mcp import MCPError
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.server.mcpserver.resources import ResourceTemplate
from mcp.server.mcpserver.resources.templates import ResourceSecurityError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolResult,
    GetPromptResult,
    InputRequiredResult,
    TextContent,
    ToolAnnotations,
)
from mcp.types import Tool as MCPTool
from pydantic import AnyUrl, ValidationError

from ralph_context import __version__, origin
from ralph_context._logging import audit_logger, ensure_logging
from ralph_context.actors.inference import CONFIGURE_MODEL
from ralph_context.config import EmbeddingsSettings, Settings
from ralph_context.embeddings.local import LocalEmbedder, load_embedder
from ralph_context.engine import Engine
from ralph_context.errors import InvalidInput, RalphContextError
from ralph_context.packs import INFERENCE_TOOLS, PACK_TOOLS, has_model_server, register_packs
from ralph_context.packs.toolkit import EngineHolder
from ralph_context.rendering import inert, inert_json
from ralph_context.server import callers
from ralph_context.server.compact import compact_tool
from ralph_context.server.curation import register_curation
from ralph_context.server.custom_prompts import argument_problem
from ralph_context.server.prompts import register_prompts
from ralph_context.server.resources import register_resources
from ralph_context.server.strict import close_arguments
from ralph_context.server.suggest import (
    needs_model_server,
    unknown_resource,
    unknown_tool,
    unserved_pack,
)
from ralph_context.server.tools import register_tools

__all__ = ["ContextServer", "build_server", "describe_validation", "serving"]

audit_log = audit_logger()

INSTRUCTIONS = (
    "Memory for agent iteration loops. Before an iteration, call get_relevant_context with "
    "what you are about to do; after it, call store_iteration_result (errors are remembered "
    "too). Store lessons with store_context (type skill) and say which retrieved items "
    "helped with mark_useful: feedback changes future rankings."
)
PACK_INSTRUCTIONS = {
    "prompts": " Prompts: retrieve_prompts finds ones that worked; after running one, "
    "record_feedback with its outcome.",
    "project": " Projects: get_project_context at the start of a session; capture_learning and "
    "capture_decision when you learn or decide something worth keeping.",
}


def describe_validation(tool: str, error: ValidationError) -> str:
    """One readable line per bad argument: which, what was wrong, what was given."""
    problems = []
    for detail in error.errors():
        where = ".".join(str(part) for part in detail["loc"]) or "arguments"
        given = detail.get("input")
        shown = "" if detail["type"] == "missing" else f" (got {given!r:.80})"
        problems.append(f"argument {where!r}: {detail['msg']}{shown}")
    return f"{tool}: " + "; ".join(problems)


# Tools whose answer is a language model's own reply the caller asked for, not stored text.
_MODEL_REPLIES = frozenset(INFERENCE_TOOLS)


def _as_data(name: str, result: Any) -> Any:
    """A tool's answer with every stored text in it inert (``rendering``): whatever a
    tool returns of the store (items, skills, iterations, a pack's learnings) is read by a
    model as data, in its text and in its structured content."""
    if not isinstance(result, CallToolResult) or name in _MODEL_REPLIES:
        return result
    content = [
        block.model_copy(update={"text": inert(block.text)})
        if isinstance(block, TextContent)
        else block
        for block in result.content
    ]
    structured = result.structured_content
    update: dict[str, Any] = {"content": content}
    if structured is not None:
        update["structured_content"] = inert_json(structured)
    return result.model_copy(update=update)


class ContextServer(MCPServer):
    """``MCPServer`` with errors a person can act on, an audit line per write, and tool
    listings as small as they can be (``compact``)."""

    namespace = "default"
    # The write tools a read-only server removed: a call to one is told why it is missing.
    hidden_tools: frozenset[str] = frozenset()
    # The tools of packs this server does not serve, each with what would serve it.
    off_face: Mapping[str, str] = {}
    _writes: frozenset[str] | None = None

    async def list_tools(self) -> list[MCPTool]:
        return [compact_tool(tool) for tool in await super().list_tools()]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        if self._tool_manager.get_tool(name) is None:
            known = (tool.name for tool in self._tool_manager.list_tools())
            raise ToolError(
                unknown_tool(name, known, hidden=self.hidden_tools, off_face=self.off_face)
            )
        audited = name in await self.write_tools()
        try:
            recorder = origin.mcp_client(callers.client_name(context))
            with callers.serving(context), origin.recorded_by(recorder):
                result = await super().call_tool(name, arguments, context)
        except Exception as exc:
            if audited:
                _audit(name, self.namespace, context, f"refused: {type(exc).__name__}")
            readable = self._readable(name, exc)
            if readable is exc:
                raise
            raise readable from exc.__cause__
        if audited:
            _audit(name, self.namespace, context, "done")
        return _as_data(name, result)

    async def write_tools(self) -> frozenset[str]:
        """The tools that may change the store (any not annotated read-only): audited,
        and admitted over HTTP apart from the reads (``server.admission``)."""
        if self._writes is None:
            self._writes = frozenset(
                tool.name for tool in await self.list_tools() if _writes(tool.annotations)
            )
        return self._writes

    @staticmethod
    def _readable(name: str, exc: Exception) -> Exception:
        if isinstance(exc, ToolError):
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                return ToolError(describe_validation(name, cause))
            if isinstance(cause, RalphContextError):
                return ToolError(f"{name}: {cause}")
        return exc

    async def read_resource(
        self, uri: AnyUrl | str, context: Context[Any, Any] | None = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        try:
            with callers.serving(context):
                return await super().read_resource(uri, context)
        except ResourceNotFoundError:
            manager = self._resource_manager
            if _served(str(uri), manager.list_templates()):
                raise  # its template's own answer says what is missing (no such item)
            raise ResourceNotFoundError(
                unknown_resource(
                    str(uri),
                    (str(r.uri) for r in manager.list_resources()),
                    (t.uri_template for t in manager.list_templates()),
                )
            ) from None

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        context: Context[Any, Any] | None = None,
    ) -> GetPromptResult | InputRequiredResult:
        known = {prompt.name: prompt for prompt in await self.list_prompts()}
        if name not in known:
            listed = ", ".join(sorted(known)) or "none"
            raise MCPError(INVALID_PARAMS, f"unknown prompt {name!r}; available: {listed}")
        problem = argument_problem(name, known[name].arguments or [], arguments or {})
        if problem is not None:
            raise MCPError(INVALID_PARAMS, problem)
        try:
            return await super().get_prompt(name, arguments, context)
        except MCPError:
            raise
        except Exception as exc:
            cause = _root(exc)
            if isinstance(cause, InvalidInput):
                raise MCPError(INVALID_PARAMS, str(cause)) from exc
            if isinstance(cause, RalphContextError):
                raise MCPError(INTERNAL_ERROR, str(cause)) from exc
            raise


def _served(uri: str, templates: Iterable[ResourceTemplate]) -> bool:
    """Whether one of ``templates`` takes ``uri`` (then a miss is the item's, not the URI's)."""
    for template in templates:
        try:
            if template.matches(uri) is not None:
                return True
        except ResourceSecurityError:
            return False
    return False


def _audit(tool: str, namespace: str, context: Context[Any, Any] | None, outcome: str) -> None:
    """One structured line per write or forget call: who, where, what, how it ended."""
    client = _client(context)
    audit_log.info("audit", tool=tool, namespace=namespace, client=client, outcome=outcome)


def _client(context: Context[Any, Any] | None) -> str:
    """The caller: its token's label over HTTP with tokens, else its address; ``stdio``."""
    request = callers.request_of(context)
    if request is None:
        return "stdio"
    user = getattr(request, "scope", {}).get("user")
    if isinstance(user, AuthenticatedUser):
        return str(user.display_name)
    client = getattr(request, "client", None)
    return str(client.host) if client is not None else "unknown"


def _root(exc: BaseException) -> BaseException:
    """The first error of ours in the chain (the SDK wraps prompt failures)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, RalphContextError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return exc


def build_server(holder: EngineHolder, *, read_only: bool = False) -> ContextServer:
    """The MCP server with the core context tools, the packs ``packs:`` names, every
    resource and prompt registered; requests fail with ``ActorUnavailable`` until
    ``holder.engine`` is set. ``read_only``: only the tools annotated read-only are
    registered (the others do not exist for clients).

    Raises:
        ConfigError: A custom prompt's definition is invalid, or ``LMSTUDIO_SERVERS`` holds
            something that is not a URL. Checked here, before any engine starts, so a typo
            costs no model load.
    """
    ensure_logging()

    served = holder.settings.packs.served()
    instructions = INSTRUCTIONS + "".join(
        text for name, text in PACK_INSTRUCTIONS.items() if name in served
    )
    server = ContextServer(
        "ralph-context", instructions=instructions, version=__version__, log_level="WARNING"
    )
    register_tools(server, holder)
    if "curation" in served:
        register_curation(server, holder)
    register_packs(server, holder)
    server.off_face = _off_face(served, has_model_server(holder.settings))
    close_arguments(server)
    register_resources(server, holder)
    register_prompts(server, holder)
    server.namespace = holder.settings.storage.namespace
    if read_only:
        hidden = [t.name for t in server._tool_manager.list_tools() if _writes(t.annotations)]
        for name in hidden:
            server.remove_tool(name)
        server.hidden_tools = frozenset(hidden)
    return server


@asynccontextmanager
async def serving(
    settings: Settings,
    *,
    read_only: bool = False,
    model_loader: Callable[[EmbeddingsSettings], LocalEmbedder] = load_embedder,
) -> AsyncIterator[tuple[ContextServer, Engine]]:
    """The MCP server for ``settings``' namespace, with its engine running behind it (the
    server is built first, so a bad custom prompt costs no model load).

    Raises:
        ConfigError: A custom prompt's definition is invalid.
        ModelMismatch, StoreLocked: The engine cannot open the store.
    """
    holder = EngineHolder(settings)
    server = build_server(holder, read_only=read_only)
    async with Engine(settings, model_loader=model_loader, read_only=read_only) as engine:
        holder.engine = engine
        yield server, engine


def _off_face(served: frozenset[str], model_server: bool) -> dict[str, str]:
    """The tools of the packs not served (and the language model tools, without a model
    server), each with what a client calling it is told to configure."""
    off: dict[str, str] = {}
    for pack, names in PACK_TOOLS.items():
        for name in names:
            needs_model = name in INFERENCE_TOOLS and not model_server
            if pack not in served:
                off[name] = unserved_pack(name, pack, needs_model=needs_model)
            elif needs_model:
                off[name] = needs_model_server(name, CONFIGURE_MODEL)
    return off


def _writes(annotations: ToolAnnotations | None) -> bool:
    """True for a tool that may change the store: any not annotated read-only."""
    return annotations is None or not annotations.read_only_hint
