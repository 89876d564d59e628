"""Where ``bench replicas`` keeps its stores: a bucket on a local S3 endpoint it starts
(moto's server on a loopback port), or a store the user names (``--store s3://...``, with
credentials from the environment as the AWS SDKs read them). The object-storage tests
start their endpoint with :func:`moto_server` too."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from benchmarks.serving import cpu_seconds, free_port, wait_until_serving
from ralph_context.object_location import ObjectLocation
from ralph_context.storage.table.schema import ITEMS

__all__ = ["Endpoint", "Requests", "capacity", "local_endpoint", "moto_server", "upload"]

BUCKET = "ralph-bench"
# A line of moto's request log (werkzeug's, coloured by status on some terminals).
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
_REQUEST = re.compile(r'"([A-Z]+) (\S+) HTTP/1\.1" (\d{3})')


@dataclass(frozen=True)
class Requests:
    """Requests an endpoint answered: all of them, the table commits it took, and the
    commits it refused (412: another writer committed that version first)."""

    total: int
    commits: int
    refused_commits: int
    # Commits of the items table alone (the writes'; the rest are the lease holder's
    # maintenance and the other tables).
    item_commits: int = 0
    # ... and the refused ones of the items table (the rest: other tables, other replicas'
    # usage flushes and the holder's maintenance).
    item_refused: int = 0

    def __sub__(self, earlier: Requests) -> Requests:
        return Requests(
            self.total - earlier.total,
            self.commits - earlier.commits,
            self.refused_commits - earlier.refused_commits,
            self.item_commits - earlier.item_commits,
            self.item_refused - earlier.item_refused,
        )


@dataclass(frozen=True)
class Endpoint:
    """The object store of a run; ``request_log`` is moto's (a line per request it
    answered), ``None`` for a store the user names (its requests cannot be counted)."""

    location: ObjectLocation
    request_log: Path | None = None
    server_pid: int | None = None

    def requests(self) -> Requests | None:
        """What the endpoint has answered so far, if it says (subtract two of these for a
        phase's share)."""
        if self.request_log is None:
            return None
        total = commits = refused = items = items_refused = 0
        with self.request_log.open(encoding="utf-8", errors="replace") as log:
            for line in log:
                request = _REQUEST.search(_COLOUR.sub("", line))
                if request is None:
                    continue
                total += 1
                method, path, status = request.groups()
                # A table version is committed by creating its manifest only if absent: a
                # 412 is a commit another writer won (the loser re-reads and retries).
                if method == "PUT" and "/_versions/" in path and path.endswith(".manifest"):
                    done = status.startswith("2")
                    commits += done
                    items += done and f"/{ITEMS}.lance/" in path
                    refused += status == "412"
                    items_refused += status == "412" and f"/{ITEMS}.lance/" in path
        return Requests(total, commits, refused, items, items_refused)

    def cpu_seconds(self) -> float | None:
        """CPU time the endpoint's server process has used so far (Linux), if it is ours."""
        if self.server_pid is None:
            return None
        try:
            return cpu_seconds(self.server_pid)
        except OSError:
            return None

    def at(self, part: str) -> Endpoint:
        """The same endpoint, at ``part`` under its location."""
        return Endpoint(self.location / part, self.request_log, self.server_pid)


@contextmanager
def moto_server(request_log: Path | None = None) -> Iterator[tuple[str, int]]:
    """``http://127.0.0.1:PORT`` and the process id of a moto S3 server started here,
    stopped on exit; its request log goes to ``request_log`` when given.

    Raises:
        RuntimeError: moto's server is not installed (``pip install 'moto[server]'``) or
            did not answer.
    """
    if not all(importlib.util.find_spec(name) for name in ("moto", "flask")):
        raise RuntimeError("moto's server is missing: pip install 'moto[server]'")
    # moto's server with S3's atomic conditional writes (see moto_atomic).
    server = [sys.executable, str(Path(__file__).with_name("moto_atomic.py"))]
    port = free_port()
    log = request_log.open("wb") if request_log is not None else subprocess.DEVNULL
    try:
        process = subprocess.Popen(
            [*server, "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=log
        )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until_serving(url, process, seconds=60)
            yield url, process.pid
        finally:
            process.terminate()
            process.wait(timeout=30)
    finally:
        if not isinstance(log, int):
            log.close()


@contextmanager
def local_endpoint(request_log: Path) -> Iterator[Endpoint]:
    """``s3://ralph-bench`` on a moto server started for the run (stopped after it), its
    requests logged to ``request_log``.

    Raises:
        RuntimeError: moto's server is missing or did not answer.
    """
    with moto_server(request_log) as (url, pid):
        # Moto takes any bucket creation (an unsigned PUT of the bucket).
        httpx.put(f"{url}/{BUCKET}", timeout=10.0).raise_for_status()
        options = {
            "aws_endpoint": url,
            "aws_access_key_id": "bench",
            "aws_secret_access_key": "bench",
            "aws_region": "us-east-1",
            "allow_http": "true",
        }
        location = ObjectLocation(f"s3://{BUCKET}", tuple(sorted(options.items())))
        yield Endpoint(location, request_log, pid)


def capacity(location: ObjectLocation, clients: int, rounds: int = 40) -> float:
    """Requests per second the store answers to ``clients`` threads, each making ``rounds``
    of a small write, its read and a listing (the kinds a commit makes). A store that
    scales answers more with more clients; moto, one Python process, answers about the
    same number however many ask."""
    place = location / "capacity"

    def client(n: int) -> int:
        for r in range(rounds):
            place.write(f"{n}/{r}", b"x" * 512)
            place.read(f"{n}/{r}")
            place.folders()
        return 3 * rounds

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        made = sum(pool.map(client, range(clients)))
    return made / (time.perf_counter() - started)


def upload(folder: Path, target: ObjectLocation) -> int:
    """Copy the store at ``folder`` to ``target``, its writer lock files left out; how many
    files went."""
    files = [
        f for f in folder.rglob("*") if f.is_file() and f.name not in ("writer.lock", "writer.json")
    ]

    def put(path: Path) -> None:
        target.write(path.relative_to(folder).as_posix(), path.read_bytes())

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(put, files))
    return len(files)
