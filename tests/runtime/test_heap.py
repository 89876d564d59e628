"""A started engine keeps full garbage collections from walking what was alive at its
start, and gives it back when it closes (nothing it held is kept for good)."""

from __future__ import annotations

import gc
import weakref

import anyio

from ralph_context import Engine
from tests.helpers import Loader, SettingsFactory


class Node:
    """One half of a reference cycle (only the cyclic collector frees it)."""

    partner: Node | None = None


def pair() -> Node:
    a, b = Node(), Node()
    a.partner, b.partner = b, a
    return a


async def test_what_was_alive_at_start_is_frozen_until_the_engine_closes(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    with anyio.fail_after(60):
        held = pair()  # alive when the engine starts, garbage soon after
        watched = weakref.ref(held)
        async with Engine(make_settings(lifecycle={"auto_run": False}), model_loader=shared_model):
            assert gc.get_freeze_count() > 0
            del held
            gc.collect()
            assert watched() is not None  # frozen: full collections do not walk it
        assert gc.get_freeze_count() == 0
        gc.collect()
        assert watched() is None  # given back at close, and collected
