"""The wire format between a pytest process and its query processes: length-prefixed pickles.

Both ends are this package, started by this process (the pickles never cross a trust boundary: the
query text inside them is data).
"""

from __future__ import annotations

import pickle
import struct
from typing import Any, BinaryIO

HEADER = struct.Struct("!Q")


def read_message(stream: BinaryIO) -> Any:
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        raise EOFError
    (size,) = HEADER.unpack(header)
    payload = stream.read(size)
    if len(payload) < size:
        raise EOFError
    return pickle.loads(payload)


def write_message(stream: BinaryIO, message: Any) -> None:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(payload)) + payload)
    stream.flush()
