"""Each embedding model's own relevance constants: a cosine's scale is its model's.

MiniLM puts a question asked in other words than its answer at a cosine of 0.25-0.5 and
unrelated sentences at 0.0-0.15; another model spreads them otherwise, so the logistic
centre of cosine's evidence, BM25's share of the match, the similarity gate and the
relevance cut are fitted per model (``python -m benchmarks.retrieval.fit`` with the model
configured; held out by conversation and project) and applied when ``embeddings.model``
names it. A key the configuration sets to a value of its own wins; a model not listed here
gets the defaults, which are all-MiniLM-L6-v2's.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel

from ralph_context.config.embeddings import DEFAULT_MODEL
from ralph_context.config.retrieval import RetrievalSettings, ScoringSettings

__all__ = ["FITTED", "RELEVANCE", "model_constants", "with_model_constants"]

# The keys a fit chooses, per section: what RELEVANCE may set.
FITTED: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "scoring": (
            "semantic_midpoint",
            "semantic_closeness",
            "lexical_knee",
            "lexical_knee_per_word",
            "lexical_weight",
            "neighbour_share",
        ),
        "retrieval": ("min_similarity", "min_relevance_score", "min_relative_score"),
    }
)

# Fitted constants of each model other than the default (whose are the fields' defaults).
RELEVANCE: Mapping[str, Mapping[str, Mapping[str, float]]] = MappingProxyType(
    {
        # Issue 61: chosen on all of LoCoMo dev, the loop scenarios and the paraphrase set
        # (benchmarks/retrieval/results-issue61/mpnet/fit.json); held out by conversation and
        # project, LoCoMo recall@10 0.764 (MiniLM's procedure 0.718), paraphrase top-1 0.453
        # (0.383). Its cosines run higher than MiniLM's: even odds at 0.35, not 0.3.
        "all-mpnet-base-v2": {
            "scoring": {
                "semantic_midpoint": 0.35,
                "semantic_closeness": 0.02,
                "lexical_knee": 1.0,
                "lexical_knee_per_word": 0.6,
                "lexical_weight": 0.6,
                "neighbour_share": 0.5,
            },
            "retrieval": {
                "min_similarity": 0.15,
                "min_relevance_score": 0.08,
                "min_relative_score": 0.2,
            },
        },
    }
)


def model_constants(model: str) -> dict[str, dict[str, float]]:
    """Every fitted key's value for ``model``: its own where fitted, else the default."""
    defaults: dict[str, BaseModel] = {
        "scoring": ScoringSettings(),
        "retrieval": RetrievalSettings(),
    }
    own = RELEVANCE.get(model, {})
    return {
        section: {
            key: float(own.get(section, {}).get(key, getattr(defaults[section], key)))
            for key in keys
        }
        for section, keys in FITTED.items()
    }


def with_model_constants(data: dict[str, Any]) -> dict[str, Any]:
    """Settings' input with the named model's constants where it leaves a fitted key at
    its default (a section given as a built object is taken whole, as written).

    At its default, not absent: the environment's source hands every section over whole,
    defaults included, whenever one variable is set; so a key set to the default model's
    own value takes the named model's.
    """
    embeddings = data.get("embeddings")
    if isinstance(embeddings, BaseModel):
        model = str(getattr(embeddings, "model", DEFAULT_MODEL))
    elif isinstance(embeddings, dict):
        model = str(embeddings.get("model", DEFAULT_MODEL))
    else:
        model = DEFAULT_MODEL
    if not RELEVANCE.get(model):
        return data
    merged = dict(data)
    defaults = model_constants(DEFAULT_MODEL)
    for section, values in model_constants(model).items():
        given = merged.get(section)
        if isinstance(given, BaseModel):
            continue
        given = dict(given) if isinstance(given, dict) else {}
        for key, value in values.items():
            if key not in given or given[key] == defaults[section][key]:
                given[key] = value
        merged[section] = given
    return merged
