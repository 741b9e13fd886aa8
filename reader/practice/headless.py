"""A whole practice match on a virtual clock: no window, no sound.

The reading plan is the one a live match would play (same settings, seed and voice layouts),
and time is its sample frames: each read, the bots' touches are delivered in frame order, the
read closes when the next 上の句 starts, and sends are chosen at once.  Nothing sleeps.

``new_match`` builds a ``PracticeMatch`` from options (the CLI and the board window use it
too); ``play`` runs one to the end; ``resume`` rebuilds one from its log.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from reader.base import seeds
from reader.base.errors import KarutaError, LogError
from reader.practice.deal import Deal, deal as draw_deal, from_hands
from reader.practice.match import PracticeMatch, PracticeSettings, Seat
from reader.base.statefiles import decode_json

__all__ = ["new_match", "play", "plan_for", "seat_label", "parse_seat", "resume",
           "resume_text", "load_practice_log", "parse_practice_log", "save"]


#: the widest simultaneous-touch window, ms (``--simultaneous``; a resumed log's too)
MAX_SIMULTANEOUS_MS = 1000.0


def parse_seat(text: str) -> Seat:
    """``bot:3`` / ``human`` / ``none`` -> a ``Seat`` (``KarutaError`` otherwise)."""
    from reader.practice.bot import parse_level

    t = str(text).strip().lower()
    if t in ("human", "none"):
        return Seat(t)
    if t.startswith("bot:"):
        return Seat("bot", parse_level(t[4:]))
    if t == "bot":
        raise KarutaError("say which bot: bot:1 to bot:5")
    raise KarutaError(f"unknown opponent {text!r}: use bot:1 to bot:5, human or none")


def seat_label(seat: Seat) -> str:
    return f"bot:{seat.level}" if seat.kind == "bot" else seat.kind


def plan_for(rules: str, seed: int, voice, deal: Deal, reading: dict | None = None):
    """The reading plan of a practice match: kyogi reads the 100 (karafuda included) and waits
    ``take_ms`` after each 上の句; goshiki reads the colour's 20 in a seeded order (the match
    ends after 17, or later in finals).  ``reading``: settings overrides (``ma_ms``, ...)."""
    from reader.practice.games import game
    from reader.reading.engine import build_plan

    over = dict(reading or {})
    for key in ("rules", "poems", "cards", "karafuda"):
        over.pop(key, None)
    return build_plan(game(rules).reading_settings(deal, over), seed, voice)


def new_match(rules: str, seats: dict[str, Seat], seed: int, voice, *, cards: int | None = None,
              color: str | None = None, deal: Deal | None = None, reading: dict | None = None,
              settings: PracticeSettings | None = None, tomo: bool = False) -> PracticeMatch:
    """A fresh match: the deal from ``seeds.rng(seed, "deal")`` (unless given), the plan
    from ``seed``, the bots' stream from ``seeds.rng(seed, "bots")``.  An empty seat at B
    (``none``) is a match alone: kyogi, all the cards are A's; goshiki, A's 10 (``deal``'s
    ``solo``)."""
    if deal is None:
        solo = seats["B"].kind == "none"
        deal = draw_deal(rules, seeds.rng(seed, "deal"), cards=cards, color=color,
                         solo=solo, tomo=tomo)
    plan = plan_for(rules, seed, voice, deal, reading)
    settings = settings or PracticeSettings()
    extra = {"seed": seed, "practice": {
        "seats": {p: seat_label(s) for p, s in seats.items()},
        "reading": {k: v for k, v in plan.settings.items()
                    if k not in ("rules", "poems", "cards", "karafuda")},
        "voice": plan.voice,
        "simultaneous_ms": settings.simultaneous_ms,
    }}
    return PracticeMatch(deal, plan, seats, seeds.rng(seed, "bots"), settings,
                         voice=voice, extra=extra)


def play(m: PracticeMatch, on_read: Callable | None = None,
         on_event: Callable | None = None) -> PracticeMatch:
    """Play ``m`` to the end on the plan's clock (bots and empty seats only): the same
    ``PracticeSession`` as the window, its clock the plan's frames (``tick`` at each frame
    where something is due: a bot's touch, a read closing), with no waits in the reading.
    ``on_read(m, closed)``: after each read (sends made); ``on_event(name, data)``: the
    session's news ("read", "touch", "closed", "done", "phase")."""
    from reader.practice.session import PracticeSession

    for p, seat in m.seats.items():
        if seat.kind == "human":
            raise KarutaError(f"player {p} is a human: a headless match has bots only "
                              "(--bot-vs-bot A,B)")

    def event(name, data):
        if on_event is not None:
            on_event(name, data)
        if name == "done" and on_read is not None:
            on_read(m, data)

    s = PracticeSession(m, on_event=event)
    s.start_reading()
    rate = m.plan.sample_rate
    end = m.plan.frames
    heard = 0
    while True:
        s.tick(heard / rate, heard, finished=heard >= end)
        if s.over:
            return m
        heard = s.next_due(heard, lambda f: f / rate)
        if heard is None:
            raise KarutaError("the practice session stopped before the match was over")


def save(m: PracticeMatch, path) -> None:
    """The whole log, written atomically (after every read: a crash loses nothing)."""
    from reader.base.files import atomic_write_text

    atomic_write_text(path, m.log_text())


def load_practice_log(path) -> tuple[dict, list[dict]]:
    """(header, read lines) of a practice log, checked by the match rules (``LogError``)."""
    from reader.match import log as matchlog

    matchlog.load(path)  # every line valid for the rules, or one LogError line naming the file
    from reader.base.files import read_bounded

    return _practice_lines(read_bounded(path).decode("utf-8-sig"), str(path))


def parse_practice_log(text: str, name: str) -> tuple[dict, list[dict]]:
    """(header, read lines) of a practice log's text (``name`` in the error lines)."""
    from reader.match import log as matchlog

    matchlog.loads(text, name)
    return _practice_lines(text, name)


def _practice_lines(text: str, name: str) -> tuple[dict, list[dict]]:
    lines = [decode_json(line) for line in text.splitlines() if line.strip()]
    header = lines[0]
    if "practice" not in header:
        raise LogError(f"{name}: not a practice log (no \"practice\" settings in line 1: "
                       "a match log from karuta match keep cannot be resumed here)")
    if not isinstance(header.get("seed"), int):
        raise LogError(f"{name} line 1: a practice log needs its \"seed\"")
    return header, lines[1:]


def resume(path, voice, seats: dict[str, Seat] | None = None) -> PracticeMatch:
    """The match of a practice log, with its reads applied, ready to continue.

    The deal comes from the log; the plan from its seed and reading settings (a log whose
    reads do not follow that plan is refused); the places of the cards from its layout and
    the places its sends went to (``PracticeMatch.layout``: the board as it stood).
    ``seats``: override the logged seats.
    """
    header, reads = load_practice_log(path)
    return _resumed(header, reads, str(path), voice, seats)


def resume_text(text: str, name: str, voice, seats: dict[str, Seat] | None = None
                ) -> PracticeMatch:
    """``resume`` from a log's text (an online guest gets the host's log over the network)."""
    header, reads = parse_practice_log(text, name)
    return _resumed(header, reads, name, voice, seats)


def _resumed(header: dict, reads: list[dict], path: str, voice, seats) -> PracticeMatch:
    from reader.match import log as matchlog

    practice = header["practice"]
    rules = header["rules"]
    try:
        logged = {p: parse_seat(s) for p, s in dict(practice.get("seats", {})).items()}
    except (KarutaError, TypeError, ValueError):
        raise LogError(f"{path} line 1: bad \"seats\" in the practice settings") from None
    if set(logged) != {"A", "B"}:
        raise LogError(f"{path} line 1: the practice settings must name seats A and B")
    reading = practice.get("reading", {})
    if not isinstance(reading, dict):
        raise LogError(f"{path} line 1: bad \"reading\" in the practice settings")
    for key in ("joka", "last_shimo"):
        if key in reading and not isinstance(reading[key], bool):
            raise LogError(f"{path} line 1: \"{key}\" in the practice settings must be true or "
                           f"false, not {json.dumps(reading[key])}")
    sim = practice.get("simultaneous_ms", 10.0)
    if isinstance(sim, bool) or not isinstance(sim, (int, float)) or not 0 <= sim <= MAX_SIMULTANEOUS_MS:
        raise LogError(f"{path} line 1: \"simultaneous_ms\" in the practice settings must be a "
                       f"number of ms, 0-{MAX_SIMULTANEOUS_MS:g}, not {json.dumps(sim)}")
    d = from_hands(rules, header["A"], header["B"], color=header.get("color"))
    try:
        m = new_match(rules, seats or logged, header["seed"], voice, deal=d, reading=reading,
                      settings=PracticeSettings(simultaneous_ms=float(sim)))
    except TypeError:
        raise LogError(f"{path} line 1: unknown reading settings in the practice log") from None
    except LogError:
        raise
    except KarutaError as e:  # a reading setting out of range: name the log it came from
        raise LogError(f"{path} line 1: {e}") from None
    if "layout" in practice:  # where the cards lay when the reading began (older logs: none)
        try:
            m.lay_out_from(practice["layout"], f"{path} line 1")
        except KarutaError as e:
            raise LogError(str(e)) from None
    events = [matchlog.parse_read(rules, r) for r in reads]
    try:
        m.replay(events, [r.get("timing", {}) for r in reads])
    except KarutaError as e:
        raise LogError(f"{path}: {e}") from None
    return m
