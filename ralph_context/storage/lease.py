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
"""

from __future__ import annotations

import json
import os
import socket
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
    """

    def __init__(
        self,
        location: ObjectLocation,
        seconds: float,
        *,
        holder: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.location = location
        self.seconds = seconds
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._clock = clock
        self.held = False

    def take(self) -> bool:
        """Hold the lease for ``seconds`` more: take it when nobody holds it or the last
        holder's lapsed, renew it when this replica holds it. False when another replica
        holds it (or won the race for it); a failed request also answers False, so a
        replica that cannot reach the lease does not maintain."""
        try:
            taken = self._take()
        except OSError as exc:
            log.warning("lease_unreachable", location=str(self.location), error=str(exc))
            taken = False
        if taken != self.held:
            log.info("lease_taken" if taken else "lease_lost", holder=self.holder)
        self.held = taken
        return taken

    def _take(self) -> bool:
        now = self._clock()
        claim = json.dumps({"holder": self.holder, "until": now + self.seconds}).encode()
        found = self.location.read(LEASE_OBJECT)
        if found is None:
            return self.location.write(LEASE_OBJECT, claim, replacing="") is not None
        body, tag = found
        holder, until = _parse(body)
        if holder != self.holder and until > now:
            return False
        return self.location.write(LEASE_OBJECT, claim, replacing=tag) is not None

    def release(self) -> None:
        """Let the lease lapse now, if this replica holds it (at shutdown: the next
        replica need not wait ``seconds``)."""
        if not self.held:
            return
        self.held = False
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
        holder, until = _parse(found[0])
        return holder if until > self._clock() else None


def _parse(body: bytes) -> tuple[str, float]:
    """``(holder, until)`` of a lease object; an unreadable one counts as lapsed."""
    try:
        data = json.loads(body)
        return str(data["holder"]), float(data["until"])
    except (ValueError, KeyError, TypeError):
        return "", 0.0
