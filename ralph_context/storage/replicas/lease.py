"""The maintenance lease of a store on object storage: one replica at a time maintains it.

Replicas (servers sharing one store on object storage) all write, and LanceDB resolves their
commits. Maintenance is different: two compactions of the same files at once waste the work
of one (Lance refuses the second commit), two lifecycle passes would summarize or archive the
same items twice, and a version cleanup must know what every replica may still read. So it
runs in the replica holding the lease: an object beside the tables naming its holder and
when it lapses, taken and renewed with conditional writes (create only if absent, replace
only if unchanged since read), which S3, GCS and Azure all offer. A replica that dies stops
renewing; another takes the lease once it has lapsed.

Clocks: a lease lapses by the taker's clock, so replicas' clocks must agree to well within
``seconds`` (NTP does). The holder renews before each maintenance step; a step longer than
``seconds`` could overlap the next holder's, which LanceDB's commit protocol still keeps
safe (the later commit is retried or refused), only wasteful.

The holder also commits the others' writes when it names an ``address`` (an HTTP server's
URL): replicas that find a live holder with one forward their writes there
(``storage.replicas.forwarding``), so one process commits them all, in its group commits, instead
of every replica racing the others for each table version. A replica that can take
forwarded writes takes a lapsed lease when it writes, so the store keeps one committer.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable

from ralph_context._logging import get_logger
from ralph_context.object_location import ObjectLocation

__all__ = ["LEASE_OBJECT", "MaintenanceLease"]

log = get_logger("ralph_context.storage")

LEASE_OBJECT = "maintenance.lease"


class MaintenanceLease:
    """This replica's claim on maintaining the store at ``location``.

    Args:
        location: The store (one namespace) on object storage.
        seconds: How long the lease lasts after its last renewal.
        holder: This replica's name (default: host, process id and a random suffix).
        clock: Wall-clock seconds (tests move it).
        address: Where this replica takes the others' writes while it holds the lease
            (``None``: it does not).
    """

    def __init__(
        self,
        location: ObjectLocation,
        seconds: float,
        *,
        holder: str | None = None,
        clock: Callable[[], float] = time.time,
        address: str | None = None,
    ) -> None:
        self.location = location
        self.seconds = seconds
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.address = address
        self._clock = clock
        self.held = False
        # When this replica's claim lapses (by its clock; 0 while it holds none).
        self._until = 0.0
        # Maintenance (in a worker thread) and writes (in others) both renew: two renewals
        # at once would race each other's conditional write, and the loser would think the
        # lease lost.
        self._lock = threading.Lock()

    def take(self) -> bool:
        """Hold the lease for ``seconds`` more: take it when nobody holds it or the last
        holder's lapsed, renew it when this replica holds it. False when another replica
        holds it (or won the race for it); a failed request also answers False, so a
        replica that cannot reach the lease does not maintain."""
        try:
            with self._lock:
                taken = self._take()
        except OSError as exc:
            log.warning("lease_unreachable", location=str(self.location), error=str(exc))
            taken = False
        self._held(taken)
        return taken

    def _held(self, taken: bool) -> None:
        if taken != self.held:
            log.info("lease_taken" if taken else "lease_lost", holder=self.holder)
        self.held = taken
        if not taken:
            self._until = 0.0

    def _take(self) -> bool:
        now = self._clock()
        claim: dict[str, object] = {"holder": self.holder, "until": now + self.seconds}
        if self.address is not None:
            claim["address"] = self.address
        body = json.dumps(claim).encode()
        found = self.location.read(LEASE_OBJECT)
        if found is None:
            taken = self.location.write(LEASE_OBJECT, body, replacing="") is not None
        else:
            holder, until, _address = _parse(found[0])
            if holder != self.holder and until > now:
                return False
            taken = self.location.write(LEASE_OBJECT, body, replacing=found[1]) is not None
        if taken:
            self._until = now + self.seconds
        return taken

    def holds(self) -> bool:
        """Whether this replica holds the lease now, by its last claim (no request)."""
        return self.held and self._clock() < self._until

    def committer(self) -> str | None:
        """Where this replica's writes go: the address of another replica that holds the
        lease and takes writes, or ``None`` to commit them here. Renews this replica's
        claim once half of it has passed, and takes a lapsed lease when this replica takes
        writes itself. No request while this replica's claim is fresh; one read (and at
        most one conditional write) otherwise. A failed request answers ``None``: a write
        is never refused for want of the lease."""
        now = self._clock()
        if self.held and now < self._until - self.seconds / 2:
            return None
        try:
            found = self.location.read(LEASE_OBJECT)
        except OSError as exc:
            log.warning("lease_unreachable", location=str(self.location), error=str(exc))
            return None
        holder, until, address = _parse(found[0]) if found is not None else ("", 0.0, None)
        if holder != self.holder and until > now:
            self._held(False)
            return address
        if self.address is not None or holder == self.holder:
            self.take()  # a lock held by a renewal elsewhere: this one waits, then renews
        return None

    def release(self) -> None:
        """Let the lease lapse now, if this replica holds it (at shutdown: the next
        replica need not wait ``seconds``)."""
        if not self.held:
            return
        self.held = False
        self._until = 0.0
        try:
            found = self.location.read(LEASE_OBJECT)
            if found is not None and _parse(found[0])[0] == self.holder:
                lapsed = json.dumps({"holder": self.holder, "until": 0}).encode()
                self.location.write(LEASE_OBJECT, lapsed, replacing=found[1])
        except OSError as exc:
            log.warning("lease_not_released", location=str(self.location), error=str(exc))

    def holder_now(self) -> str | None:
        """Who holds the lease now (``None``: nobody, or it lapsed)."""
        found = self.location.read(LEASE_OBJECT)
        if found is None:
            return None
        holder, until, _address = _parse(found[0])
        return holder if until > self._clock() else None


def _parse(body: bytes) -> tuple[str, float, str | None]:
    """``(holder, until, address)`` of a lease object; an unreadable one counts as lapsed."""
    try:
        data = json.loads(body)
        address = data.get("address")
        return (
            str(data["holder"]),
            float(data["until"]),
            address if isinstance(address, str) and address else None,
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return "", 0.0, None
