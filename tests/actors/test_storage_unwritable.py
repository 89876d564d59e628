"""A store whose disk refuses writes is served read-only, and writable again by itself: the
real engine on the real LanceDB store, on a small tmpfs made full, immutable or read-only
(see ``tests/disk_faults.py``: root only, as in CI)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ralph_context import ContextItem, Engine, IterationResult, StoreUnwritable, Tier
from ralph_context.actors.storage.unwritable import READ_ONLY
from tests.disk_faults import fill, immutable, read_only_mount
from tests.helpers import Loader, SettingsFactory

# Ten items of unrelated meaning: each is the best match of a search for its own text.
NOTES = (
    "The deploy script restarts the payment service after the database migration.",
    "Grandma's tomato soup needs basil, garlic and two hours on a low flame.",
    "The flaky integration test waits on a port that another job still holds.",
    "Our hiking trip crossed the glacier before noon to avoid the soft snow.",
    "Upgrading numpy broke the pickled models trained with the old version.",
    "The violin concerto's second movement is marked adagio cantabile.",
    "Rate limiting the login endpoint stopped the credential stuffing attack.",
    "Tulip bulbs go into the ground in autumn, six inches deep.",
    "The CSV importer chokes on byte order marks in the header row.",
    "Saturn's rings are mostly water ice with a little rock dust.",
)
# Writes resume at the next probe (at most 10 s apart): room for a loaded machine.
RESUME_WITHIN = 30


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the engine's behaviour; the runtime's own tests cover trio


async def _all_found(engine: Engine, stored: list[ContextItem]) -> int:
    """How many of ``stored`` a semantic search for their own text finds first, and get
    returns with their text."""
    found = 0
    for item in stored:
        result = await engine.search(item.content, max_items=3, min_score=0)
        top = result.items[0].item.id if result.items else None
        again = await engine.get(item.id)
        if result.tier is Tier.SEMANTIC and top == item.id and again.content == item.content:
            found += 1
    return found


FAULTS = {
    "full": (fill, r"store is full: No space left on device at "),
    "immutable": (immutable, r"store is not writable: Operation not permitted at "),
    "read-only mount": (read_only_mount, r"store is read-only: Read-only file system at "),
}


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_a_store_the_disk_refuses_serves_reads_says_degraded_and_resumes_writes_by_itself(
    fault: str, disk: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    make_unwritable, refusal = FAULTS[fault]
    settings = make_settings(storage={"path": str(disk / "store")})
    store = settings.store_path()
    assert isinstance(store, Path)
    with anyio.fail_after(90):
        async with Engine(settings, model_loader=shared_model) as engine:
            stored = [await engine.store(note, "output") for note in NOTES]
            assert await _all_found(engine, stored) == 10
            make_writable = make_unwritable(disk if fault == "full" else store)

            with pytest.raises(StoreUnwritable, match=refusal + str(store)):
                await engine.store("A note the disk has no room for.", "output")
            assert await _all_found(engine, stored) == 10
            health = engine.health()
            assert health.status == "degraded"
            assert health.state("storage") == f"degraded: {READ_ONLY}"
            assert health.write_error is not None and health.write_error.startswith("store is")
            assert not health.ok
            # Every other write is refused with the cause, background work too, and the
            # actor serving reads never restarts.
            with pytest.raises(StoreUnwritable, match=refusal):
                await engine.record_iteration(
                    IterationResult(iteration=1, success=True, summary="tick")
                )
            with pytest.raises(StoreUnwritable, match=refusal):
                await engine.mark_useful(stored[0].id, helpful=True)
            with pytest.raises(StoreUnwritable, match=refusal):
                await engine.run_lifecycle()
            with pytest.raises(StoreUnwritable, match=refusal):
                await engine.maintain()
            assert await _all_found(engine, stored) == 10
            assert engine.health().actors["storage"].restarts == 0

            make_writable()
            storage = engine.supervisor.actors["storage"]
            with anyio.fail_after(RESUME_WITHIN):
                await storage.health.wait_until(lambda health: health.degraded is None)
            after = await engine.store("A note written once the disk took writes again.", "output")
            assert engine.health().write_error is None
            assert engine.health().state("storage") == "running"
            assert await _all_found(engine, [*stored, after]) == 11
            assert engine.health().actors["storage"].restarts == 0
        # Nothing acknowledged is lost: all eleven are there when the store is reopened.
        async with Engine(settings, model_loader=shared_model) as engine:
            assert await _all_found(engine, [*stored, after]) == 11


async def test_a_store_opened_on_a_disk_already_full_serves_reads_and_refuses_writes(
    disk: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    """Opening writes the writer lock's note: a full disk refuses it, and the store opens
    all the same (once, no actor restart), locked but unnamed, read-only until room."""
    settings = make_settings(storage={"path": str(disk / "store")})
    store = settings.store_path()
    with anyio.fail_after(90):
        async with Engine(settings, model_loader=shared_model) as engine:
            stored = [await engine.store(note, "output") for note in NOTES]
        free = fill(disk)
        async with Engine(settings, model_loader=shared_model) as engine:
            assert engine.health().actors["storage"].restarts == 0
            assert await _all_found(engine, stored) == 10
            with pytest.raises(StoreUnwritable, match=FAULTS["full"][1] + str(store)):
                await engine.store("A note the disk has no room for.", "output")
            assert engine.health().state("storage") == f"degraded: {READ_ONLY}"
            assert await _all_found(engine, stored) == 10
            free()
            storage = engine.supervisor.actors["storage"]
            with anyio.fail_after(RESUME_WITHIN):
                await storage.health.wait_until(lambda health: health.degraded is None)
            after = await engine.store("A note written once the disk took writes again.", "output")
            assert await _all_found(engine, [*stored, after]) == 11
