"""CPU as the kernel counts it (Linux ``/proc``): a server's with its child processes, and
the whole machine's, so a run can say how much of the machine was someone else's.

Our server starts a low-priority child for its store's upkeep
(``ralph_context.storage.maintenance.upkeep_worker``): its CPU is the server's too, so a
server's CPU is its process tree's (the live processes' own time plus what their reaped
children used).
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.serving import cpu_seconds

__all__ = ["CpuSnapshot", "Machine", "Watch", "machine_cpu", "tree_cpu_seconds"]

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    """``/proc/<pid>/stat`` from the state field on (the name may hold spaces and ')')."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:  # gone (or not Linux)
        return None
    return text.rsplit(")", 1)[1].split()


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            tree.setdefault(int(fields[1]), []).append(int(entry.name))
    return tree


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and every live descendant, each with the time
    of its children already reaped.

    Raises:
        OSError: ``pid`` is not a running process.
    """
    if _stat(pid) is None:
        raise OSError(f"no process {pid}")
    tree = _children()
    total, pending = 0, [pid]
    while pending:
        current = pending.pop()
        fields = _stat(current)
        if fields is not None:
            total += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
        pending.extend(tree.get(current, []))
    return total / _TICK


@dataclass(frozen=True)
class Machine:
    """Seconds of CPU the whole machine spent, summed over its cores: busy (user, nice,
    system, interrupts) and stolen (by the hypervisor, for other guests)."""

    busy: float
    steal: float

    def __sub__(self, earlier: Machine) -> Machine:
        return Machine(self.busy - earlier.busy, self.steal - earlier.steal)


def machine_cpu() -> Machine:
    """The machine's CPU so far, from the first line of ``/proc/stat``."""
    line = Path("/proc/stat").read_text(encoding="utf-8").split("\n", 1)[0]
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, line.split()[1:9])
    return Machine((user + nice + system + irq + softirq) / _TICK, steal / _TICK)


@dataclass(frozen=True)
class CpuSnapshot:
    """CPU seconds so far (or, subtracted, over a phase): each server's process tree, this
    process alone (the client; its children are the servers) and the machine; ``at`` is
    the monotonic clock (a phase: its length)."""

    at: float
    servers: dict[str, float]
    client: float
    machine: Machine

    @classmethod
    def take(cls, servers: dict[str, int]) -> CpuSnapshot:
        """Now, for the servers of these pids.

        Raises:
            OSError: A server is not running.
        """
        return cls(
            time.monotonic(),
            {name: tree_cpu_seconds(pid) for name, pid in servers.items()},
            cpu_seconds(os.getpid()),
            machine_cpu(),
        )

    def __sub__(self, earlier: CpuSnapshot) -> CpuSnapshot:
        return CpuSnapshot(
            self.at - earlier.at,
            {name: used - earlier.servers[name] for name, used in self.servers.items()},
            self.client - earlier.client,
            self.machine - earlier.machine,
        )

    @property
    def others(self) -> float:
        """The machine's busy seconds that neither server nor the client used (over a
        phase: what other processes took)."""
        return self.machine.busy - sum(self.servers.values()) - self.client


@dataclass
class Watch:
    """The machine during the questions: 1-minute load samples (one a question) and each
    conversation's CPU deltas (servers, client, machine)."""

    load: list[float] = field(default_factory=list)
    phases: list[CpuSnapshot] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The samples' min/median/max and the phases' average cores (JSON-ready)."""
        seconds = sum(phase.at for phase in self.phases)

        def cores(value: float) -> float:
            return round(value / seconds, 2)

        return {
            "load_1m": {
                "min": round(min(self.load), 2),
                "median": round(statistics.median(self.load), 2),
                "max": round(max(self.load), 2),
            },
            "seconds": round(seconds, 1),
            # Average cores in use: by the whole machine, by processes other than the two
            # servers and the client, and stolen by the hypervisor.
            "busy_cores": cores(sum(phase.machine.busy for phase in self.phases)),
            "other_processes_cores": cores(sum(phase.others for phase in self.phases)),
            "steal_cores": cores(sum(phase.machine.steal for phase in self.phases)),
        }
