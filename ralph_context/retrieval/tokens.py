"""What an item costs in a client's prompt, estimated without the client's tokenizer.

The consumer's LLM tokenizer is unknown here, and ~4 characters a token is the usual
estimate for English text and code; the token budget (``scoring.fit_budget``) and the
tools' answers count with these.
"""

from __future__ import annotations

import math

from ralph_context.models import ContextItem

__all__ = ["CHARS_PER_TOKEN", "HEADER_TOKENS", "estimate_tokens", "item_tokens"]

# Prompt tokens per character for English text and code.
CHARS_PER_TOKEN = 4
# A block's heading as the renderer writes it, "### [ITERATION] (claude hook, 2 hours
# ago)" (~46 characters), plus the blank line around it; the hooks' "- [type · who ·
# when]" prefix costs about the same.
HEADER_TOKENS = 12


def item_tokens(item: ContextItem) -> int:
    """Tokens an item costs once injected: its text plus the ``### [TYPE]`` header line."""
    return estimate_tokens(item.content) + HEADER_TOKENS


def estimate_tokens(text: str) -> int:
    """Prompt tokens ``text`` will cost, estimated from its length (at least 1)."""
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))
