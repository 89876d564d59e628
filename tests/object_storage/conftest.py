"""A local S3 endpoint for the object-storage tests: moto's server on a loopback port,
started once per session (``moto[server]``, installed with the dev extra), and a fresh
bucket per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from benchmarks.replicas.endpoint import moto_server
from ralph_context.object_location import ObjectLocation

REGION = "us-east-1"


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """``http://127.0.0.1:PORT`` of a running moto S3 server."""
    with moto_server() as (url, _pid):
        yield url


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
