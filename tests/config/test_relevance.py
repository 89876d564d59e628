"""Each embedding model's fitted relevance constants follow ``embeddings.model``, under
whatever the configuration sets itself."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import pytest

from ralph_context.config import Settings, relevance
from ralph_context.config.relevance import FITTED, RELEVANCE, model_constants

# A model with constants of its own, beside the shipped ones (the mechanism, not the fit).
OWN: Mapping[str, Mapping[str, Mapping[str, float]]] = MappingProxyType(
    {
        **RELEVANCE,
        "own-model": {
            "scoring": {"semantic_midpoint": 0.45, "lexical_weight": 0.3},
            "retrieval": {"min_similarity": 0.3, "min_relevance_score": 0.2},
        },
    }
)


def _config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "ralph.yaml"
    path.write_text("learning:\n  mcp_context:\n" + body, encoding="utf-8")
    return path


def _fitted(settings: Settings) -> dict[str, dict[str, float]]:
    return {
        section: {key: float(getattr(getattr(settings, section), key)) for key in keys}
        for section, keys in FITTED.items()
    }


@pytest.mark.parametrize("model", ["all-MiniLM-L6-v2", "all-mpnet-base-v2"])
def test_a_config_naming_a_model_gets_that_models_constants(tmp_path: Path, model: str) -> None:
    settings = Settings.load(_config(tmp_path, f"    embeddings:\n      model: {model}\n"))
    assert _fitted(settings) == model_constants(model)


def test_the_default_models_constants_are_the_fields_defaults() -> None:
    assert _fitted(Settings()) == model_constants("all-MiniLM-L6-v2")


def test_a_key_the_config_sets_wins_over_the_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(relevance, "RELEVANCE", OWN)
    body = "    embeddings:\n      model: own-model\n    scoring:\n      lexical_weight: 0.55\n"
    settings = Settings.load(_config(tmp_path, body))
    assert settings.scoring.lexical_weight == 0.55, "the file's own value"
    assert settings.scoring.semantic_midpoint == 0.45, "the model's"
    assert settings.retrieval.min_similarity == 0.3
    assert settings.retrieval.min_relevance_score == 0.2


def test_the_environment_naming_a_model_brings_its_constants(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(relevance, "RELEVANCE", OWN)
    monkeypatch.setenv("RALPH_CONTEXT_EMBEDDINGS__MODEL", "own-model")
    assert Settings.load(None).scoring.semantic_midpoint == 0.45


def test_switching_models_by_override_switches_their_constants(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(relevance, "RELEVANCE", OWN)
    body = "    embeddings:\n      model: own-model\n    scoring:\n      lexical_knee: 3.0\n"
    own = Settings.load(_config(tmp_path, body))
    default = own.with_overrides(embeddings={"model": "all-MiniLM-L6-v2"})
    assert (
        default.scoring.semantic_midpoint
        == model_constants("all-MiniLM-L6-v2")["scoring"]["semantic_midpoint"]
    )
    assert default.retrieval.min_similarity == 0.15
    assert default.scoring.lexical_knee == 3.0, "a value the file set stays"
    again = default.with_overrides(embeddings={"model": "own-model"})
    assert _fitted(again) == {
        section: {**values, "lexical_knee": 3.0} if section == "scoring" else values
        for section, values in model_constants("own-model").items()
    }
