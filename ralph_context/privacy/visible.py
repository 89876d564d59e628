"""Text a person sees as a model reads it: no invisible or terminal-acting characters.

Stored text is pushed into prompts and shown on terminals and in the console. Characters a
reviewer cannot see change what a model reads without anyone noticing: zero-width
characters split or hide words, bidi overrides (U+202E) reorder a line on screen
("Trojan Source"), Unicode tag characters (U+E0000-E007F) carry a whole hidden
instruction that models read ("ASCII smuggling"), variation selectors can do the same
after any character, and ESC/OSC sequences and BEL act on the terminal that prints them.
:func:`visible` removes them all (format characters, controls but tab and newline,
private bidi marks), and turns every line break a program may honour (``\\r``, U+0085,
U+2028, U+2029) into ``\\n``, so what a renderer counts as a line is a line everywhere.

It runs at capture, in the same pass as redaction (``Redactor.text``), and again at render
for what was stored before it existed. It only removes: the visible text is unchanged.
"""

from __future__ import annotations

import re

__all__ = ["REMOVED", "visible"]

# Line breaks that some reader honours: each becomes "\n" (CRLF as one).
_BREAKS = re.compile("\r\n|[\r\x85\u2028\u2029\x0b\x0c]")


# What :func:`visible` drops, as code point ranges: every control (Cc) but tab and newline,
# every format character (Cf: zero-width, bidi embeddings/overrides/isolates and marks, the
# word joiner, the BOM, tag characters, invisible operators, the soft hyphen, interlinear
# annotation), variation selectors (invisible selectors of a glyph variant, usable to
# smuggle text after any character), and the fillers that render as nothing (Hangul
# fillers, the combining grapheme joiner, Khmer inherent vowels, the blank braille cell).
# Written out, not derived at import (deriving costs a hook process ~130 ms); a test
# checks it still covers Unicode's Cc and Cf as this Python knows them.
REMOVED: tuple[tuple[int, int], ...] = (
    (0x0000, 0x0008), (0x000B, 0x001F), (0x007F, 0x009F), (0x00AD, 0x00AD), (0x034F, 0x034F),
    (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891),
    (0x08E2, 0x08E2), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180E, 0x180E), (0x200B, 0x200F),
    (0x202A, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F), (0x2800, 0x2800), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD),
    (0x110CD, 0x110CD), (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001), (0xE0020, 0xE007F), (0xE0100, 0xE01EF),
)  # fmt: skip


def _character_class(ranges: tuple[tuple[int, int], ...]) -> str:
    parts = (
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
        for a, b in ranges
    )
    return "[" + "".join(parts) + "]"


# ESC sequences are dropped whole (CSI colours and cursor moves, OSC titles and links up to
# their BEL or ST), so no "[31m" residue is left; then every remaining removable character.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]")
_INVISIBLE = re.compile(_character_class(REMOVED))


def visible(text: str) -> str:
    """``text`` without invisible, bidi, control and terminal characters (tab and newline
    kept; every other line break made ``\\n``). The same object when nothing changes."""
    if text.isascii() and text.isprintable():
        return text  # the common case: plain printable ASCII, nothing to scan
    cleaned = _INVISIBLE.sub("", _BREAKS.sub("\n", _ESCAPES.sub("", text)))
    return text if cleaned == text else cleaned
