"""A blocking socket speaking our protocol classes, one request at a time: for tests that play a second client
(or check what a front server answers) request by request."""

from __future__ import annotations

import socket
import struct

from asyncconsumer.protocol.base import Request, Response, decode_response, encode_request

__all__ = ["RawClient"]


class RawClient:
    """A blocking socket speaking our protocol classes, one request at a time."""

    def __init__(self, address: str, name: str = "raw") -> None:
        host, port = address.rsplit(":", 1)
        self.name = name
        self._sock = socket.create_connection((host, int(port)), timeout=10)
        self._correlation = 0

    def call(self, request: Request, version: int, timeout_s: float = 10.0) -> Response:
        self._correlation += 1
        self._sock.settimeout(timeout_s)
        self._sock.sendall(encode_request(request, version, self._correlation, self.name))
        (size,) = struct.unpack(">i", self._read(4))
        payload = self._read(size)
        assert struct.unpack_from(">i", payload)[0] == self._correlation
        return decode_response(payload, type(request), version)

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self._sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError(f"{self.name}: the peer closed the connection")
            data += chunk
        return data

    def closed_by_peer(self, timeout_s: float = 5.0) -> bool:
        self._sock.settimeout(timeout_s)
        try:
            return self._sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self._sock.close()
