"""Memory wired into the coding agents people run: Claude Code and Codex.

``setup`` plans the project files ``init --agent`` writes (``json_settings`` and ``jsonedit``
for the JSON ones, byte-preserving; ``codex_toml`` for Codex's ``config.toml``; ``files``
shows or applies the plan); ``hook`` is the command the agents' hooks run, and ``ralph``
decides which memory Ralph v2's own hook injects instead inside its iterations.
"""
