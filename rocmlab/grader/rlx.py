"""The exercise programs' file format (``RLX1``), read and written with numpy.

Matches ``rocmlab/exercises/common/exercise_io.h``: magic ``RLX1``, uint32 count, then per array a
kind byte (``f`` float32, ``i`` int32, ``u`` uint32), 7 pad bytes, uint64 length and the data.
"""

from __future__ import annotations

import struct

import numpy as np

from rocmlab import safe_read

KINDS = {"f": np.float32, "i": np.int32, "u": np.uint32}
_KIND_OF = {np.dtype(v): k for k, v in KINDS.items()}


class FormatError(ValueError):
    pass


def write_arrays(path, arrays) -> None:
    arrays = list(arrays)
    with open(path, "wb") as fh:
        fh.write(b"RLX1" + struct.pack("<I", len(arrays)))
        for a in arrays:
            a = np.ascontiguousarray(a)
            kind = _KIND_OF.get(a.dtype)
            if kind is None:
                raise TypeError(f"array dtype {a.dtype} is not float32, int32 or uint32")
            fh.write(kind.encode() + b"\0" * 7 + struct.pack("<Q", a.size))
            fh.write(a.tobytes())


def read_capped(path, max_bytes: int) -> bytes:
    """A file a sandboxed program wrote, read without following a symlink it planted and with a size cap
    (:func:`rocmlab.safe_read.read_capped`; a file that grows past the cap while it is read is cut at the cap)."""
    try:
        return safe_read.read_capped(path, max_bytes, grown="cut")
    except safe_read.ReadRefused as exc:
        if exc.why == safe_read.MISSING:
            raise FormatError("the program wrote no output file") from None
        if exc.why == safe_read.NOT_REGULAR:
            raise FormatError("the output file is not a plain file: keep the starter's lines that save the results (the end of main) as they are") from None
        if exc.why == safe_read.TOO_BIG:
            raise FormatError(f"the output file is {exc.size} bytes, more than the limit {max_bytes}") from None
        raise FormatError("the output file is not a plain file (a link?): keep the starter's lines that save the results (the end of main) as they are") from None


def read_arrays(path, max_bytes: int = 1 << 31) -> list[np.ndarray]:
    """The arrays in a program's output file; raises :class:`FormatError` naming what is wrong."""
    return parse_arrays(read_capped(path, max_bytes))


def parse_arrays(data: bytes) -> list[np.ndarray]:
    if len(data) < 8 or data[:4] != b"RLX1":
        raise FormatError("the output file is not in the results format the grader reads (its first 4 bytes are not RLX1): keep the starter's lines that save the results (the end of main) as they are")
    (count,) = struct.unpack_from("<I", data, 4)
    pos, out = 8, []
    for i in range(count):
        if pos + 16 > len(data):
            raise FormatError(f"the output file ends inside the header of array {i}")
        kind = chr(data[pos])
        (n,) = struct.unpack_from("<Q", data, pos + 8)
        pos += 16
        if kind not in KINDS:
            raise FormatError(f"array {i} has unknown kind {kind!r}")
        if pos + 4 * n > len(data):
            raise FormatError(f"array {i} claims {n} values but the file ends first")
        out.append(np.frombuffer(data, dtype=KINDS[kind], count=n, offset=pos).copy())
        pos += 4 * n
    return out
