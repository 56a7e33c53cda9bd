"""Encode a message body and decode it back, for the protocol tests (no framing)."""

from __future__ import annotations

from typing import Any

from asyncconsumer.protocol import base
from asyncconsumer.protocol.wire import Reader, Writer


def encode(message: base.Message, version: int) -> bytes:
    w = Writer()
    message.encode(w, version)
    return w.getvalue()


def decode(cls: Any, data: bytes, version: int) -> Any:
    """Decodes ``data`` fully: leftover bytes mean encode and decode disagree about the layout."""
    r = Reader(data)
    message = cls.decode(r, version)
    assert r.remaining == 0, f"{r.remaining} bytes left after decoding {cls.__name__} v{version}"
    return message
