"""A local S3 endpoint for the object-storage tests: moto's server on a loopback port,
started once per session (``moto[server]``, installed with the dev extra), and a fresh
bucket per test."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ralph_context.object_location import ObjectLocation
from tests.server_process import free_port

REGION = "us-east-1"


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """``http://127.0.0.1:PORT`` of a running moto S3 server."""
    port = free_port()
    server = Path(sys.executable).parent / "moto_server"
    process = subprocess.Popen(
        [str(server), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(url, timeout=1.0)
                break
            except httpx.TransportError:
                assert process.poll() is None, "moto_server exited"
                assert time.monotonic() < deadline, "moto_server did not answer within 60 s"
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def s3_options(s3_endpoint: str) -> dict[str, str]:
    """LanceDB / obstore options for the local endpoint (moto takes any credentials)."""
    return {
        "aws_endpoint": s3_endpoint,
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
        "aws_region": REGION,
        "allow_http": "true",
    }


@pytest.fixture
def bucket(s3_endpoint: str, s3_options: dict[str, str]) -> str:
    """A new, empty bucket."""
    import boto3  # type: ignore[import-untyped]

    name = f"test-{uuid.uuid4().hex[:12]}"
    client = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name=REGION,
    )
    client.create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3_store(bucket: str, s3_options: dict[str, str]) -> ObjectLocation:
    """Where a store on the local endpoint lives (nothing there yet)."""
    return ObjectLocation(f"s3://{bucket}/store", tuple(sorted(s3_options.items())))
