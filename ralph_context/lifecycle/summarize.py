"""Extractive summaries: keep the sentences closest to the text's own centre.

Used when no language model is configured. A text's sentence embeddings are averaged; the
sentences most similar to that centroid say what the text is mostly about. They are kept in
their original order so the summary still reads as prose (or as a log excerpt).
"""

from __future__ import annotations

import math
import re

import numpy as np

from ralph_context.embeddings.local import Vectors

__all__ = ["MAX_SUMMARY_CHARS", "pick_central", "sentences", "worth_summarizing"]

# Sentence ends, or line breaks (logs, stack traces and lists have no full stops).
_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
MAX_SUMMARY_CHARS = 600
MAX_SENTENCES = 3
# A text this short is already a summary.
MIN_CHARS = 300


def sentences(text: str) -> list[str]:
    """The text's sentences (or lines), stripped, empty ones dropped."""
    return [part.strip() for part in _SPLIT.split(text) if part and part.strip()]


def worth_summarizing(text: str) -> bool:
    """True when a summary would be meaningfully shorter than the text."""
    return len(text) > MIN_CHARS and len(sentences(text)) > 1


def pick_central(parts: list[str], vectors: Vectors | None) -> str:
    """The most central sentences, in their original order, within MAX_SUMMARY_CHARS.

    Without vectors (the model is down) the first sentences are kept: openings usually
    state what a text is about.
    """
    keep = min(MAX_SENTENCES, max(1, math.ceil(len(parts) / 3)))
    if vectors is None or len(parts) <= keep:
        order = list(range(len(parts)))
    else:
        centre = vectors.mean(axis=0)
        centre = centre / (np.linalg.norm(centre) or 1.0)
        order = [int(i) for i in np.argsort(-(vectors @ centre), kind="stable")]
    chosen = sorted(order[:keep])
    summary = " ".join(parts[i] for i in chosen)
    if len(summary) > MAX_SUMMARY_CHARS:
        summary = summary[: MAX_SUMMARY_CHARS - 1].rstrip() + "…"
    return summary
