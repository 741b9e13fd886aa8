"""The club reading session: ``karuta read --live`` / ``--window`` / ``--resume``.

A club reads for a room: the reader advances after each take, holds while a hand is up,
repeats the last 下の句, steps back a card when a key was pressed too early, shows the cards
read and left and the read log (each poem's kimariji *as it was when read*, for disputes),
and times the 15-minute memorisation before the jo-ka.  The session (settings, seed, order,
position, log) is saved after every card, so ``--resume`` continues after a crash, Ctrl-C or
a dead battery with the same order.

Who calls what::

    reader.cli_read.read ──> open_club(...) ──> ClubSession ──> run_terminal / club_window.run_window
                                               │  command("next"|"hold"|"repeat"|"back"|"quit"|"skip")
                                               │  tick()   (follows what is heard, saves, timer)
                                               └  view()   (a ``ClubView`` both front ends draw)

Pure parts (tested without sound): ``MemorizeTimer`` (the clock is passed in),
``SessionFile`` (save/load, one-line errors), ``KeyBindings`` / ``key_bindings`` (which keys
mean next and back: ``--next-keys`` / ``--back-keys``, for foot pedals), ``parse_escape``
(arrow / PageDown keys).

Positions: cards are counted 0-based in ``plan.order`` here and 1-based on screen.  A card
counts as *read* once its 上の句 has been heard to the end; ``position`` is the number of
cards read (= the index of the next card).  ``--resume`` starts at the 間 + 上の句 of card
``position`` (so a card cut off mid-上の句 is read again whole).

Step back (``b``): while the current card's 上の句 or take is on, go back to the previous
card; once its take was released (its 下の句, the next 間), re-read the current card.  The
reading restarts from that card's 間 on a new ``PlanCursor`` over the *whole* plan
(``start_segment``), so ``r`` at once repeats the 下の句 before it; the log marks the re-read
entry ``again``.  ``--resume`` starts the same way.

Hold (``p``): the cursor runs in live mode whenever the plan has waits and ``--auto`` is not
given, and always when it has none (goshiki: the reading advances by itself either way), so
``p`` pauses the reading at the next silence even without takes (``PlanCursor`` class doc).
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from reader.errors import DeviceError, KarutaError, LogError
from reader.plan import Plan
from reader.dirs import data_dir as default_data_dir

SESSION_KIND = "karuta-club-session"
SESSION_VERSION = 1

#: the reading options saved with a session (the names ``reader.cli_read.build`` takes)
OPTION_NAMES = ("rules", "seed", "cards", "poems_spec", "colors", "karafuda", "ma", "yoin",
                "take", "gap", "speed", "joka", "last_shimo", "voice_spec")



class SessionError(LogError):
    """A missing, corrupt or mismatched session file (one line; the file is left alone)."""


# ---------------------------------------------------------------------------- data dirs



def default_session_path() -> Path:
    return default_data_dir() / "sessions" / "last.json"


# ---------------------------------------------------------------------------- plan positions
def card_kami_index(plan: Plan) -> list[int]:
    """Segment index of each card's 上の句, in ``plan.order``."""
    where = {s.poem: i for i, s in enumerate(plan.segments)
             if s.kind == "kami" and isinstance(s.poem, int)}
    return [where[p] for p in plan.order]


def card_start_index(plan: Plan, k: int) -> int:
    """Where reading card ``k`` (0-based) begins: its 間, or its 上の句 when none precedes it."""
    i = card_kami_index(plan)[k]
    if i > 0 and plan.segments[i - 1].kind == "ma" and plan.segments[i - 1].poem == plan.order[k]:
        return i - 1
    return i


# ---------------------------------------------------------------------------- timer
@dataclass
class MemorizeTimer:
    """The memorisation countdown before the jo-ka.

    ``total``: seconds; ``signals``: seconds after the start at which a signal sounds (the
    13-minute mark: practice swings allowed); the end sounds too.  ``clock()`` gives seconds
    (``time.monotonic`` in use, a fake in tests).  ``poll()`` returns the events that came due
    since the last poll, each once: ``("signal", t)`` and finally ``("end", elapsed)``;
    ``skip()`` ends it at once (no signals fire after a skip).
    """

    total: float
    signals: tuple[float, ...] = ()
    clock: Callable[[], float] = time.monotonic
    t0: float | None = None
    fired: list[float] = field(default_factory=list)
    ended: bool = False
    skipped: bool = False

    def start(self) -> None:
        self.t0 = self.clock()

    def elapsed(self) -> float:
        if self.t0 is None:
            return 0.0
        return max(0.0, self.clock() - self.t0)

    def remaining(self) -> float:
        return 0.0 if self.ended else max(0.0, self.total - self.elapsed())

    @property
    def swings(self) -> bool:
        """A signal has sounded: practice swings are allowed."""
        return bool(self.fired)

    def next_signal(self) -> float | None:
        left = [s for s in sorted(self.signals) if s not in self.fired and s < self.total]
        return left[0] if left else None

    def skip(self) -> None:
        self.skipped = True

    def poll(self) -> list[tuple[str, float]]:
        if self.ended:
            return []
        if self.t0 is None:
            self.start()
        now = self.elapsed()
        if self.skipped:
            self.ended = True
            return [("end", now)]
        out: list[tuple[str, float]] = []
        for s in sorted(self.signals):
            if s not in self.fired and s < self.total and now >= s:
                self.fired.append(s)
                out.append(("signal", s))
        if now >= self.total:
            self.ended = True
            out.append(("end", now))
        return out


def default_signals(total_min: float) -> tuple[float, ...]:
    """Minutes from the start: 2 minutes before the end (13 of 15), when that is after 0."""
    return (total_min - 2,) if total_min > 2 else ()


def parse_signals(spec: str | None, total_min: float) -> tuple[float, ...]:
    """``--signals "13"`` or ``"5,13"`` (minutes from the start) -> seconds."""
    if spec is None:
        mins = default_signals(total_min)
    elif spec.strip() in ("", "none"):
        mins = ()
    else:
        try:
            mins = tuple(float(x) for x in spec.split(",") if x.strip())
        except ValueError:
            raise KarutaError(f"--signals {spec!r}: give minutes from the start, e.g. 13 or 5,13") from None
        for m in mins:
            if not 0 < m < total_min:
                raise KarutaError(f"--signals {m:g} is not inside the {total_min:g}-minute memorisation")
    return tuple(round(m * 60.0, 3) for m in mins)


def chime(rate: int, kind: str = "signal"):
    """A short synthesized chime (float32): ``signal`` two bright beeps, ``end`` a falling
    three-note bell (the jo-ka follows)."""
    import numpy as np

    notes = [(1318.5, 0.16), (0, 0.08), (1318.5, 0.16)] if kind == "signal" else \
        [(1046.5, 0.35), (784.0, 0.35), (523.25, 0.7)]
    parts = []
    for f, dur in notes:
        n = int(rate * dur)
        t = np.arange(n, dtype=np.float64) / rate
        if f == 0:
            parts.append(np.zeros(n))
            continue
        env = np.exp(-3.0 * t / dur) * np.minimum(1.0, t / 0.005)
        parts.append(0.35 * env * (np.sin(2 * np.pi * f * t) + 0.3 * np.sin(4 * np.pi * f * t)))
    parts.append(np.zeros(int(rate * 0.15)))
    return np.concatenate(parts).astype(np.float32)


class ArrayCursor:
    """Plays a fixed array through an ``audio.output`` backend (the chimes): the subset of the
    ``PlanCursor`` interface the outputs use (``read``, ``stop``, ``close``, ``sample_rate``)."""

    def __init__(self, samples, sample_rate: int):
        self.data = samples
        self.sample_rate = sample_rate
        self.pos = 0
        self.stopped = False

    def read(self, n: int):
        if self.stopped:
            return self.data[:0]
        out = self.data[self.pos:self.pos + n]
        self.pos += out.shape[0]
        return out

    def stop(self) -> None:
        self.stopped = True

    def close(self) -> None:
        pass


# ---------------------------------------------------------------------------- session file
def _now_iso(wall: Callable[[], float] = time.time) -> str:
    return datetime.fromtimestamp(wall()).astimezone().isoformat(timespec="seconds")


class SessionFile:
    """The saved session: JSON, written atomically (``reader.files.atomic_write_text``).

    ``{"kind", "version", "options" (reading options, seed resolved), "seed", "rules",
    "order", "total", "position", "finished", "log": [{"card", "poem", "kimariji",
    "kimariji_sound", "karafuda", "again", "time"}], "voice", "memorize_min", "started",
    "updated"}``
    """

    def __init__(self, path: Path | str):
        self.path = Path(path)

    def save(self, data: dict) -> None:
        from reader.errors import OutputError
        from reader.files import atomic_write_text

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OutputError(f"cannot write session {self.path}: {e.strerror or e}") from None
        atomic_write_text(self.path, json.dumps(data, ensure_ascii=False, indent=1))

    def load(self) -> dict:
        from reader.statefiles import StateFileError, check, parse_json, read_text

        p = self.path
        if not p.exists():
            raise SessionError(f"no saved session at {p}: start one with `karuta read --live`")
        try:
            data = parse_json(read_text(p, "session"), "session", str(p))
            validate_session(data, p)  # the friendly lines first (kind, version, what is missing)
            return check(data, "session", "session", str(p))  # then every field's shape
        except FileNotFoundError:
            raise SessionError(f"no saved session at {p}: start one with `karuta read --live`") from None
        except StateFileError as e:
            raise SessionError(f"{e}; it was left as it is") from None


def validate_session(data, p) -> dict:
    def bad(why: str):
        raise SessionError(f"session {p} is corrupt ({why}); it was left as it is")

    if not isinstance(data, dict) or data.get("kind") != SESSION_KIND:
        bad("not a karuta session")
    if data.get("version") != SESSION_VERSION:
        raise SessionError(f"session {p} has version {data.get('version')!r}; this karuta reads "
                           f"version {SESSION_VERSION}")
    opts, order, pos, log = data.get("options"), data.get("order"), data.get("position"), data.get("log")
    if not isinstance(opts, dict) or any(k not in opts for k in OPTION_NAMES):
        bad("options missing")
    if not isinstance(order, list) or not order or not all(isinstance(n, int) and 1 <= n <= 100 for n in order):
        bad("order missing")
    if not isinstance(pos, int) or not 0 <= pos <= len(order):
        bad("position out of range")
    if not isinstance(log, list) or not all(isinstance(e, dict) and isinstance(e.get("poem"), int) for e in log):
        bad("read log")
    if not isinstance(opts.get("seed"), int):
        bad("seed missing")
    return data


def options_for_save(opts: dict, seed: int) -> dict:
    out = {k: opts.get(k) for k in OPTION_NAMES}
    out["seed"] = seed
    out["colors"] = list(out["colors"] or ())
    return out


def options_from_save(saved: dict) -> dict:
    out = {k: saved.get(k) for k in OPTION_NAMES}
    out["colors"] = tuple(out["colors"] or ())
    return out


# ---------------------------------------------------------------------------- the view
@dataclass(frozen=True)
class ClubView:
    """What a front end shows (the same for the terminal and the window)."""

    phase: str  # memorize | reading | finished | quit
    state: str  # e.g. "memorisation", "jo-ka", "reading", "waiting for take", "held", "finished"
    total: int
    read: int
    card: int | None  # 1-based card on screen
    poem: int | None
    kami: str
    author: str
    kimariji: str
    kimariji_sound: str
    karafuda: bool
    recent: tuple[dict, ...]
    countdown: float | None
    swings: bool
    next_signal: float | None  # seconds until the next memorisation signal
    message: str
    title: str

    @property
    def left(self) -> int:
        return self.total - self.read


def _mmss(seconds: float) -> str:
    s = int(math.ceil(max(0.0, seconds)))
    return f"{s // 60}:{s % 60:02d}"


def log_line(e: dict) -> str:
    flag = (" 空札" if e.get("karafuda") else "") + (" (again)" if e.get("again") else "")
    when = str(e.get("time", ""))[11:19]
    k = e.get("kimariji", "")
    snd = e.get("kimariji_sound", "")
    try:
        import poems

        first = poems.poem(int(e["poem"])).kanji[0]
    except Exception:
        first = ""
    return (f"{e.get('card', '?'):>3}. {e['poem']:3d} {k}{'　' * max(0, 6 - len(k))}"
            f"({snd}) {first}  {when}{flag}")


def format_log(log: list[dict], total: int | None = None, seed=None) -> list[str]:
    head = "read log" + (f" (seed {seed})" if seed is not None else "") + \
        (f": {len({e['card'] for e in log})} of {total} cards" if total else "")
    return [head] + [log_line(e) for e in log]


# ---------------------------------------------------------------------------- the session
class ClubSession:
    """One club reading on one output.  Not thread-safe: call everything from one thread.

    ``output``: an ``audio.output`` backend (opened before any synthesis: a missing device
    fails at once).  ``opts``: the reading options (saved for ``--resume``).  ``position``:
    cards already read (resume).  ``clock``: seconds, for the memorisation timer.
    """

    def __init__(self, plan: Plan, voice, output, *, opts: dict, session: SessionFile,
                 auto: bool = False, memorize_s: float = 0.0, signals_s: tuple[float, ...] = (),
                 position: int = 0, log: list[dict] | None = None, started: str | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 wallclock: Callable[[], float] = time.time, recent: int = 5, message: str = "",
                 echo: Callable[[str], None] | None = None):
        self.plan = plan
        self.voice = voice
        self.output = output
        self.opts = opts
        self.session = session
        self.auto = auto
        self.clock = clock
        self.wallclock = wallclock
        self.recent_n = recent
        self.message = message
        self.echo = echo
        self.total = len(plan.order)
        self.position = position
        self._saved_at = position
        self.max_position = max([position] + [int(e.get("card", 0)) for e in (log or [])])
        self.log: list[dict] = list(log or [])
        self.started = started or _now_iso(wallclock)
        self.kami_idx = card_kami_index(plan)
        self._card_of = {i: k for k, i in enumerate(self.kami_idx)}
        self.memorize_min = memorize_s / 60.0
        self.timer = MemorizeTimer(memorize_s, signals_s, clock) if memorize_s > 0 else None
        self.phase = "memorize" if self.timer else "reading"
        self.held = False
        self.current: int | None = None  # card whose 上の句 was heard last
        self.heard: int = -1  # original segment index heard now
        self.repeating = False
        self.cursor = None
        self.base = 0  # segment the current playback started at
        self._index = {id(seg): i for i, seg in enumerate(plan.segments)}
        # live unless --auto; a plan without waits (goshiki) reads on by itself either way,
        # and live mode lets ``p`` pause it at the next silence
        self.live = not auto or not any(seg.wait for seg in plan.segments)
        self._start_after_chime = False
        self._started_reading = False
        self.device_lost: str | None = None  # the DeviceError's line while phase is "lost"
        self._lost_at = 0.0
        if self.position >= self.total:
            self.phase = "finished"

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Begin: the memorisation timer, or the reading at once."""
        self.save()
        if self.phase == "memorize":
            self.timer.start()
        elif self.phase == "reading":
            self._begin_reading()

    def _begin_reading(self) -> None:
        self.phase = "reading"
        start = 0 if self.position == 0 else card_start_index(self.plan, self.position)
        self._play_from(start)

    def _play_from(self, start: int) -> None:
        from audio.render import PlanCursor

        self._stop_output()
        if self.cursor is not None:
            self.cursor.close()
        self.base = start
        self.cursor = PlanCursor(self.plan, self.voice, live=self.live, start_segment=start)
        self.heard = start - 1
        self.held = False
        self.repeating = False
        self._started_reading = True
        self.output.play(self.cursor)

    def _stop_output(self) -> None:
        if self.output.is_active:
            self.output.stop()
        try:
            self.output.wait(timeout=0)
        except KarutaError:
            raise
        except Exception:
            pass

    def _chime(self, kind: str) -> None:
        import numpy as np  # noqa: F401  (chime needs it)

        self._stop_output()
        self.output.play(ArrayCursor(chime(self.plan.sample_rate, kind), self.plan.sample_rate))

    def close(self) -> None:
        try:
            self.output.stop()
        finally:
            if self.cursor is not None:
                self.cursor.close()

    # ------------------------------------------------------------------ commands
    def command(self, cmd: str | None) -> None:
        if cmd is None or self.phase in ("finished", "quit"):
            return
        if cmd == "quit":
            self.output.stop()
            self.phase = "quit"
            self.save()
            return
        if self.phase == "memorize":
            if cmd in ("skip", "next"):
                self.timer.skip()
            return
        if self.phase == "lost":
            if cmd == "next":
                self.reopen()
            return
        if self.cursor is None or self.phase != "reading":
            return
        if cmd == "next":
            self.cursor.release()
        elif cmd == "hold":
            self.held = not self.held
            (self.cursor.hold if self.held else self.cursor.resume)()
        elif cmd == "repeat":
            self.cursor.repeat_last_shimo()
        elif cmd == "back":
            self.step_back()

    def back_target(self) -> int | None:
        """The card ``b`` goes back to (see the module doc), or None before any card."""
        if self.current is None:
            return None
        seg = self.plan.segments[self.heard] if 0 <= self.heard < len(self.plan.segments) else None
        k = self.current
        if seg is not None and seg.kind in ("kami", "take", "gap") and seg.poem == self.plan.order[k]:
            k -= 1
        return max(0, k)

    def step_back(self) -> None:
        k = self.back_target()
        if k is None:
            return
        self.position = k
        self.current = None
        self.message = f"back to card {k + 1}/{self.total}"
        self.save()
        self._play_from(card_start_index(self.plan, k))

    # ------------------------------------------------------------------ following the sound
    #: seconds between automatic attempts to reopen a lost device (--auto)
    REOPEN_EVERY_S = 5.0

    def tick(self) -> None:
        """Follow what is heard now: the timer's signals, cards read (log + save), the end.
        A device that goes away (``DeviceError`` from the output) stops the reading at the last
        card heard, saved: phase "lost" waits for next (or, with --auto, retries by itself
        every ``REOPEN_EVERY_S``) to reopen it and read on from that card."""
        try:
            self._tick()
        except DeviceError as e:
            self._lost(e)
        if self.phase == "lost" and self.auto and \
                self.clock() - self._lost_at >= self.REOPEN_EVERY_S:
            self.reopen()

    def _lost(self, e: DeviceError) -> None:
        try:
            self.output.stop()
        except Exception:
            pass
        self.phase = "lost"
        self.device_lost = str(e)
        self._lost_at = self.clock()
        self.save()
        self.message = (f"{e}: stopped at card {min(self.position + 1, self.total)}/{self.total} "
                        f"(saved) · next: try the device again · q: quit")
        if self.echo:
            self.echo(self.message)

    def reopen(self) -> None:
        """Try the device again and read on from the first card not heard to the end."""
        self._lost_at = self.clock()
        try:
            self._begin_reading()
        except DeviceError as e:
            self.phase = "lost"
            self.message = f"{e} · next: try again · q: quit"
            return
        self.device_lost = None
        self.message = f"device back: reading on from card {min(self.position + 1, self.total)}"

    def _tick(self) -> None:
        if self.phase == "memorize":
            for kind, at in self.timer.poll():
                if kind == "signal":
                    self.message = f"{_mmss(self.timer.total - at)} left: practice swings allowed"
                    self._chime("signal")
                else:
                    self.message = "memorisation over: the jo-ka follows"
                    self._chime("end")
                    self._start_after_chime = True
            if self._start_after_chime and not self.output.is_active:
                self._start_after_chime = False
                self._begin_reading()
            return
        if self.phase != "reading" or self.cursor is None:
            return
        frame = self.output.frame_now()
        if frame is not None:
            seg, rep = self.cursor.segment_at(max(0, int(frame)))
            self.repeating = bool(rep)
            if seg is not None and not rep:
                self._heard(self._index[id(seg)])
        if not self.output.is_active:
            self.output.wait(timeout=0)  # re-raises a voice/device failure
            st = self.cursor.state
            if st.finished and self.phase == "reading":
                self._heard(len(self.plan.segments))
                self.phase = "finished"
                self.message = "the reading is over"
                self.save()

    def _heard(self, i: int) -> None:
        if i <= self.heard:
            return
        for j in range(max(self.heard, 0), i):
            k = self._card_of.get(j)
            if k is not None and j >= self.base:
                self._card_read(k)
        for j in range(self.heard + 1, min(i, len(self.plan.segments) - 1) + 1):
            k = self._card_of.get(j)
            if k is not None:
                self.current = k
                self.message = ""
        self.heard = i

    def _card_read(self, k: int) -> None:
        seg = self.plan.segments[self.kami_idx[k]]
        again = k < self.max_position
        entry = {"card": k + 1, "poem": seg.poem, "kimariji": seg.kimariji,
                 "kimariji_sound": seg.kimariji_sound, "karafuda": seg.poem in self.plan.karafuda,
                 "again": again, "time": _now_iso(self.wallclock)}
        self.log.append(entry)
        self.position = k + 1
        self.max_position = max(self.max_position, self.position)
        self.save()
        if self.echo:
            self.echo(log_line(entry))

    # ------------------------------------------------------------------ saving
    def to_dict(self) -> dict:
        return {
            "kind": SESSION_KIND, "version": SESSION_VERSION,
            "options": options_for_save(self.opts, self.plan.seed),
            "seed": self.plan.seed, "rules": self.plan.rules, "voice": self.plan.voice,
            "order": list(self.plan.order), "total": self.total, "position": self.position,
            "finished": self.position >= self.total, "memorize_min": self.memorize_min,
            "auto": self.auto, "log": self.log, "started": self.started,
            "updated": _now_iso(self.wallclock),
        }

    def save(self) -> None:
        from reader.errors import OutputError

        try:
            self.session.save(self.to_dict())
        except OutputError as e:  # a full or failing disk: say what the file on disk holds
            self.output.stop()
            raise OutputError(f"{e}; the session on disk continues at card "
                              f"{min(self._saved_at + 1, self.total)}/{self.total}: free some "
                              f"space, then `karuta read --resume`") from None
        self._saved_at = self.position

    _saved_at = 0  # the position in the session file on disk

    # ------------------------------------------------------------------ the view
    def state_text(self) -> str:
        if self.phase == "memorize":
            return "memorisation" if not self._start_after_chime else "memorisation over"
        if self.phase == "finished":
            return "finished"
        if self.phase == "quit":
            return "stopped (saved)"
        if self.phase == "lost":
            return "sound device lost (saved)"
        st = self.cursor.state if self.cursor is not None else None
        if self.held:
            return "held"
        if self.repeating:
            return "repeating 下の句"
        seg = self.plan.segments[self.heard] if 0 <= self.heard < len(self.plan.segments) else None
        if seg is not None and isinstance(seg.poem, str) and seg.poem in ("joka", "announce", "karafuda"):
            return {"joka": "jo-ka", "announce": "announcement", "karafuda": "空札 poem"}[seg.poem]
        if st is not None and st.waiting and seg is not None and seg.kind == "take":
            return "waiting for take"
        if seg is not None and seg.kind == "take":
            return "take"
        if seg is not None and seg.kind == "shimo":
            return "reading 下の句"
        return "reading"

    def view(self) -> ClubView:
        import poems

        k = self.current
        poem = self.plan.order[k] if k is not None else None
        kami = author = kim = snd = ""
        kara = False
        if poem is not None:
            p = poems.poem(poem)
            seg = self.plan.segments[self.kami_idx[k]]
            kami, author = " ".join(p.kanji[:3]), p.author
            kim, snd = seg.kimariji or "", seg.kimariji_sound or ""
            kara = poem in self.plan.karafuda
        t = self.timer
        countdown = t.remaining() if (t is not None and self.phase == "memorize") else None
        return ClubView(
            phase=self.phase, state=self.state_text(), total=self.total, read=self.position,
            card=None if k is None else k + 1, poem=poem, kami=kami, author=author, kimariji=kim,
            kimariji_sound=snd, karafuda=kara, recent=tuple(self.log[-self.recent_n:][::-1]),
            countdown=countdown, swings=bool(t and t.swings),
            next_signal=(t.next_signal() - t.elapsed() if t and t.next_signal() is not None else None),
            message=self.message,
            title=(f"karuta · {self.plan.rules} · {self.total} cards · seed {self.plan.seed} · "
                   f"{self.plan.voice} voice"))


# ---------------------------------------------------------------------------- keys
#: named keys for ``--next-keys`` / ``--back-keys`` (any other key: its one character) and
#: how the screen shows them
KEY_NAMES = {"space": "space", "enter": "Enter", "tab": "Tab", "backspace": "BS",
             "pagedown": "PgDn", "pageup": "PgUp", "right": "→", "left": "←", "up": "↑",
             "down": "↓", "comma": ","}
KEY_ALIASES = {"return": "enter", "pgdn": "pagedown", "pgup": "pageup", "bs": "backspace",
               ",": "comma", " ": "space"}
DEFAULT_NEXT_KEYS = "space,enter,pagedown,right"
DEFAULT_BACK_KEYS = "b,left,backspace,pageup"
#: keys whose meaning is fixed (the pedal options cannot take them)
FIXED_KEYS = {"p": "hold", "h": "hold", "r": "repeat", "q": "quit", "s": "skip"}

#: terminal input -> key name (characters; escape sequences after ESC)
_CHAR_NAMES = {" ": "space", "\r": "enter", "\n": "enter", "\t": "tab", "\x7f": "backspace",
               "\x08": "backspace", ",": "comma"}
_ESCAPE_NAMES = {"[C": "right", "OC": "right", "[D": "left", "OD": "left", "[A": "up",
                 "OA": "up", "[B": "down", "OB": "down", "[6~": "pagedown", "[5~": "pageup"}


def parse_keys(spec: str, option: str) -> tuple[str, ...]:
    """``"space,enter,n"`` -> canonical key names (a letter stands for both cases).  One-line
    ``KarutaError`` for an unknown name or an empty list."""
    out: list[str] = []
    for raw in spec.split(","):
        word = raw.strip()
        if not word:
            continue
        name = KEY_ALIASES.get(word.lower(), word.lower())
        if name not in KEY_NAMES and not (len(name) == 1 and name.isprintable()):
            raise KarutaError(f"{option} {spec!r}: unknown key {word!r} (use "
                              f"{', '.join(KEY_NAMES)} or one character)")
        if name not in out:
            out.append(name)
    if not out:
        raise KarutaError(f"{option} {spec!r}: name at least one key, e.g. {option} space,n")
    return tuple(out)


@dataclass(frozen=True)
class KeyBindings:
    """Which keys mean next and back (the other commands have fixed keys: ``FIXED_KEYS``)."""

    next: tuple[str, ...]
    back: tuple[str, ...]

    def command(self, name: str | None) -> str | None:
        """A key name (``_CHAR_NAMES`` / ``_ESCAPE_NAMES`` / one lower-case character) ->
        the command, or None."""
        if name is None:
            return None
        if name in self.next:
            return "next"
        if name in self.back:
            return "back"
        return FIXED_KEYS.get(name)

    def help(self) -> str:
        def show(names):
            return "/".join(KEY_NAMES.get(n, n) for n in names)

        return (f"{show(self.next)} next · p/h hold · r repeat 下の句 · {show(self.back)} back a "
                f"card · q quit (saved)")


def key_bindings(next_spec: str | None = None, back_spec: str | None = None) -> KeyBindings:
    """The bindings from ``--next-keys`` / ``--back-keys`` (None: the default set).  A key in
    both sets given explicitly is refused (one line); a set left at its default gives up the
    keys the other option names (``--next-keys b`` frees ``b`` from back).  The fixed keys
    (p h r q s) cannot be taken."""
    nxt = parse_keys(next_spec if next_spec is not None else DEFAULT_NEXT_KEYS, "--next-keys")
    back = parse_keys(back_spec if back_spec is not None else DEFAULT_BACK_KEYS, "--back-keys")
    both = [k for k in nxt if k in back]
    if both and next_spec is not None and back_spec is not None:
        raise KarutaError(f"key {both[0]!r} is in both --next-keys and --back-keys: give each "
                          "key one meaning")
    if next_spec is None:
        nxt = tuple(k for k in nxt if k not in back)
    else:
        back = tuple(k for k in back if k not in nxt)
    for option, other, keys in (("--next-keys", "--back-keys", nxt),
                                ("--back-keys", "--next-keys", back)):
        taken = [k for k in keys if k in FIXED_KEYS]
        if taken:
            raise KarutaError(f"{option}: {taken[0]!r} already means {FIXED_KEYS[taken[0]]}")
        if not keys:
            raise KarutaError(f"{other} took every default key of {option}: give {option} too")
    return KeyBindings(nxt, back)


DEFAULT_KEYS = key_bindings()


def key_name(char: str) -> str | None:
    """A character from the terminal -> its key name (None for ESC or a control key)."""
    if char in _CHAR_NAMES:
        return _CHAR_NAMES[char]
    if len(char) == 1 and char.isprintable():
        return char.lower()
    return None


# ---------------------------------------------------------------------------- terminal
def parse_escape(seq: str, bindings: KeyBindings = DEFAULT_KEYS) -> str | None:
    """A key sequence after ESC (``[C``, ``OD``, ``[6~`` ...) -> a command, or None."""
    return bindings.command(_ESCAPE_NAMES.get(seq))


def read_command(keys, timeout: float = 0.01, bindings: KeyBindings = DEFAULT_KEYS) -> str | None:
    """The next key from a ``KeyReader`` as a command (arrow / PageDown escapes decoded)."""
    key = keys.get(timeout=timeout)
    if key is None:
        return None
    if key.char != "\x1b":
        return bindings.command(key_name(key.char))
    seq = ""
    while len(seq) < 6:
        nxt = keys.get(timeout=0.03)
        if nxt is None:
            break
        seq += nxt.char
        if len(seq) >= 2 and (seq[-1].isalpha() or seq[-1] == "~"):
            break
    return parse_escape(seq, bindings) if seq else None


def screen_lines(v: ClubView, width: int = 100, bindings: KeyBindings = DEFAULT_KEYS) -> list[str]:
    """The terminal screen for a view."""
    lines = [v.title, "─" * min(width, 72)]
    if v.phase == "memorize" and v.countdown is not None:
        nxt = f" · signal in {_mmss(v.next_signal)}" if v.next_signal is not None else ""
        lines.append(f"memorisation  {_mmss(v.countdown)} left{nxt}    (s: skip to the jo-ka)")
        lines.append("practice swings allowed" if v.swings else "")
    else:
        card = f"card {v.card}/{v.total}" if v.card else f"card -/{v.total}"
        lines.append(f"{card}   ● {v.state}   read {v.read} · left {v.left}")
        if v.poem is not None:
            lines.append(f"  [{v.poem:3d}] {v.kami}  ({v.author}){'  空札' if v.karafuda else ''}")
            lines.append(f"  決まり字 {v.kimariji}  ({v.kimariji_sound})  at read time")
        else:
            lines += ["", ""]
    lines.append(v.message)
    lines.append("last read:")
    lines += ["  " + log_line(e) for e in v.recent] or ["  (none yet)"]
    lines += ["", "keys: " + bindings.help()]
    return [ln[:width] for ln in lines]


def run_terminal(session: ClubSession, *, out=None, keys=None,
                 bindings: KeyBindings = DEFAULT_KEYS) -> None:
    """The terminal front end: a redrawn screen on a tty (alternate screen), one line per
    change on a pipe.  Returns when the reading ends or the reader quits (always saved)."""
    from reader.terminal import KeyReader

    out = out or sys.stdout
    tty = out.isatty()
    own = keys is None
    keys = keys if keys is not None else KeyReader()
    last: list[str] | None = None
    last_head = None
    last_draw = 0.0
    try:
        if own:
            keys.__enter__()
        if tty:
            out.write("\x1b[?1049h\x1b[?25l")
        session.start()
        while session.phase not in ("finished", "quit"):
            try:
                session.command(read_command(keys, 0.01, bindings))
                session.tick()
            except KeyboardInterrupt:
                session.command("quit")
                session.message = "interrupted (saved)"
                break
            v = session.view()
            if tty:
                now = time.monotonic()
                lines = screen_lines(v, _width(), bindings)
                if lines != last or now - last_draw > 1.0:
                    out.write("\x1b[H" + "".join(ln + "\x1b[K\n" for ln in lines) + "\x1b[J")
                    out.flush()
                    last, last_draw = lines, now
            else:
                head = screen_lines(v)[2]
                if head != last_head and v.phase != "memorize":
                    out.write(head + "\n")
                    out.flush()
                    last_head = head
    finally:
        if tty:
            out.write("\x1b[?25h\x1b[?1049l")
            out.flush()
        session.close()
        if own:
            keys.__exit__(None, None, None)


def _width() -> int:
    import shutil

    return shutil.get_terminal_size((100, 30)).columns


# ---------------------------------------------------------------------------- wiring
def load_session(path: Path | str | None) -> tuple[SessionFile, dict]:
    sf = SessionFile(path or default_session_path())
    return sf, sf.load()


def open_club(opts: dict, *, build, resume: bool, session_path, memorize: float | None,
              signals: str | None, auto: bool, device, backend: str, window: bool,
              echo: Callable[[str], None], bindings: KeyBindings = DEFAULT_KEYS) -> int:
    """Run a club session from the CLI; returns the number of cards read.  ``bindings``: the
    next/back keys (``--next-keys`` / ``--back-keys``; not saved: ``--resume`` takes them
    from its own command line)."""
    if window:
        from reader.window import require_display

        require_display()
    if resume:
        given_voice = opts.get("voice_spec")
        sf, saved = load_session(session_path)
        opts = options_from_save(saved["options"])
        # the session's voice, not today's default; --voice given now wins
        if given_voice is not None:
            opts["voice_spec"] = given_voice
        elif opts.get("voice_spec") is None and saved.get("voice"):
            opts["voice_spec"] = saved["voice"]
        position, log, started = saved["position"], saved["log"], saved.get("started")
        auto = bool(saved.get("auto", auto))
    else:
        sf = SessionFile(session_path or default_session_path())
        position, log, started = 0, [], None
        if opts.get("seed") is None:  # fixed now: the session must rebuild the same order
            import secrets

            opts = dict(opts, seed=secrets.randbelow(1_000_000))
    from reader.session import open_output

    try:
        plan, voice = build(opts)
    except KarutaError as e:
        if not resume:
            raise
        raise SessionError(f"session {sf.path}: {e}; it was left as it is") from None
    if resume and list(plan.order) != list(saved["order"]):
        raise SessionError(f"session {sf.path}: the order rebuilt from seed {saved['seed']} does not "
                           "match the saved one (another karuta version?); it was left as it is")
    if memorize is None:
        memorize = 0.0 if resume else (1.0 if plan.rules == "goshiki" else 15.0)
    if memorize < 0:
        raise KarutaError("--memorize must not be negative")
    signals_s = parse_signals(signals, memorize) if memorize > 0 else ()
    output = open_output(backend, device, plan.sample_rate)  # before the last session is moved
    if not resume and sf.path.exists():
        _keep_previous(sf.path)
    message = ""
    if resume:
        message = (f"resuming at card {position + 1}/{len(plan.order)}" if position < len(plan.order)
                   else f"this session is finished: all {len(plan.order)} cards were read")
        echo(message)
    session = ClubSession(plan, voice, output, opts=opts, session=sf, auto=auto,
                          memorize_s=memorize * 60.0, signals_s=signals_s, position=position,
                          log=log, started=started, message=message,
                          echo=None if (not window and sys.stdout.isatty()) else echo)
    echo(f"{plan.rules} reading · {len(plan.order)} cards · seed {plan.seed} · session {sf.path}")
    if window:
        from reader.club_window import run_window

        run_window(session, bindings=bindings)
    else:
        run_terminal(session, bindings=bindings)
    for line in format_log(session.log, session.total, plan.seed):
        echo(line)
    if session.device_lost and session.phase != "finished":
        raise DeviceError(f"{session.device_lost}; stopped at card "
                          f"{min(session.position + 1, session.total)}/{session.total} (saved): "
                          f"`karuta read --resume` continues")
    if session.phase == "finished":
        echo(f"finished: {session.position} of {session.total} cards read")
    else:
        echo(f"stopped at card {min(session.position + 1, session.total)}/{session.total} "
             f"(saved): `karuta read --resume` continues")
    return session.position


def _keep_previous(path: Path) -> None:
    """A new session keeps the last one as previous.json (an unfinished one is not lost)."""
    try:
        os.replace(path, path.with_name("previous.json"))
    except OSError:
        pass


def show_log(session_path, echo: Callable[[str], None]) -> None:
    sf, saved = load_session(session_path)
    n = len(saved["order"])
    state = "finished" if saved["position"] >= n else f"next card {saved['position'] + 1}/{n}"
    echo(f"session {sf.path}: {saved.get('rules', '?')}, seed {saved['seed']}, {state}, "
         f"started {saved.get('started', '?')}")
    for line in format_log(saved["log"], n):
        echo(line)
