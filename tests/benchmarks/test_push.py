"""The push benchmark's parts: the everyday prompts are data of the stores they name; the
arrays grade exactly what the gate admits; folds never split a store; the fit chooses each
fold's constants without that fold; a replayed pool serves what ``Engine.search`` serves."""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

import benchmarks.push.fit as fit
from benchmarks.push.asked import Asked, Served, load, save
from benchmarks.push.everyday import load_prompts
from benchmarks.push.replay import served_from_pools
from benchmarks.push.table import Table
from benchmarks.retrieval.paraphrase_data import STORES
from benchmarks.retrieval.pools import open_settings
from ralph_context import Engine
from ralph_context.config import EmbeddingsSettings
from ralph_context.config.retrieval import PushGate
from ralph_context.embeddings.local import LocalEmbedder
from ralph_context.retrieval.gate import admits
from tests.benchmarks.test_pools import thread_and_skills_pools
from tests.cli.test_cli import cli


def test_the_everyday_prompts_are_many_of_several_kinds_and_name_notes_of_their_store() -> None:
    prompts = load_prompts()
    keys = {store.project: {item.key for item in store.items} for store in STORES}
    kinds = Counter(p.kind for p in prompts)
    assert len(prompts) >= 50 and len(kinds) >= 5
    assert sum(n for kind, n in kinds.items() if kind != "related") >= 50  # no note answers
    assert len({p.text for p in prompts}) == len(prompts)
    for prompt in prompts:
        assert set(prompt.targets) <= keys[prompt.project], prompt
        assert bool(prompt.targets) == (prompt.kind == "related")


def _asked(kind: str, group: str, answerable: bool, *items: tuple[float, float, bool]) -> Asked:
    served = tuple(Served(0.5, {"semantic": c, "lexical": lex}, rel) for c, lex, rel in items)
    return Asked(kind, group, "c", answerable, f"{kind} {group}", served)


def test_the_table_keeps_exactly_what_the_gate_admits_on_either_tier() -> None:
    rng = random.Random(7)
    asked = [
        Asked(
            "everyday",
            str(q),
            "c",
            bool(q % 2),
            "p",
            tuple(
                Served(
                    0.5,
                    {"lexical": rng.random()} | ({} if j == 0 else {"semantic": rng.random()}),
                    False,
                )
                for j in range(rng.randrange(0, 5))
            ),
        )
        for q in range(40)
    ]
    table = Table(asked)
    items = [item for one in asked for item in one.items]
    for weight, bar, lexical in itertools.product((0.0, 0.5, 1.0), (0.3, 0.8), (0.2, 0.7)):
        gate = PushGate(min_evidence=bar, lexical_weight=weight, min_lexical=lexical)
        assert table.keep(gate).tolist() == [admits(item.breakdown, gate) for item in items]
        text = [admits({"lexical": item.breakdown["lexical"]}, gate) for item in items]
        assert table.keep(gate, text_tier=True).tolist() == text


def test_recall_silence_and_precision_are_counted_per_prompt_and_per_item() -> None:
    asked = [
        _asked("paraphrase", "p", True, (0.9, 0.0, True), (0.9, 0.0, False)),
        _asked("paraphrase", "p", True, (0.1, 0.0, True)),
        _asked("paraphrase", "p", False, (0.9, 0.0, False)),
        _asked("paraphrase", "p", False, (0.2, 0.0, False)),
    ]
    table = Table(asked)
    gate = PushGate(min_evidence=0.5, lexical_weight=0.0, min_lexical=1.0)
    figures = table.figures(table.keep(gate))
    assert (figures.recall, figures.silence) == (0.5, 0.5)
    assert figures.precision == pytest.approx(1 / 3)
    assert (figures.items_answerable, figures.items_no_answer) == (1.0, 0.5)


def test_folds_keep_a_store_whole_and_a_projects_two_kinds_together() -> None:
    asked = [
        _asked(kind, group, True)
        for kind, group in itertools.product(
            ("everyday", "paraphrase", "locomo"), ("a", "b", "c", "d", "e", "f", "g")
        )
    ]
    folds = fit.fold_of(asked)
    seen = {(one.kind, one.group): f for one, f in zip(asked, folds, strict=True)}
    for group in "abcdefg":
        assert seen[("everyday", group)] == seen[("paraphrase", group)]
    assert set(folds) == set(range(fit.FOLDS))


def test_each_fold_is_graded_with_constants_chosen_without_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A separable set: answers at cosine 0.8 among noise at 0.1, nothing at 0.1 otherwise.
    asked = []
    for kind, group in itertools.product(("everyday", "locomo"), "abcdefghij"):
        asked.append(_asked(kind, group, True, (0.8, 0.5, True), (0.1, 0.0, False)))
        asked.append(_asked(kind, group, False, (0.1, 0.1, False)))
    seen: list[set[str]] = []
    choose = fit.choose

    def spy(table: Table, weights: Sequence[float]) -> PushGate:
        seen.append({one.group for one in table.asked})
        return choose(table, weights)

    monkeypatch.setattr(fit, "choose", spy)
    held = fit.cross_validate(asked)
    folds = fit.fold_of(asked)
    for k, groups in enumerate(seen):
        assert not groups & {one.group for one, f in zip(asked, folds, strict=True) if f == k}
    for figures in held.kinds.values():
        assert (figures.recall, figures.silence, figures.precision) == (1.0, 1.0, 1.0)


def test_what_was_served_is_saved_and_read_back(tmp_path: Path) -> None:
    asked = [_asked("locomo", "conv-1", False, (0.4, 0.2, False))]
    save(asked, tmp_path / "asked.jsonl")
    assert load(tmp_path / "asked.jsonl") == asked


QUESTIONS = (
    "which database engine do we run?",
    "how are webhook requests verified?",
    "write a haiku about the sea",
)


@pytest.mark.model
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_replayed_pool_serves_what_the_hooks_search_serves(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    def loader(_: EmbeddingsSettings) -> LocalEmbedder:
        return embedder

    settings = open_settings(tmp_path / "store")
    pools = await thread_and_skills_pools(settings, loader, QUESTIONS, group=lambda q: q)
    served = served_from_pools(
        pools, settings.with_overrides(retrieval={"min_similarity": 0.15}), max_tokens=60
    )
    async with Engine(
        settings.with_overrides(retrieval={"min_similarity": 0.15}), model_loader=loader
    ) as engine:
        for question, replayed in zip(QUESTIONS, served, strict=True):
            found = (await engine.search(question, max_tokens=60)).items
            expected = [
                (
                    round(hit.score, 6),
                    round(hit.breakdown["semantic"], 6),
                    round(hit.breakdown.get("lexical", 0.0), 6),
                )
                for hit in found
            ]
            mine = [
                (
                    round(i.score, 6),
                    round(i.breakdown["semantic"], 6),
                    round(i.breakdown.get("lexical", 0.0), 6),
                )
                for i in replayed.items
            ]
            assert mine == expected
            assert replayed.answerable is False and replayed.category == "abstention"
    assert max(len(replayed.items) for replayed in served) >= 2


HERE = Path(__file__).parent


@pytest.mark.model
def test_bench_push_writes_its_files_with_held_out_figures_per_kind(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = cli(
        "bench",
        "push",
        "--locomo",
        str(HERE / "tiny_locomo.json"),
        "--longmemeval",
        str(HERE / "tiny_longmemeval.json"),
        "--projects",
        "1",
        "--loops",
        "1",
        "--out",
        str(out),
    )
    assert sorted(p.name for p in out.iterdir()) == [
        "asked.jsonl",
        "push.png",
        "results.json",
        "results.md",
    ]
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    everyday = sum(1 for p in load_prompts() if p.project == STORES[0].project)
    assert results["prompts"] == {
        "everyday": everyday,
        "paraphrase": len(STORES[0].queries),
        "locomo": 5,  # four answerable, the adversarial one with no answer
        "longmemeval": 3,
        "loop": results["prompts"]["loop"],  # one A/B task's iterations
    }
    assert results["prompts"]["loop"] >= 1 and results["sources"]["loop_tasks"] == [
        "sfc-exporter-systemd-unit"
    ]
    assert results["held_out"]["longmemeval"]["no_answer"] == 1  # q_pet_abs
    assert results["held_out"]["locomo"]["no_answer"] == 1
    for kind in ("held_out", "before_gate", "held_out_text_tier", "held_out_free_weight"):
        assert set(results[kind]) == set(results["prompts"])
    assert results["before_gate"]["everyday"]["silence"] < 1.0  # what a push carried before
    assert "Push gate, held out" in done.stderr and "| **everyday** |" in done.stderr
    assert results["machine"]["cpus"] >= 1 and len(results["machine"]["load_after"]) == 3
    # Fit and grade again on what was served, without searching.
    again = tmp_path / "again"
    cli("bench", "push", "--reuse", str(out / "asked.jsonl"), "--out", str(again))
    reused = json.loads((again / "results.json").read_text(encoding="utf-8"))
    assert reused["held_out"] == results["held_out"] and reused["chosen"] == results["chosen"]
