"""Where a store lives when it is not a local folder: ``s3://bucket/prefix`` (also
``s3+ddb://`` with a DynamoDB commit store, ``gs://`` and ``az://``).

LanceDB keeps tables there itself, and resolves concurrent commits by its own protocol
(conditional writes, or the external commit store). What a store keeps beside its tables,
the model record, the namespace listing, the size and the maintenance lease, goes through
``obstore``: the same Rust ``object_store`` crate LanceDB's I/O is built on, so both read
the same options and the same environment (``AWS_ACCESS_KEY_ID``, ``AWS_ENDPOINT_URL``,
``AWS_ALLOW_HTTP``, ``GOOGLE_SERVICE_ACCOUNT``, ``AZURE_STORAGE_ACCOUNT_NAME``, ...).

A location behaves like the ``Path`` of a local store where the engine builds names from it
(``location / "namespaces"``, ``str(location)``), so the two share one type,
:data:`Location`; the functions below read and write a small file in either.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from ralph_context.atomic import write_text_atomically

__all__ = [
    "SCHEMES",
    "Location",
    "ObjectLocation",
    "is_object_uri",
    "read_text",
    "remove",
    "write_text",
]

SCHEMES = ("s3", "s3+ddb", "gs", "az")
_URI = re.compile(r"^(s3|s3\+ddb|gs|az)://([^/?#]+)(/[^?#]*)?(\?[^#]*)?$")
# Keys of obstore's client options (the rest go to the store's own configuration).
_CLIENT_KEYS = frozenset(
    {
        "allow_http",
        "allow_invalid_certificates",
        "connect_timeout",
        "default_content_type",
        "http1_only",
        "http2_only",
        "pool_idle_timeout",
        "pool_max_idle_per_host",
        "proxy_url",
        "timeout",
        "user_agent",
    }
)
# obstore names every store key with its service's prefix (LanceDB takes either form).
_PREFIX = {"s3": "aws_", "s3+ddb": "aws_", "gs": "google_", "az": "azure_"}
# Keys only LanceDB reads (the DynamoDB commit store, Lance's own client settings).
_LANCE_ONLY = re.compile(r"^(ddb_|dynamodb_|aws_dynamodb_|lance_|new_table_)")


def is_object_uri(text: str) -> bool:
    """True when ``text`` names a store on object storage (``s3://bucket/...`` and kin)."""
    return _URI.match(text) is not None


@dataclass(frozen=True)
class ObjectLocation:
    """A store (or a folder of one) on object storage.

    Args:
        uri: ``scheme://bucket[/prefix][?query]``; the query (``s3+ddb``'s
            ``ddbTableName``) is kept for LanceDB only.
        options: Passed to LanceDB as ``storage_options`` and to obstore: endpoint,
            region, credentials, ``allow_http``. Missing ones come from the environment.
    """

    uri: str
    options: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not is_object_uri(self.uri):
            raise ValueError(
                f"{self.uri!r:.120} is not an object-storage URI: use "
                + ", ".join(f"{s}://bucket/prefix" for s in SCHEMES)
            )

    @property
    def scheme(self) -> str:
        return self.uri.split("://", 1)[0]

    @property
    def _parts(self) -> tuple[str, str, str]:
        """``(bucket, prefix without slashes, query)``."""
        found = _URI.match(self.uri)
        assert found is not None  # checked at construction
        return found[2], (found[3] or "").strip("/"), found[4] or ""

    @property
    def name(self) -> str:
        """The last part of the prefix (the bucket's name at its root)."""
        bucket, prefix, _ = self._parts
        return prefix.rsplit("/", 1)[-1] if prefix else bucket

    def __truediv__(self, part: str) -> ObjectLocation:
        bucket, prefix, query = self._parts
        path = f"{prefix}/{part.strip('/')}" if prefix else part.strip("/")
        return ObjectLocation(f"{self.scheme}://{bucket}/{path}{query}", self.options)

    def __str__(self) -> str:
        return self.uri

    @property
    def lance_options(self) -> dict[str, str]:
        """The options as LanceDB's ``storage_options``."""
        return dict(self.options)

    def read(self, name: str) -> tuple[bytes, str] | None:
        """Object ``name`` under this location and its ETag; ``None`` if there is none.

        Raises:
            OSError: The object store did not answer, or refused (so for every method).
        """
        import obstore

        with self._io(name):
            try:
                found = obstore.get(self._store(), name)
            except FileNotFoundError:
                return None
            return bytes(found.bytes()), str(found.meta.get("e_tag") or "")

    def write(self, name: str, data: bytes, *, replacing: str | None = None) -> str | None:
        """Write object ``name``; its new ETag.

        ``replacing``: write only if the object is still the version with this ETag
        (``""``: only if there is no such object yet); ``None`` when it was not.
        """
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        mode: Any = None
        if replacing is not None:
            mode = "create" if replacing == "" else {"e_tag": replacing}
        with self._io(name):
            try:
                written = obstore.put(self._store(), name, data, mode=mode)
            except (AlreadyExistsError, PreconditionError):
                return None
            return str(written.get("e_tag") or "")

    def remove(self, name: str) -> None:
        """Delete object ``name`` (nothing if it is not there)."""
        import obstore

        with self._io(name):
            obstore.delete(self._store(), name)

    def size_bytes(self) -> int:
        """Bytes of every object under this location."""
        import obstore

        with self._io(""):
            return sum(int(o["size"]) for batch in obstore.list(self._store()) for o in batch)

    def folders(self) -> list[str]:
        """The names of the folders right under this location."""
        import obstore

        with self._io(""):
            listed = obstore.list_with_delimiter(self._store())
        return sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in listed["common_prefixes"])

    @contextmanager
    def _io(self, name: str) -> Iterator[None]:
        """obstore's errors (its own classes) as ``OSError`` naming the object."""
        from obstore.exceptions import BaseError

        try:
            yield
        except BaseError as exc:
            # The first paragraph: obstore appends a multi-line debug dump of the error.
            reason = str(exc).split("\n\n", 1)[0].strip()
            raise OSError(f"{self.uri.rstrip('/')}/{name}: {reason}") from exc

    def _store(self) -> Any:
        bucket, prefix, _ = self._parts
        scheme = "s3" if self.scheme == "s3+ddb" else self.scheme
        return _open_store(f"{scheme}://{bucket}/{prefix}", self.options)


@functools.lru_cache(maxsize=64)
def _open_store(url: str, options: tuple[tuple[str, str], ...]) -> Any:
    """An obstore handle (kept: each holds a connection pool)."""
    from obstore.store import from_url

    scheme = url.split("://", 1)[0]
    client: dict[str, Any] = {}
    config: dict[str, str] = {}
    for key, value in options:
        key = key.lower()
        if key in _CLIENT_KEYS:
            client[key] = value
        elif not _LANCE_ONLY.match(key):
            prefix = _PREFIX[scheme]
            config[key if key.startswith(prefix) else prefix + key] = value
    return from_url(url, config=config or None, client_options=client or None)  # type: ignore[arg-type]


Location: TypeAlias = Path | ObjectLocation


def read_text(location: Location, name: str) -> str | None:
    """File ``name`` in ``location`` as text; ``None`` if there is none.

    Raises:
        OSError: It could not be read.
        UnicodeDecodeError: It is not UTF-8.
    """
    if isinstance(location, ObjectLocation):
        found = location.read(name)
        return None if found is None else found[0].decode("utf-8")
    try:
        return (location / name).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def write_text(location: Location, name: str, text: str) -> None:
    """Replace file ``name`` in ``location`` whole (a reader never sees half of it)."""
    if isinstance(location, ObjectLocation):
        location.write(name, text.encode("utf-8"))
        return
    location.mkdir(parents=True, exist_ok=True)
    write_text_atomically(location / name, text)


def remove(location: Location, name: str) -> None:
    """Delete file ``name`` in ``location``, if it is there."""
    if isinstance(location, ObjectLocation):
        location.remove(name)
    else:
        (location / name).unlink(missing_ok=True)
