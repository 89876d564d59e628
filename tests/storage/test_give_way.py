"""The upkeep child gives way to the loop's requests (``storage.maintenance.give_way``):
stopped while one is in flight, never for longer than its bound, never while a caller waits for the
maintenance, and never left stopped when this process dies.

States are read from ``/proc/<pid>/stat`` (``T``: stopped), so these run on Linux."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import numpy as np
import pytest

from ralph_context import Engine
from ralph_context.runtime import Foreground
from ralph_context.storage.lance_store import LanceStore
from ralph_context.storage.maintenance import upkeep_worker
from ralph_context.storage.maintenance.give_way import GiveWay
from tests.helpers import Loader, SettingsFactory
from tests.storage.test_lance_store import _random_items

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists() or not hasattr(signal, "SIGSTOP"),
    reason="reads process states from /proc; needs SIGSTOP",
)


def state(pid: int) -> str:
    """The process's state letter (``T`` stopped, ``Z`` a zombie), ``"gone"`` if none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return "gone"
    return stat.rsplit(")", 1)[1].split()[0]


def wait_for(check: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    """A process that keeps working (stands for an upkeep operation under way)."""
    process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    yield process
    process.kill()
    process.wait()


def test_the_child_stops_while_requests_are_in_flight_and_goes_on_when_none_are(
    child: subprocess.Popen[bytes],
) -> None:
    give_way = GiveWay(max_pause=60)
    give_way.started(child.pid)
    assert state(child.pid) != "T"  # no request in flight: it works
    give_way.busy(True)
    assert wait_for(lambda: state(child.pid) == "T")
    give_way.busy(True)  # a second engine of the process
    give_way.busy(False)
    assert state(child.pid) == "T"  # one still has a request in flight
    give_way.busy(False)
    assert wait_for(lambda: state(child.pid) != "T")
    give_way.busy(True)
    give_way.ended()  # the operation answered: nothing is stopped past it
    assert wait_for(lambda: state(child.pid) != "T")
    assert not give_way.stopped


def test_an_operation_handed_over_during_a_request_waits_for_it(
    child: subprocess.Popen[bytes],
) -> None:
    give_way = GiveWay(max_pause=60)
    give_way.busy(True)
    give_way.started(child.pid)
    assert wait_for(lambda: state(child.pid) == "T")
    give_way.busy(False)
    assert wait_for(lambda: state(child.pid) != "T")


def held(child: subprocess.Popen[bytes], max_pause: float) -> GiveWay:
    """A give-way with ``child`` under way and stopped by a request in flight."""
    give_way = GiveWay(max_pause=max_pause)
    give_way.started(child.pid)
    give_way.busy(True)
    assert wait_for(lambda: state(child.pid) == "T")
    return give_way


def test_a_steady_stream_of_requests_stops_it_once_and_only_for_max_pause(
    child: subprocess.Popen[bytes],
) -> None:
    give_way = held(child, max_pause=1.0)
    give_way.check(waited_on=False)
    assert state(child.pid) == "T"  # not yet stopped for max_pause
    time.sleep(1.05)
    give_way.check(waited_on=False)
    assert wait_for(lambda: state(child.pid) != "T")
    give_way.busy(True)  # more requests in the same run: it keeps going
    assert not give_way.stopped
    give_way.busy(False)
    give_way.busy(False)
    give_way.busy(True)  # a new run of requests after a quiet moment: stopped again
    assert wait_for(lambda: state(child.pid) == "T")


def test_a_caller_waiting_for_the_maintenance_lets_it_go_on_at_once(
    child: subprocess.Popen[bytes],
) -> None:
    give_way = held(child, max_pause=60)
    give_way.check(waited_on=True)
    assert wait_for(lambda: state(child.pid) != "T")


def test_a_real_operation_given_way_finishes_once_the_bound_has_passed(tmp_path: Path) -> None:
    """The writer awaits the child's answer: with a request in flight all along, the
    compaction is held for ``max_pause`` (never for ever) and then finishes."""
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    store.add_items(_random_items(np.random.default_rng(5), 20, "a"))
    upkeep = upkeep_worker.UpkeepWorker(deadline=120.0)
    upkeep.give_way.max_pause = 0.5
    try:
        upkeep.run({"op": "compact", "uri": str(store.items.uri)})  # the child is up
        upkeep.give_way.busy(True)
        started = time.monotonic()
        upkeep.run({"op": "compact", "uri": str(store.items.uri)})
        held = time.monotonic() - started
        upkeep.give_way.busy(False)
    finally:
        upkeep.close()
    assert held >= 0.5


def test_a_caller_waiting_for_the_maintenance_ends_the_pause_a_queued_request_does_not(
    tmp_path: Path,
) -> None:
    """``hurried_when``'s two checks: a request only queued (an append, served beside the
    maintenance within milliseconds) leaves the child stopped; a caller kept waiting for the
    maintenance lets it go on."""
    store = LanceStore(tmp_path, model_id="m", dimension=4)
    store.add_items(_random_items(np.random.default_rng(7), 20, "a"))
    upkeep = upkeep_worker.UpkeepWorker(deadline=120.0)
    upkeep.give_way.max_pause = 60
    queued, waiting = threading.Event(), threading.Event()
    done = threading.Event()

    def maintain() -> None:
        with upkeep_worker.hurried_when(queued.is_set, waited_on=waiting.is_set):
            upkeep.run({"op": "compact", "uri": str(store.items.uri)})
        done.set()

    try:
        upkeep.run({"op": "compact", "uri": str(store.items.uri)})  # the child is up
        upkeep.give_way.busy(True)
        thread = threading.Thread(target=maintain)
        thread.start()
        assert wait_for(lambda: upkeep.give_way.stopped)
        queued.set()
        assert not done.wait(0.5)  # still stopped
        waiting.set()
        assert done.wait(30)
        thread.join()
        upkeep.give_way.busy(False)
    finally:
        upkeep.close()


@pytest.mark.model
async def test_an_engines_requests_stop_the_upkeep_child_of_its_process(
    make_settings: SettingsFactory, shared_model: Loader
) -> None:
    """A search or a store marks the engine's foreground busy; the process's upkeep child
    running an operation meanwhile is stopped until it ends."""
    async with Engine(make_settings(), model_loader=shared_model) as engine:
        await engine.store("the deploy needs the VPN", "output")
        upkeep = upkeep_worker.worker()
        upkeep.start()
        process = upkeep._process
        assert process is not None
        pid = process.pid
        # An operation under way: a handed-over pid, as UpkeepWorker._ask does.
        upkeep.give_way.started(pid)
        try:
            with engine._foreground.busy():  # what Engine.search holds while it runs
                stopped = await anyio.to_thread.run_sync(
                    lambda: wait_for(lambda: state(pid) == "T")
                )
            running = await anyio.to_thread.run_sync(lambda: wait_for(lambda: state(pid) != "T"))
        finally:
            upkeep.give_way.ended()
    assert stopped and running


def test_a_child_left_stopped_by_a_killed_writer_ends(tmp_path: Path) -> None:
    """SIGKILL of the writer while its child is stopped: the kernel continues the child's
    orphaned process group and hangs it up, so no stopped process is left behind."""
    script = textwrap.dedent(
        """
        import os, signal, sys, time
        from ralph_context.storage.maintenance.upkeep_worker import UpkeepWorker
        upkeep = UpkeepWorker()
        upkeep.start()
        pid = upkeep._process.pid
        upkeep.give_way.started(pid)
        upkeep.give_way.busy(True)
        print(pid, flush=True)
        time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    writer = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert writer.returncode == -signal.SIGKILL, writer.stderr
    pid = int(writer.stdout.split()[0])
    assert wait_for(lambda: state(pid) in ("gone", "Z"), seconds=20), state(pid)


def test_the_foreground_tells_its_listener_on_the_first_start_and_the_last_end() -> None:
    told: list[bool] = []
    foreground = Foreground(on_change=told.append)

    async def main() -> None:
        with foreground.busy():
            with foreground.busy():
                pass
            assert told == [True]
        assert told == [True, False]
        with pytest.raises(RuntimeError), foreground.busy():
            raise RuntimeError("a failed request ends too")

    anyio.run(main)
    assert told == [True, False, True, False]
