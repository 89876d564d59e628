"""The paraphrase evaluation on a slice of the set, with the real model and LanceDB."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.retrieval.paraphrase_data import STORES
from benchmarks.retrieval.paraphrase_run import (
    MODES,
    evaluate_paraphrases,
    paraphrase_markdown,
)
from ralph_context.embeddings.local import LocalEmbedder

# The benchmark runs where `python -m` runs it, on anyio.run's asyncio; the engine's own
# tests cover trio.
pytestmark = pytest.mark.parametrize("anyio_backend", ["asyncio"])


@pytest.mark.model
async def test_a_slice_of_the_first_project_is_graded_in_every_mode(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    ticks: list[None] = []
    results = await evaluate_paraphrases(
        model=embedder,
        workdir=tmp_path,
        tick=lambda: ticks.append(None),
        stores=STORES[:1],
        limit=6,
    )
    assert (results["answerable"], results["absent"]) == (6, 5) and len(ticks) == 11
    assert results["projects"] == ["orders-api"] and set(results["modes"]) == set(MODES)
    for mode, row in results["modes"].items():
        assert set(row) == {"top1", "top3", "top5", "mrr", "empty"}, mode
        assert all(0 <= value <= 1 for value in row.values()), mode
        if mode in ("default", "served"):
            continue  # asked once per k: each k its own candidate pool, so no order between them
        assert row["top1"] <= row["top3"] <= row["top5"], mode
        # Every hit in the top 5 counts at most 1, every other at most 1/6.
        assert row["top1"] <= row["mrr"] <= row["top5"] + (1 - row["top5"]) / 6, mode
    for kind in ("answerable", "absent"):
        returned = results["returned_at_10"][kind]
        assert 0 <= returned["mean_items"] <= 10 and 0 <= returned["share_empty"] <= 1
    assert set(results["by_project"]["default"]) == {"orders-api"}
    rows = results["queries"]
    assert [bool(r["targets"]) for r in rows] == [True] * 6 + [False] * 5
    assert all(set(r["rank"]) == set(MODES) for r in rows[:6])
    # A sanity check of the data, not of the engine: the target is within reach by meaning.
    assert results["modes"]["cosine"]["top5"] > 0.5
    text = paraphrase_markdown(results)
    assert "| mode | top-1 | top-3 | top-5 | MRR@10 | empty |" in text
    assert "| absent |" in text and "| orders-api |" in text
