"""The push gate: an item is pushed when its own evidence (raw cosine plus BM25's evidence,
or BM25's alone on the text tier) reaches the model's bar; a prompt none of whose items do
gets nothing. Pure: breakdowns in, items out."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from ralph_context.config import Settings
from ralph_context.config.retrieval import PUSH_GATES, PushGate
from ralph_context.errors import ConfigError
from ralph_context.retrieval.gate import admits, pushed

GATE = PushGate(min_evidence=0.8, lexical_weight=0.5, min_lexical=0.6)


@dataclass(frozen=True)
class Hit:
    name: str
    breakdown: dict[str, float] = field(default_factory=dict)


def test_an_item_is_pushed_when_its_cosine_and_its_words_together_reach_the_bar() -> None:
    assert admits({"semantic": 0.6, "lexical": 0.4}, GATE)  # 0.6 + 0.5 * 0.4 = 0.8
    assert not admits({"semantic": 0.6, "lexical": 0.3}, GATE)
    assert admits({"semantic": 0.85, "lexical": 0.0}, GATE)  # meaning alone, when strong
    assert not admits({"semantic": 0.45, "lexical": 0.6}, GATE)  # words alone, with weak meaning


def test_a_prompt_nothing_answers_gets_nothing_and_what_passes_keeps_its_order() -> None:
    noise = [Hit("a", {"semantic": 0.3, "lexical": 0.2}), Hit("b", {"semantic": 0.2})]
    assert pushed(noise, GATE) == []
    ranked = [
        Hit("first", {"semantic": 0.7, "lexical": 0.5, "match": 0.9}),
        Hit("weak", {"semantic": 0.4, "lexical": 0.1, "match": 0.8}),
        Hit("third", {"semantic": 0.9, "lexical": 0.0, "match": 0.5}),
    ]
    assert [hit.name for hit in pushed(ranked, GATE)] == ["first", "third"]


def test_the_relevance_score_and_the_match_do_not_open_the_gate() -> None:
    # The query's own first choice scores a full match whatever its cosine: not evidence.
    assert not admits({"semantic": 0.25, "lexical": 0.1, "match": 1.0, "neighbour": 1.0}, GATE)


def test_on_the_text_tier_bm25s_evidence_alone_decides() -> None:
    # The text tier's breakdown has no cosine: its first factor is BM25's evidence.
    assert admits({"lexical": 0.6, "match": 0.6}, GATE)
    assert not admits({"lexical": 0.59, "match": 0.59}, GATE)


def test_an_item_without_full_text_evidence_is_judged_by_its_cosine() -> None:
    # An archived item (the archive has no full-text index) carries no lexical factor.
    assert admits({"semantic": 0.8}, GATE)
    assert not admits({"semantic": 0.79}, GATE)


def test_without_a_gate_every_item_is_pushed() -> None:
    hits = [Hit("a", {"semantic": 0.0}), Hit("b")]
    assert pushed(hits, None) == hits


def test_auto_is_the_embedding_models_own_gate_and_off_is_none() -> None:
    settings = Settings.load(None)
    assert settings.retrieval.push_gate == "auto"
    assert settings.push_gate() == PUSH_GATES["all-MiniLM-L6-v2"].prompt
    assert settings.push_gate() is not None
    assert settings.with_overrides(retrieval={"push_gate": "off"}).push_gate() is None
    # Each model its own: a cosine's scale is the model's.
    quality = settings.with_overrides(embeddings={"model": "all-mpnet-base-v2"})
    assert quality.push_gate() == PUSH_GATES["all-mpnet-base-v2"].prompt
    assert quality.push_gate() != settings.push_gate()
    # A model with no fitted constants: its cosine scale is unknown, so no gate.
    assert settings.with_overrides(embeddings={"model": "BAAI/bge-small-en"}).push_gate() is None
    own = {"min_evidence": 0.5, "lexical_weight": 0.0, "min_lexical": 0.7}
    assert settings.with_overrides(retrieval={"push_gate": own}).push_gate() == PushGate(**own)


def test_a_loops_own_state_is_not_gated_for_this_model_unless_set() -> None:
    # bench ab: with the prompt's gate the facts a loop's step needs were held back.
    settings = Settings.load(None)
    assert settings.push_gate("loop") is None
    own = {"min_evidence": 0.5, "lexical_weight": 0.0, "min_lexical": 0.7}
    looped = settings.with_overrides(retrieval={"loop_push_gate": own})
    assert looped.push_gate("loop") == PushGate(**own)
    assert looped.push_gate() == settings.push_gate()  # the prompt's stays its own


def test_a_gate_set_wrong_in_the_settings_is_refused_with_its_key() -> None:
    with pytest.raises(ConfigError, match="push_gate"):
        Settings.load(None).with_overrides(retrieval={"push_gate": "sometimes"})
    with pytest.raises(ConfigError, match="push_gate"):
        Settings.load(None).with_overrides(retrieval={"push_gate": {"min_evidence": 0.5}})


def test_the_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RALPH_CONTEXT_RETRIEVAL__PUSH_GATE", "off")
    assert Settings.load(None).push_gate() is None
