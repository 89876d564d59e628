"""LongMemEval's candidate pools for the fit, read question by question into one file.

``bench retrieval`` on a LongMemEval file saves the same pools, but only at the end of its
run; with the quality model a 70-question fill is longer than a working session on two
cores (~35,000 turns at a few long texts a second). This reader writes the file after every
question and, run again on the same file, reads only the questions it lacks, so the fill
can be spread over several runs. Each question's haystack is filled as ``bench retrieval``
fills it (``longmemeval_store.fill_store``) in a fresh store, deleted after its pool is read.

Usage, with ``RALPH_CONTEXT_CONFIG`` naming the model's ``ralph.yaml``::

    python -m benchmarks.retrieval.longmemeval_pools \\
        --data ../shared/datasets/longmemeval/longmemeval_s_dev70.json.gz \\
        --out benchmarks/retrieval/results-issue61/mpnet/longmemeval_pools.pkl

then ``python -m benchmarks.retrieval.fit ... --add-pools <that file>``.
"""

from __future__ import annotations

import argparse
import os
import pickle
import tempfile
import time
from pathlib import Path

import anyio

from benchmarks.retrieval.longmemeval import load_questions
from benchmarks.retrieval.longmemeval_store import fill_store
from benchmarks.retrieval.pools import Pool, longmemeval_pool
from ralph_context import Settings
from ralph_context.embeddings.local import load_embedder

__all__ = ["main", "read_saved", "save"]


def read_saved(path: Path) -> list[Pool]:
    """The pools already in ``path`` (none if it does not exist yet)."""
    if not path.exists():
        return []
    pools = pickle.loads(path.read_bytes())
    if not isinstance(pools, list) or not all(isinstance(p, Pool) for p in pools):
        raise SystemExit(f"--out: {path} holds no list of pools")
    return pools


def save(path: Path, pools: list[Pool]) -> None:
    """Write ``pools`` to ``path`` whole or not at all (a killed run keeps the last file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(pickle.dumps(pools))
    os.replace(partial, path)


async def _read(data: Path, out: Path, questions: int | None) -> None:
    pools = read_saved(out)
    done = {p.group for p in pools}
    model = load_embedder(Settings.load(None).embeddings)
    chosen = load_questions(data)[:questions]
    print(f"pools: {len(done)} of {len(chosen)} questions already in {out}", flush=True)
    for index, question in enumerate(chosen):
        if question.question_id in done:
            continue
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="ralph-lme-pools-") as tmp:
            filled = await fill_store(question, Path(tmp) / "store", model)
            pools.append(await longmemeval_pool(question, filled, model))
        save(out, pools)
        seconds = time.perf_counter() - started
        print(
            f"pools: question {index + 1} ({len(filled.turns)} turns) in {seconds:.0f} s; "
            f"{len(pools)} saved",
            flush=True,
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="LongMemEval JSON (dev subset)")
    parser.add_argument("--out", type=Path, required=True, help="the pools file (resumed)")
    parser.add_argument("--questions", type=int, help="only its first N questions")
    args = parser.parse_args(argv)
    anyio.run(_read, args.data, args.out, args.questions)


if __name__ == "__main__":
    main()
