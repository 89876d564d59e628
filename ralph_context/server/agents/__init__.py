"""The server's side of the Claude Code and Codex hooks: a route that takes a hook's
payload (``route``), what each event does with the engine (``events``, with ``capture``,
``sessions`` and ``brief``), and the project's shared server that the first hook starts
(``project``: where it is advertised; ``daemon``: its life).

The hook process itself (``ralph_context.integrations.agents.hook``) imports ``project`` only.
"""
