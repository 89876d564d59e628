"""One renderer for what a model reads: every face's text of stored memory (``faces``), the
attribution beside each item (``notes``), and the rules that keep stored text data
(``text``). Adapters call it; none formats stored content itself."""

from ralph_context.rendering.faces import (
    CONTEXT_HEADING,
    HEADER,
    MAX_LINE_CHARS,
    NO_RESULTS,
    Entry,
    Section,
    blocks,
    context_section,
    memory_entry,
    pushed,
    search_message,
    tool_text,
)
from ralph_context.rendering.notes import Note, age, attribution, note_of, who
from ralph_context.rendering.text import FOLD, inert, inert_json, label, one_line

__all__ = [
    "CONTEXT_HEADING",
    "FOLD",
    "HEADER",
    "MAX_LINE_CHARS",
    "NO_RESULTS",
    "Entry",
    "Note",
    "Section",
    "age",
    "attribution",
    "blocks",
    "context_section",
    "inert",
    "inert_json",
    "label",
    "memory_entry",
    "note_of",
    "one_line",
    "pushed",
    "search_message",
    "tool_text",
    "who",
]
