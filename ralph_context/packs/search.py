"""Ranked search over a pack table: vector, full-text, or both (hybrid).

Same recipe as the context store (``retrieval/retriever.py``): a vector half ranked by exact cosine
computed here from the returned vectors, a BM25 half as evidence on its absolute scale
(``candidate_pool.bm25_evidence``, as the store weighs it), and the context store's own
match (``scoring.match_strength``) when both are present.
With no query vector (model unavailable) only the BM25 half runs: degraded, never failing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow.compute as pc
from lancedb.query import MatchQuery

from ralph_context.config import ScoringSettings
from ralph_context.embeddings.local import Vectors
from ralph_context.packs.tables import PackTable
from ralph_context.retrieval.candidate_pool import bm25_evidence
from ralph_context.retrieval.scoring import match_strength
from ralph_context.storage.table.vectors import vector_list, vector_matrix

__all__ = ["Hit", "hybrid_search", "vector_search"]


@dataclass(frozen=True)
class Hit:
    """One matching row (without its vector) and how it matched."""

    row: dict[str, Any]
    similarity: float | None  # cosine to the query; None when only full text ran
    lexical: float  # BM25 evidence (0-1), 0 when the text half did not find it
    match: float


def vector_search(
    table: PackTable, vector: Vectors, *, condition: str | None, limit: int
) -> list[tuple[dict[str, Any], float]]:
    """Nearest rows by cosine, best first; ``condition`` filters before the cut."""
    search = table.table.search(vector.astype(np.float32), vector_column_name="vector")
    search = search.distance_type("cosine").limit(limit)
    if condition:
        search = search.where(condition, prefilter=True)
    result = search.to_arrow()
    result = result.filter(pc.is_valid(result.column("vector")))
    if result.num_rows == 0:
        return []
    similarity = vector_matrix(result.column("vector"), table.dimension) @ vector.astype(np.float32)
    rows = result.drop_columns(["vector", "_distance"]).to_pylist()
    order = np.argsort(-similarity, kind="stable")
    return [(rows[i], float(similarity[i])) for i in order.tolist()]


def text_search(
    table: PackTable, text: str, column: str, *, condition: str | None, limit: int
) -> list[tuple[dict[str, Any], float, Vectors | None]]:
    """BM25 matches on ``column``, best first, with raw scores and vectors."""
    match = MatchQuery(text, column)  # type: ignore[call-arg]
    search = table.table.search(match, query_type="fts").limit(limit)
    if condition:
        search = search.where(condition, prefilter=True)
    result = search.to_arrow()
    vectors = vector_list(result.column("vector"), table.dimension)
    rows = result.drop_columns(["vector"]).to_pylist()
    return [
        (row, float(row.pop("_score")), vector) for row, vector in zip(rows, vectors, strict=True)
    ]


def hybrid_search(
    table: PackTable,
    *,
    text: str,
    column: str,
    vector: Vectors | None,
    condition: str | None,
    limit: int,
    weights: ScoringSettings,
) -> list[Hit]:
    """The ``limit`` best rows by match strength; BM25 alone when ``vector`` is ``None``."""
    pool = limit * 4
    lexical_hits = text_search(table, text, column, condition=condition, limit=pool)
    rows = float(table.table.count_rows()) if lexical_hits else 1.0
    evidence = bm25_evidence([score for _, score, _ in lexical_hits], rows, weights, text)
    lexical = {row["id"]: value for (row, _, _), value in zip(lexical_hits, evidence, strict=True)}
    if vector is None:
        hits = [
            Hit(row, None, lexical[row["id"]], lexical[row["id"]]) for row, _, _ in lexical_hits
        ]
        return hits[:limit]
    found: dict[str, Hit] = {}
    for row, similarity in vector_search(table, vector, condition=condition, limit=pool):
        share = lexical.get(row["id"], 0.0)
        found[row["id"]] = Hit(row, similarity, share, match_strength(similarity, share, weights))
    probe = vector.astype(np.float32)
    for row, _score, row_vector in lexical_hits:
        if row["id"] in found:
            continue
        share = lexical[row["id"]]
        if row_vector is None:
            # Written while no model was loaded: it competes on its words alone.
            found[row["id"]] = Hit(row, None, share, weights.lexical_weight * share)
            continue
        similarity = float(row_vector @ probe)
        found[row["id"]] = Hit(row, similarity, share, match_strength(similarity, share, weights))
    ranked = sorted(found.values(), key=lambda hit: hit.match, reverse=True)
    return ranked[:limit]
