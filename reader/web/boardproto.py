"""The practice board page's messages (``karuta practice --web``): JSON text frames over one
WebSocket, each checked against its schema (``online.check`` with this table) and bounded as
the drill page's are (``protocol.MAX_IN`` bytes from the page).

Page → host: hello (the code, the device's id, the seat's token when it has one, or ``take``: a
seat whose device has been gone ``board.TAKEOVER_S``, asked for with the code), start
(with the players' names, if given), calibrate and cal (the tap-along, before the reading), at
(the plan frame the page hears now), touch (a card, the plan frame heard when it was touched),
pick (a card to send), send (the highlighted send), arrange (a card of the player's own side
dragged to a place, before the first read), ping (``reader.web.touchonly``: the laptop's clock
measured).  A touch, pick or send carries an ``id`` (rising on each page): the host
acknowledges it (``ack``: every id up to it), the page sends what was not acknowledged again
after a rejoin, and the host takes each id once.
Host → page: welcome (the plan, whose seat the page is: ``you`` A, B or ``watch``, and the
seat's ``token``, where the cards' images are), ack, clicks and calibrated (the tap-along),
view (``reader.practice.view.to_json`` of the table's view, as this page's seat sees it), go
(the reading starts, or goes on from a wait's end; a page that starts late: from the frame the
shared schedule reaches, ``quiet`` until the next read if it came back past the decisive part),
vacant (to watchers: the seats they may take over), over (the end lines), warn, error, pong.
"""
from __future__ import annotations

import json

from reader.practice import online
from reader.web import protocol
from reader.web import touchonly
from reader.web.protocol import MAX_IN, _msg

__all__ = ["VERSION", "SCHEMAS", "check", "decode", "encode"]

#: 2: touches, picks and sends carry an id and are acknowledged; the welcome gives a seat token
VERSION = 2

_INT = {"type": "integer", "minimum": 0, "maximum": 2**31}
_FRAME = {"type": "integer", "minimum": -2**40, "maximum": 2**40}
_CARD = {"type": "integer", "minimum": 1, "maximum": 100}
_TEXT = {"type": "string", "maxLength": 400}
_DEVICE = {"type": "string", "pattern": "^[0-9a-f]{32}$"}
#: whose touch (two players at one tablet: the half it started in; default A)
_PLAYER = {"enum": ["A", "B"]}
#: a seat's token (the welcome's; a rejoin shows it)
_SEAT = {"type": "string", "pattern": "^[0-9a-f]{32}$"}
#: a touch's, pick's or send's number on its page (acknowledged, taken once)
_ID = {"type": "integer", "minimum": 1, "maximum": 2**31}
#: a player's name as the page gives it (stats are kept under it, the terminal shows it):
#: 1-24 characters, not only spaces, no control characters (C0, DEL, C1) nor the marks that
#: reorder a terminal's line (bidi embeddings, overrides, isolates)
_NAME_CHAR = "\\x00-\\x1f\\x7f-\\x9f\\u202a-\\u202e\\u2066-\\u2069"
NAME = {"type": "string", "minLength": 1, "maxLength": 24,
        "pattern": f"^[^{_NAME_CHAR}]*[^\\s{_NAME_CHAR}][^{_NAME_CHAR}]*$"}
_NAMES = {"type": "object", "properties": {"A": NAME, "B": NAME}, "additionalProperties": False}

SCHEMAS: dict[str, dict] = {
    # page → host
    "hello": _msg("hello", {"v": _INT, "code": {"type": "string", "maxLength": 64},
                            "device": _DEVICE}, {"seat": _SEAT, "take": _PLAYER}),
    "start": _msg("start", {}, {"names": _NAMES}),
    # the tap-along (the drill page's: ``reader.web.page.TapAlong``), before the reading
    "calibrate": protocol.SCHEMAS["calibrate"],
    "cal": protocol.SCHEMAS["cal"],
    "at": _msg("at", {"frame": _FRAME}),
    # (``gap_ms``: the page's output clock moved this much since the 上の句 began: its sound
    # had a gap, the touch's time is not trusted)
    "touch": _msg("touch", {"id": _ID, "card": _CARD, "frame": _FRAME,
                            "stamp": {"enum": ["ok", "bad"]}},
                  {"player": _PLAYER, "gap_ms": protocol.SCHEMAS["touch"]["properties"]["gap_ms"]}),
    "pick": _msg("pick", {"id": _ID, "card": _CARD}, {"player": _PLAYER}),
    "send": _msg("send", {"id": _ID}),
    **touchonly.SCHEMAS,  # ping (page → host), pong (host → page): the laptop's clock
    "arrange": _msg("arrange", {"card": _CARD, "row": {"enum": [0, 1, 2]},
                                "side": {"enum": [0, 1]},
                                "index": {"type": "integer", "minimum": 0, "maximum": 60}},
                    {"player": _PLAYER}),
    # host → page
    "welcome": _msg("welcome", {"v": _INT, "rate": _INT, "plan": {"type": "string"},
                                "clip": {"type": "string"}, "segs": {"type": "array"},
                                "from": _FRAME, "labels": {"type": "object"},
                                "calibration": {"type": ["number", "null"]},
                                "you": {"enum": ["A", "B", online.WATCH]}, "token": _SEAT},
                   {"cards": {"type": "string"}, "widths": {"type": "array"},
                    "ext": {"enum": ["png", "webp"]}}),
    "ack": _msg("ack", {"id": {"type": "integer", "minimum": 0, "maximum": 2**31}}),
    "view": _msg("view", {"view": {"type": "object"}}),
    # (``at``: the instant on the laptop's clock the frame is to be played at, s)
    # (``quiet``: a page that came back past the decisive part of the read sounds nothing
    # before this frame, the wait's end: its reading goes on from the next read)
    "go": _msg("go", {"frame": _FRAME}, {"first": {"type": "boolean"},
                                         "at": {"type": "number", "minimum": 0, "maximum": 1e10},
                                         "quiet": _FRAME}),
    # (the players' seats a watcher may take over: their devices gone ``board.TAKEOVER_S``)
    "vacant": _msg("vacant", {"seats": {"type": "array", "items": _PLAYER, "maxItems": 2}}),
    "clicks": protocol.SCHEMAS["clicks"],
    "calibrated": protocol.SCHEMAS["calibrated"],
    "over": _msg("over", {"lines": {"type": "array", "items": _TEXT}}),
    "warn": _msg("warn", {"text": _TEXT}),
    "error": _msg("error", {"text": _TEXT}),
}


def check(msg) -> dict:
    return online.check(msg, SCHEMAS, "web board")


def decode(text: str) -> dict:
    from reader.base.statefiles import decode_json

    if len(text.encode("utf-8", "surrogatepass")) > MAX_IN:
        raise online.ProtocolError(f"a message of more than {MAX_IN} bytes")
    try:
        obj = decode_json(text)
    except ValueError:
        raise online.ProtocolError("a message that is not JSON") from None
    return check(obj)


def encode(msg: dict) -> str:
    return json.dumps(check(msg), ensure_ascii=False, separators=(",", ":"))
