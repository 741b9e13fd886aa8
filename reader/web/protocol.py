"""The web page's messages: JSON text frames over one WebSocket, each checked against its
schema (``online.check`` with this table) and bounded: a frame from the page is at most
``MAX_IN`` bytes (aiohttp closes the link on a longer one, code 1009).

Page → host: hello, touch, answer, waited, calibrate, cal, start.
Host → page: welcome, choices, verdict, go, clicks, calibrated, over, warn, error.
"""
from __future__ import annotations

import json

from reader.practice import online

__all__ = ["VERSION", "MAX_IN", "SCHEMAS", "check", "decode", "encode", "UNCALIBRATED",
           "BAD_STAMP"]

#: the page's protocol (a page of another karuta is told so in one line)
VERSION = 1
#: the longest frame the page may send (bytes)
MAX_IN = 4096

#: why a touch has no reaction time (the log's ``untimed``; ``reaction_ms`` null)
UNCALIBRATED = "the device is not calibrated: not timed"
BAD_STAMP = "the browser's time of the touch was out of range: not timed"

_INT = {"type": "integer", "minimum": 0, "maximum": 2**31}
_FRAME = {"type": "integer", "minimum": -2**40, "maximum": 2**40}
_CARD = {"type": "integer", "minimum": 1, "maximum": 100}
_TEXT = {"type": "string", "maxLength": 400}
_DEVICE = {"type": "string", "pattern": "^[0-9a-f]{32}$"}
_MS = {"type": "number", "minimum": -1e7, "maximum": 1e7}


def _msg(t: str, required: dict, optional: dict | None = None) -> dict:
    props = {"t": {"const": t}, **required, **(optional or {})}
    return {"type": "object", "required": ["t", *required], "properties": props,
            "additionalProperties": False}


#: every message, by its ``t``
SCHEMAS: dict[str, dict] = {
    # page → host
    "hello": _msg("hello", {"v": _INT, "code": {"type": "string", "maxLength": 64},
                            "device": _DEVICE}),
    "start": _msg("start", {}),
    "touch": _msg("touch", {"read": _INT, "frame": _FRAME, "stamp": {"enum": ["ok", "bad"]}},
                  {"gap_ms": _MS}),
    "answer": _msg("answer", {"read": _INT, "card": _CARD}),
    "waited": _msg("waited", {"read": _INT}),
    "calibrate": _msg("calibrate", {"count": {"type": "integer", "minimum": 8, "maximum": 40}}),
    "cal": _msg("cal", {"taps": {"type": "array", "maxItems": 80, "items": _MS}},
                {"moved_ms": _MS}),
    # host → page (checked too: what the host sends is what the page expects)
    "welcome": _msg("welcome", {"v": _INT, "rate": _INT, "plan": {"type": "string"},
                                "clip": {"type": "string"}, "segs": {"type": "array"},
                                "read": _INT, "from": _FRAME, "cards": _INT,
                                "calibration": {"type": ["object", "null"]}}),
    "choices": _msg("choices", {"read": _INT, "cards": {"type": "array", "items": _CARD},
                                "labels": {"type": "array", "items": _TEXT}, "line": _TEXT}),
    "verdict": _msg("verdict", {"read": _INT, "line": _TEXT, "correct": {"type": "boolean"}}),
    "go": _msg("go", {"read": _INT, "frame": _FRAME}),
    "clicks": _msg("clicks", {"url": {"type": "string"}, "clicks": {"type": "array"},
                              "rate": _INT}),
    "calibrated": _msg("calibrated", {"line": _TEXT, "offset_ms": {"type": ["number", "null"]}}),
    "over": _msg("over", {"lines": {"type": "array", "items": _TEXT}}),
    "warn": _msg("warn", {"text": _TEXT}),
    "error": _msg("error", {"text": _TEXT}),
}


def check(msg) -> dict:
    """``msg`` if it is a message of this protocol, else ``online.ProtocolError``."""
    return online.check(msg, SCHEMAS, "web")


def decode(text: str) -> dict:
    """One frame from the page → a checked message (``ProtocolError``: too long, not JSON, not
    a message of this protocol)."""
    from reader.base.statefiles import decode_json

    if len(text.encode("utf-8", "surrogatepass")) > MAX_IN:
        raise online.ProtocolError(f"a message of more than {MAX_IN} bytes")
    try:
        obj = decode_json(text)  # (NaN, Infinity and deep nesting refused)
    except ValueError:
        raise online.ProtocolError("a message that is not JSON") from None
    return check(obj)


def encode(msg: dict) -> str:
    return json.dumps(check(msg), ensure_ascii=False, separators=(",", ":"))
