"""Ralph v2 (the Rust orchestrator): its files, read and written as Ralph does.

Ralph v2 has no Python API. It runs lifecycle hooks (commands fed a JSON payload) and
injects ``.ralph/agent/memories.md`` into every prompt; this package speaks those
contracts: the memories file (``memories``).
"""
