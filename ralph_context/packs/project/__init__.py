"""Project memory: projects, their cycles of work, learnings and decisions, kept across
sessions and importable from a Project Studio database (``studio.py``).

``store.py`` holds the tables and their reads, ``writes.py`` the captures and project updates
(both blocking, run inside the storage actor), ``memory.py`` the argument checks and engine
calls, ``tools.py`` the MCP tools, ``schemas.py`` what they take and return.
"""
