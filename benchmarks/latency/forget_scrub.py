"""What a forget's scrub costs (``LanceStore.scrub``): a store of ``--items`` items (384-d
random unit vectors, texts of ~240 characters, a fifth archived), one hot and one archived
item forgotten, then the scrub; beside it the reclaim forget used to end with, and a scrub
with nothing deleted. Wall seconds, printed and written as JSON.

    python -m benchmarks.latency.forget_scrub --items 10000 --out results/forget_scrub.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from ralph_context.models import ContextItem, ContextType
from ralph_context.storage.lance_store import LanceStore

__all__ = ["measure"]

_BATCH = 1_000


def _timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return round(time.perf_counter() - started, 3)


def measure(items: int, dimension: int = 384) -> dict[str, float | int]:
    """Build the store, forget one hot and one archived item, and time the parts."""
    root = Path(tempfile.mkdtemp(prefix="forget-scrub-"))
    try:
        store = LanceStore(root, model_id="bench", dimension=dimension)
        rng = np.random.default_rng(0)
        ids: list[str] = []
        for start in range(0, items, _BATCH):
            vectors = rng.standard_normal((_BATCH, dimension)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            pairs = [
                (
                    ContextItem(
                        content=f"note {n} on the build; flaky test {n % 97} again " * 5,
                        content_type=ContextType.OUTPUT,
                        tags=(f"topic-{n % 13}",),
                    ),
                    vectors[n - start],
                )
                for n in range(start, min(start + _BATCH, items))
            ]
            ids += [item.id for item in store.add_items(pairs)]
            store.maintain()
        store.archive_items(ids[: items // 5], datetime.now(UTC))
        store.maintain(reclaim=True)
        result: dict[str, float | int] = {"items": items}
        result["scrub_nothing_deleted_s"] = _timed(store.scrub)
        result["prune_s"] = _timed(lambda: store.prune([ids[-1]], [ids[0]]))
        result["scrub_after_forget_s"] = _timed(store.scrub)
        store.prune([ids[-2]], [])
        result["reclaim_after_forget_s"] = _timed(lambda: store.maintain(reclaim=True))
        return result
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    result = measure(args.items)
    print(json.dumps(result, indent=2))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
