"""Read a ``.safetensors`` file into numpy arrays, without the ``safetensors`` package.

The format is an 8-byte little-endian header length, a JSON header naming each tensor's
dtype, shape and byte range, then the raw little-endian bytes. That is all a conversion
needs, and reading it here keeps ``model install`` free of torch and of a compiled
dependency; the arrays are views of one memory map, so a 438 MB file costs no copy until a
tensor is used.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ralph_context.errors import ModelError

__all__ = ["read_safetensors"]

_DTYPES: dict[str, np.dtype[np.generic]] = {
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "F64": np.dtype("<f8"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "U8": np.dtype("u1"),
}
# A header longer than this is not a model's (all-mpnet-base-v2's is ~20 KB).
_MAX_HEADER = 64 << 20


def read_safetensors(path: Path) -> dict[str, NDArray[np.generic]]:
    """Every tensor of ``path`` by name, as read-only arrays over a memory map.

    Raises:
        ModelError: The file is not a safetensors file, or a tensor's range or dtype is
            not what its header says.
    """
    try:
        with path.open("rb") as handle:
            (length,) = struct.unpack("<Q", handle.read(8))
            if not 0 < length <= _MAX_HEADER:
                raise ModelError(f"{path}: header length {length} is not a safetensors header")
            header = json.loads(handle.read(length))
        data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + length)
    except (OSError, ValueError, struct.error) as exc:
        raise ModelError(f"{path}: not a readable safetensors file ({exc})") from exc
    tensors: dict[str, NDArray[np.generic]] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = _DTYPES[entry["dtype"]]
            shape = tuple(int(n) for n in entry["shape"])
            start, end = (int(n) for n in entry["data_offsets"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"{path}: tensor {name!r} has an unreadable entry ({exc})") from exc
        count = int(np.prod(shape, dtype=np.int64))
        if not 0 <= start <= end <= data.shape[0] or end - start != count * dtype.itemsize:
            raise ModelError(f"{path}: tensor {name!r} does not fit its byte range")
        tensors[name] = data[start:end].view(dtype).reshape(shape)
    return tensors
