"""moto's S3 server, with its writes made atomic as S3's are: ``python moto_atomic.py
-H HOST -p PORT`` (``moto_server``'s arguments).

A store on object storage relies on S3's conditional writes: LanceDB commits a table version
by creating its manifest only if absent (``If-None-Match: *``), and the idempotency claims
and the maintenance lease do the same. moto checks the condition, then builds and stores
the object, with nothing holding the two together: two replicas creating the same manifest
at once can both be told 200, and the later one replaces the earlier, so the commit the
first replica acknowledged is gone. Measured on a two-core box under load 7: 5 of 400
pairs of simultaneous create-if-absent PUTs both succeeded, 0 of 400 with the lock
(``tests/object_storage/test_endpoint.py`` holds the endpoint to one winner). One lock
around every PUT of an object makes check and write one step; moto answers from one Python
process anyway, so it costs little.
"""

from __future__ import annotations

import threading
from typing import Any

from moto.s3.responses import S3Response
from moto.server import main

_WRITE = threading.Lock()
_put_object = S3Response.put_object


def _atomic_put_object(self: S3Response) -> Any:
    with _WRITE:
        return _put_object(self)


S3Response.put_object = _atomic_put_object  # type: ignore[method-assign]

if __name__ == "__main__":
    main()
