"""Host integrations: the programs ralph-context attaches to, and their files.

``agents/``: the coding agents (Claude Code, Codex): ``init --agent``'s files and the
``hook claude|codex`` command, a thin client of the running server. ``ralph_v2/``: Ralph v2's
hook and memories file. ``mcp_json.py``: the server's entry in a project's ``.mcp.json``.
The Ralph 1.x hook is a plugin of its own (``plugins/ralph``). Kept empty: an agent's hook
process imports ``agents.hook`` through here and must stay light.
"""
