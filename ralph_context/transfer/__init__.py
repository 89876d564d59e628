"""Whole-store jobs the CLI runs over an engine: export and import (``export_import.py``:
a store as JSON lines) and the redaction pass (``redact.py``: the secrets taken out of what a
store already holds)."""
