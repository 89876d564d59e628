"""``reindex`` between the two models on a 10k-item store, both ways, timed and checked.

A store of ``--items`` LoCoMo turns (each made distinct by its index) is filled with the
default model, then re-embedded with the quality model (384 -> 768 dimensions) and back,
each through ``reindex_store`` as ``ralph-context reindex`` calls it. After each move: the
store opens with the new model only (the old one is refused), holds every item, every row's
vector is a unit vector of the new dimension, and a sample of items, each asked by its own
text embedded with the new model, comes back first.

    python -m benchmarks.model.reindex --data ../shared/datasets/locomo/locomo_dev.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import lancedb
import numpy as np

from benchmarks.latency.run import load_corpus
from ralph_context.config import EmbeddingsSettings
from ralph_context.embeddings.local import LocalEmbedder, load_embedder
from ralph_context.errors import ModelMismatch
from ralph_context.models import ContextItem, ContextType
from ralph_context.storage.lance_store import LanceStore
from ralph_context.storage.reindex import reindex_store
from ralph_context.storage.table.filters import ItemFilter
from ralph_context.storage.table.schema import ITEMS

__all__ = ["check", "main"]


def check(
    location: Path, model: LocalEmbedder, old: LocalEmbedder, sample: list[str]
) -> dict[str, Any]:
    """What the moved store holds, and whether a sample of its items is found first."""
    try:
        LanceStore(location, model_id=old.model_id, dimension=old.dimension).close()
        refused = False
    except ModelMismatch:
        refused = True
    store = LanceStore(location, model_id=model.model_id, dimension=model.dimension)
    try:
        table = lancedb.connect(str(location)).open_table(ITEMS).to_arrow()
        vectors = np.asarray(table.column("vector").to_pylist(), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1)
        found = 0
        for text, query in zip(sample, model.embed(sample, 32), strict=True):
            hits = store.vector_search(query, 1, ItemFilter())
            found += bool(hits) and hits[0][0].content == text
        return {
            "items": table.num_rows,
            "dimension": int(vectors.shape[1]),
            "unit_vectors": bool(np.allclose(norms, 1.0, atol=1e-3)),
            "old_model_refused": refused,
            "sample": len(sample),
            "sample_found_first": found,
        }
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="LoCoMo JSON")
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--sample", type=int, default=200)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/model/results"))
    args = parser.parse_args()
    turns = load_corpus(args.data).turns
    contents = [f"{turns[i % len(turns)]} (#{i})" for i in range(args.items)]
    small = load_embedder(EmbeddingsSettings())
    large = load_embedder(EmbeddingsSettings(model="all-mpnet-base-v2"))
    rng = np.random.default_rng(0)
    sample = [contents[i] for i in rng.choice(len(contents), args.sample, replace=False)]
    result: dict[str, Any] = {"items": args.items}
    with tempfile.TemporaryDirectory(prefix="ralph-reindex-") as tmp:
        location = Path(tmp) / "store"
        started = time.perf_counter()
        store = LanceStore(location, model_id=small.model_id, dimension=small.dimension)
        for start in range(0, len(contents), 1000):
            chunk = contents[start : start + 1000]
            items = [ContextItem(content=c, content_type=ContextType.OUTPUT) for c in chunk]
            store.add_items(list(zip(items, small.embed(chunk, 32), strict=True)))
        store.close()
        result["fill_s"] = round(time.perf_counter() - started, 1)
        for name, model, old in (("to_mpnet", large, small), ("to_minilm", small, large)):
            started = time.perf_counter()
            moved = reindex_store(location, model, batch_size=32)
            seconds = time.perf_counter() - started
            result[name] = {
                "seconds": round(seconds, 1),
                "items_per_s": round(moved / seconds, 1),
                **check(location, model, old, sample),
            }
            print(json.dumps({name: result[name]}), flush=True)
    load = Path("/proc/loadavg").read_text(encoding="utf-8").split()[:3]
    result["load_after"] = [float(x) for x in load]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "reindex.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
