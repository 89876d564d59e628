"""The paraphrase set (``paraphrase_data.py``) through the engine: is an item found when it is
asked for in other words, and what comes back when nothing answers?

Each project's store is filled iteration by iteration as an MCP client fills it (the
iteration's items with ``iteration`` set and no ``source``, then its result, so the lifecycle
runs at its defaults), then every query is asked in these modes:

- ``default``: ``Engine.search(query, max_items=k)``, every other argument at its default
  (the score floor and the token budget included): what a client gets;
- ``served``: the same with no score floor and no token limit (the ranking alone);
- ``vector``, ``text``, ``hybrid``: ``Engine.candidates`` halves and their pool ranked by
  match strength, as ``loop_run.py`` reads them;
- ``cosine``: the baseline, a brute-force cosine of the query against every item's content
  with the same model, no engine at all.

``default`` and ``served`` are asked once per k. Over the answerable queries each mode gets
top-1/3/5 (a target among the first k), MRR over the top 10 and ``empty`` (the share of
queries it answered with no item; for ``default``, asked for 10). Absent queries are asked
``default`` at k = 10 only: how many items it returns where none answers, next to how many
it returns for the answerable ones.

Usage: ``python -m benchmarks.retrieval.paraphrase_run --out DIR`` (writes
``paraphrase.json`` and ``paraphrase.md``, prints the markdown).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from benchmarks.retrieval.paraphrase_data import STORES, Query, Store
from benchmarks.settings import store_settings
from ralph_context import Engine, IterationResult, NewItem, Settings
from ralph_context.arguments import MAX_TOKENS
from ralph_context.config import EmbeddingsSettings
from ralph_context.embeddings.local import LocalEmbedder, load_embedder
from ralph_context.retrieval.scoring import match_strength

__all__ = [
    "KS",
    "MODES",
    "asked_queries",
    "evaluate_paraphrases",
    "fill",
    "main",
    "paraphrase_markdown",
]

KS = (1, 3, 5, 10)
MRR_DEPTH = 10
MODES = ("default", "served", "vector", "text", "hybrid", "cosine")
# Candidates per half for the vector/text/hybrid modes: far more than MRR_DEPTH.
_POOL = 50

Tick = Callable[[], None]


async def fill(engine: Engine, store: Store) -> dict[str, str]:
    """Store the project as a loop would, iteration by iteration; returns item id -> key."""
    by_iteration: dict[int, list[NewItem]] = defaultdict(list)
    keys: dict[int, list[str]] = defaultdict(list)
    for item in store.items:
        by_iteration[item.iteration].append(
            NewItem(item.content, item.type, tags=item.tags or None, iteration=item.iteration)
        )
        keys[item.iteration].append(item.key)
    ids: dict[str, str] = {}
    for iteration in range(1, store.last_iteration + 1):
        stored = await engine.store_many(by_iteration.get(iteration, []))
        ids |= {kept.id: key for kept, key in zip(stored, keys[iteration], strict=True)}
        await engine.record_iteration(
            IterationResult(iteration=iteration, success=True, summary=f"iteration {iteration}")
        )
    # The pass the last iteration queued, as a loop would have let it finish (and so that
    # no pass runs while the queries are asked).
    await engine.run_lifecycle()
    return ids


class _Tally:
    """Per mode: top-k hits, reciprocal ranks and empty answers over the answerable queries,
    each tagged with its project."""

    def __init__(self) -> None:
        self.hits: dict[str, dict[int, list[tuple[str, bool]]]] = {
            mode: {k: [] for k in KS} for mode in MODES
        }
        self.ranks: dict[str, list[tuple[str, float]]] = {mode: [] for mode in MODES}
        self.empty: dict[str, list[tuple[str, bool]]] = {mode: [] for mode in MODES}

    def add(
        self, mode: str, project: str, query: Query, rankings: Mapping[int, Sequence[str]]
    ) -> int | None:
        """Grade ``rankings`` (k -> keys, best first; one ranking under every k for a mode
        asked once); returns the target's rank in the top ``MRR_DEPTH``, if there."""
        targets = set(query.targets)
        for k in KS:
            self.hits[mode][k].append((project, bool(targets & set(rankings[k][:k]))))
        deepest = rankings[MRR_DEPTH][:MRR_DEPTH]
        rank = next((r for r, key in enumerate(deepest, 1) if key in targets), None)
        self.ranks[mode].append((project, 1.0 / rank if rank else 0.0))
        self.empty[mode].append((project, not deepest))
        return rank

    def summary(self, mode: str) -> dict[str, Any]:
        row: dict[str, Any] = {f"top{k}": _mean(self.hits[mode][k]) for k in KS if k < MRR_DEPTH}
        row["mrr"] = _mean(self.ranks[mode])
        row["empty"] = _mean(self.empty[mode])
        return row

    def by_project(self, mode: str) -> dict[str, dict[str, float]]:
        projects = dict.fromkeys(p for p, _ in self.ranks[mode])
        return {
            project: {
                f"top{k}": _mean([x for x in self.hits[mode][k] if x[0] == project]) for k in (1, 3)
            }
            | {"mrr": _mean([x for x in self.ranks[mode] if x[0] == project])}
            for project in projects
        }


def _mean(values: Sequence[tuple[str, float] | tuple[str, bool]]) -> float:
    return round(float(np.mean([float(v) for _, v in values])), 4) if values else 0.0


async def evaluate_paraphrases(
    *,
    model: LocalEmbedder,
    workdir: Path,
    tick: Tick,
    stores: Sequence[Store] = STORES,
    limit: int | None = None,
) -> dict[str, Any]:
    """Every mode's top-1/3/5, MRR and empty answers, overall and per project, and what
    ``default`` returns for absent queries; ``limit`` asks at most that many answerable and
    that many absent queries per store (the first in the set's order), for quick runs."""

    def loader(_: EmbeddingsSettings) -> LocalEmbedder:
        return model

    tally = _Tally()
    returned: dict[str, list[int]] = {"answerable": [], "absent": []}
    per_query: list[dict[str, Any]] = []
    for store in stores:
        asked = asked_queries(store, limit)
        settings = store_settings(workdir / store.project, skillbook={"enabled": False})
        weights = settings.scoring
        batch = settings.embeddings.batch_size
        contents = model.embed([item.content for item in store.items], batch)
        async with Engine(settings, model_loader=loader) as engine:
            keys = await fill(engine, store)
            for query in asked:
                if query.absent:
                    default = await _search(engine, keys, query.text, (MRR_DEPTH,))
                    returned["absent"].append(len(default[MRR_DEPTH]))
                    per_query.append(_row(store, query, {}, len(default[MRR_DEPTH])))
                    tick()
                    continue
                default = await _search(engine, keys, query.text, KS)
                served = await _search(engine, keys, query.text, KS, ranking_only=True)
                returned["answerable"].append(len(default[MRR_DEPTH]))
                halves = await engine.candidates(query.text, limit=_POOL)
                pooled = sorted(
                    halves.pool, key=lambda c: -match_strength(c.similarity, c.lexical, weights)
                )
                (probe,) = model.embed([query.text], batch, query=True)
                order = np.argsort(-(contents @ probe), kind="stable")[:MRR_DEPTH]
                once = {
                    "vector": _named(keys, [item.id for item, _ in halves.semantic]),
                    "text": _named(keys, [item.id for item, _ in halves.lexical]),
                    "hybrid": _named(keys, [c.item.id for c in pooled]),
                    "cosine": [store.items[int(i)].key for i in order],
                }
                rankings = {"default": default, "served": served} | {
                    mode: dict.fromkeys(KS, ranking) for mode, ranking in once.items()
                }
                ranks = {
                    mode: tally.add(mode, store.project, query, by_k)
                    for mode, by_k in rankings.items()
                }
                per_query.append(_row(store, query, ranks, len(default[MRR_DEPTH])))
                tick()
    answerable = [q for q in per_query if q["targets"]]
    return {
        "answerable": len(answerable),
        "absent": len(per_query) - len(answerable),
        "projects": [s.project for s in stores],
        "modes": {mode: tally.summary(mode) for mode in MODES},
        "by_project": {mode: tally.by_project(mode) for mode in ("default", "cosine")},
        "returned_at_10": {
            kind: {
                "mean_items": round(float(np.mean(counts)), 2) if counts else 0.0,
                "share_empty": round(float(np.mean([c == 0 for c in counts])), 4)
                if counts
                else 0.0,
            }
            for kind, counts in returned.items()
        },
        "queries": per_query,
    }


async def _search(
    engine: Engine,
    keys: dict[str, str],
    text: str,
    ks: Sequence[int],
    *,
    ranking_only: bool = False,
) -> dict[int, list[str]]:
    """k -> the keys ``Engine.search`` returns for ``max_items=k``: at its defaults, or with
    no score floor and no token limit (``ranking_only``)."""
    found: dict[int, list[str]] = {}
    for k in ks:
        if ranking_only:
            result = await engine.search(text, max_items=k, min_score=0.0, max_tokens=MAX_TOKENS)
        else:
            result = await engine.search(text, max_items=k)
        found[k] = _named(keys, [r.item.id for r in result.items])
    return found


def asked_queries(store: Store, limit: int | None) -> list[Query]:
    answerable = [q for q in store.queries if not q.absent][:limit]
    return answerable + [q for q in store.queries if q.absent][:limit]


def _named(keys: dict[str, str], ids: Sequence[str]) -> list[str]:
    # "?" for an item the set did not plant (none today: an iteration's result with no
    # error stores no item).
    return [keys.get(item_id, "?") for item_id in ids]


def _row(store: Store, query: Query, ranks: dict[str, int | None], items: int) -> dict[str, Any]:
    # Per query, for reading the misses later: the target's rank in each mode (None: not in
    # the top 10) and how many items the default search returned at k = 10.
    return {
        "project": store.project,
        "query": query.text,
        "targets": list(query.targets),
        "rank": ranks,
        "default_items": items,
    }


def paraphrase_markdown(results: dict[str, Any]) -> str:
    """Every mode's scores, what ``default`` returns with and without an answer, and
    ``default`` against the cosine baseline per project."""
    tops = [k for k in KS if k < MRR_DEPTH]
    lines = [
        f"Paraphrase set: {results['answerable']} answerable and {results['absent']} absent "
        f"queries over {len(results['projects'])} projects (no query shares a content word "
        "with its target).",
        "",
        "| mode | " + " | ".join(f"top-{k}" for k in tops) + f" | MRR@{MRR_DEPTH} | empty |",
        "| --- |" + " --- |" * (len(tops) + 2),
    ]
    for mode, row in results["modes"].items():
        cells = [f"{row[f'top{k}']:.3f}" for k in tops] + [f"{row['mrr']:.3f}"]
        lines.append(f"| {mode} | {' | '.join(cells)} | {row['empty']:.3f} |")
    lines += [
        "",
        f"`default` at k = {MRR_DEPTH}, items returned:",
        "",
        "| queries | mean items | share with none |",
        "| --- | --- | --- |",
    ]
    for kind, row in results["returned_at_10"].items():
        lines.append(f"| {kind} | {row['mean_items']:.2f} | {row['share_empty']:.3f} |")
    lines += [
        "",
        "By project:",
        "",
        "| project | default top-1 | default top-3 | default MRR | cosine top-1 | cosine top-3 "
        "| cosine MRR |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    default, cosine = results["by_project"]["default"], results["by_project"]["cosine"]
    for project in default:
        cells = [
            f"{row[name]:.3f}"
            for row in (default[project], cosine[project])
            for name in ("top1", "top3", "mrr")
        ]
        lines.append(f"| {project} | {' | '.join(cells)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the results")
    parser.add_argument(
        "--limit", type=int, default=None, help="answerable and absent queries per project"
    )
    args = parser.parse_args(argv)
    model = load_embedder(Settings.load(None).embeddings)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ralph-paraphrase-") as tmp:
        results = anyio.run(_evaluate, model, Path(tmp), args.limit)
    args.out.mkdir(parents=True, exist_ok=True)
    text = paraphrase_markdown(results)
    (args.out / "paraphrase.json").write_text(json.dumps(results, indent=2) + "\n", "utf-8")
    (args.out / "paraphrase.md").write_text(text, encoding="utf-8")
    print(text)
    print(f"paraphrase: {time.perf_counter() - started:.1f} s", file=sys.stderr)


async def _evaluate(model: LocalEmbedder, workdir: Path, limit: int | None) -> dict[str, Any]:
    return await evaluate_paraphrases(model=model, workdir=workdir, tick=lambda: None, limit=limit)


if __name__ == "__main__":
    main()
