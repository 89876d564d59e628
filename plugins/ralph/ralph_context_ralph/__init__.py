"""ralph-context memory for the Ralph orchestrator (1.2.x), attached in-process.

from ralph_context import Engine
from ralph_context_ralph import attach

handle = attach(orchestrator, Engine())   # or ServerSource("http://127.0.0.1:8765/mcp")
orchestrator.run()
handle.detach()
"""

from ralph_context_ralph.hook import Handle, TierRecord, attach
from ralph_context_ralph.sources import EngineSource, ServerSource

__all__ = ["EngineSource", "Handle", "ServerSource", "TierRecord", "attach"]
