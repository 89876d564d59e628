"""Where ``bench replicas`` keeps its stores: a bucket on a local S3 endpoint it starts
(moto's server on a loopback port), or a store the user names (``--store s3://...``, with
credentials from the environment as the AWS SDKs read them)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx

from ralph_context.object_location import ObjectLocation

__all__ = ["local_endpoint", "upload"]

BUCKET = "ralph-bench"


@contextmanager
def local_endpoint() -> Iterator[ObjectLocation]:
    """``s3://ralph-bench`` on a moto server started for the run (stopped after it).

    Raises:
        RuntimeError: moto's server is not installed (``pip install 'moto[server]'``) or
            did not answer.
    """
    server = shutil.which("moto_server") or str(Path(sys.executable).parent / "moto_server")
    if not Path(server).exists():
        raise RuntimeError("moto_server is missing: pip install 'moto[server]'")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    process = subprocess.Popen(
        [server, "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                httpx.get(url, timeout=1.0)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            raise RuntimeError(f"moto_server did not answer at {url}")
        # Moto takes any bucket creation (an unsigned PUT of the bucket).
        httpx.put(f"{url}/{BUCKET}", timeout=10.0).raise_for_status()
        options = {
            "aws_endpoint": url,
            "aws_access_key_id": "bench",
            "aws_secret_access_key": "bench",
            "aws_region": "us-east-1",
            "allow_http": "true",
        }
        yield ObjectLocation(f"s3://{BUCKET}", tuple(sorted(options.items())))
    finally:
        process.terminate()
        process.wait(timeout=30)


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
