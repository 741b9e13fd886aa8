"""The club reading session (the state machine): ``karuta read --live`` / ``--window`` / ``--resume``.

A club reads for a room: the reader advances after each take, holds while a hand is up,
repeats the last 下の句, steps back a card when a key was pressed too early, shows the cards
read and left and the read log (each poem's kimariji *as it was when read*, for disputes),
and times the 15-minute memorisation before the jo-ka.  The session (settings, seed, order,
position, log) is saved after every card, so ``--resume`` continues after a crash, Ctrl-C or
a dead battery with the same order.

Who calls what::

    reader.cli.read.read ──> cli.club.open_club ──> ClubSession ──> club.terminal / club.window
                                               │  command("next"|"hold"|"repeat"|"back"|"quit"|"skip")
                                               │  tick()   (follows what is heard, saves, timer)
                                               └  view()   (a ``ClubView`` both front ends draw)

Pure parts (tested without sound), in their own modules: ``MemorizeTimer`` (``club.timer``;
the clock is passed in), ``SessionFile`` (``club.store``: save/load, one-line errors, older
versions upgraded), ``KeyBindings`` / ``key_bindings`` / ``read_key_name`` (``reader.ui.keys``:
which keys mean next and back — ``--next-keys`` / ``--back-keys``, for foot pedals — and the
arrow / PageDown escapes).

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

import math
from collections.abc import Callable
from dataclasses import dataclass

from audio.plan import Plan
from reader.base.clock import SYSTEM_CLOCK, Clock
from reader.base.errors import DeviceError
from reader.club.store import SESSION_KIND, SESSION_VERSION, SessionFile, now_iso
from reader.club.timer import ArrayCursor, MemorizeTimer, chime
from reader.reading.settings import reading_of
from reader.ui.term import pad


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
    #: what the reading opens with after the memorisation (``ClubSession.opens``)
    opens: str = "the jo-ka"

    @property
    def left(self) -> int:
        return self.total - self.read


def _mmss(seconds: float) -> str:
    s = int(math.ceil(max(0.0, seconds)))
    return f"{s // 60}:{s % 60:02d}"


def log_fields(e: dict) -> list[str]:
    """A read-log entry's columns: card, poem, kimariji, its sound, the poem's first ku, time
    and flags (空札, again).  ``log_line`` pads them to the terminal's columns; the window
    draws each at its own x."""
    flag = (" 空札" if e.get("karafuda") else "") + (" (again)" if e.get("again") else "")
    when = str(e.get("time", ""))[11:19]
    try:
        import poems

        first = poems.poem(int(e["poem"])).kanji[0]
    except Exception:
        first = ""
    return [f"{e.get('card', '?')}.", str(e["poem"]), e.get("kimariji", ""),
            f"({e.get('kimariji_sound', '')})", first, (when + flag).strip()]


#: display columns of the read log's padded fields: a kimariji (at most 6 kana), its sound in
#: brackets, a first ku (the widest of the hundred is 7 characters)
_LOG_COLUMNS = (4, 3, 13, 15, 13)


def log_line(e: dict) -> str:
    """One read-log line whose columns line up on a terminal whatever the kana's count."""
    card, poem, kim, snd, first, rest = log_fields(e)
    w = _LOG_COLUMNS
    return (f"{card:>{w[0]}} {poem:>{w[1]}} {pad(kim, w[2])}{pad(snd, w[3])}"
            f"{pad(first, w[4])}{rest}").rstrip()


def format_log(log: list[dict], total: int | None = None, seed=None) -> list[str]:
    cards = {e["card"] for e in log}  # (a saved log without them is refused when loaded)
    head = "read log" + (f" (seed {seed})" if seed is not None else "") + \
        (f": {len(cards)} of {total} cards" if total else "")
    return [head] + [log_line(e) for e in log]


class ClubSession:
    """One club reading on one output.  Not thread-safe: call everything from one thread.

    ``output``: an ``audio.output`` backend (opened before any synthesis: a missing device
    fails at once).  ``voice_spec``: the voice asked for (saved for ``--resume``; the reading
    settings and seed are the plan's own).  ``position``:
    cards already read (resume).  ``clock``: a ``reader.base.clock.Clock`` (the memorisation
    timer, the times in the saved session and its log).
    """

    def __init__(self, plan: Plan, voice, output, *, voice_spec: str | None, session: SessionFile,
                 auto: bool = False, memorize_s: float = 0.0, signals_s: tuple[float, ...] = (),
                 position: int = 0, log: list[dict] | None = None, started: str | None = None,
                 clock: Clock = SYSTEM_CLOCK, recent: int = 5, message: str = "",
                 echo: Callable[[str], None] | None = None, keys: dict | None = None):
        self.plan = plan
        self.keys = keys  # the next/back keys (KeyBindings.to_dict), saved for --resume
        self.voice = voice
        self.output = output
        self.voice_spec = voice_spec
        self.session = session
        self.auto = auto
        self.clock = clock
        self.recent_n = recent
        self.message = message
        self.echo = echo
        self.total = len(plan.order)
        self.position = position
        self._saved_at = position
        self.max_position = max([position] + [int(e.get("card", 0)) for e in (log or [])])
        self.log: list[dict] = list(log or [])
        self.started = started or now_iso(clock)
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
        # ``r`` once everything was sent to the device (the end still sounding): the last
        # 下の句 again once it has been heard out
        self._repeat_after_end = False
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
        self.output.wait(timeout=0)  # re-raises a voice or device failure of what was playing

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

    @property
    def running(self) -> bool:
        """Whether a front end goes on ticking: during the reading, and while the last 下の句
        asked for again as the reading ended is read."""
        return self.phase not in ("finished", "quit") or (self.phase == "finished"
                                                          and self.repeating)

    # ------------------------------------------------------------------ commands
    def command(self, cmd: str | None) -> None:
        if cmd == "repeat" and self.phase == "finished":
            self._repeat_last_shimo()
            return
        if (cmd == "repeat" and self.phase == "reading" and self.cursor is not None
                and self.cursor.state.finished):
            self._repeat_after_end = True  # all sent to the device, its end still heard
            return
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
                self.clock.seconds() - self._lost_at >= self.REOPEN_EVERY_S:
            self.reopen()

    def _lost(self, e: DeviceError) -> None:
        try:
            self.output.stop()
        except DeviceError:  # already gone: nothing more to stop
            pass
        self.phase = "lost"
        self.device_lost = str(e)
        self._lost_at = self.clock.seconds()
        self.save()
        self.message = (f"{e}: stopped at card {min(self.position + 1, self.total)}/{self.total} "
                        f"(saved) · next: try the device again · q: quit")
        if self.echo:
            self.echo(self.message)

    def reopen(self) -> None:
        """Try the device again and read on from the first card not heard to the end."""
        self._lost_at = self.clock.seconds()
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
                    self.message = f"memorisation over: {self.opens()} follows"
                    self._chime("end")
                    self._start_after_chime = True
            if self._start_after_chime and not self.output.is_active:
                self._start_after_chime = False
                self._begin_reading()
            return
        if self.phase == "finished":
            if self.repeating and not self.output.is_active:
                self.output.wait(timeout=0)  # re-raises a voice/device failure
                self.repeating = False
            return
        if self.phase != "reading" or self.cursor is None:
            return
        frame = self.output.frame_now()
        if frame is not None:
            seg, rep = self.cursor.segment_at(max(0, int(frame)))
            self.repeating = bool(rep)
            if rep and seg is not None:
                self.repeated = seg.poem
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
                if self._repeat_after_end:
                    self._repeat_last_shimo()

    def _repeat_last_shimo(self) -> None:
        """The reading's last 下の句 once more, after its end (players ask for it as the last
        card is taken): a stream of its own, the reading's log unchanged."""
        self._repeat_after_end = False
        shimo = next((seg for seg in reversed(self.plan.segments) if seg.kind == "shimo"), None)
        if shimo is None:
            return
        import numpy as np

        self._stop_output()
        data = np.asarray(self.voice.samples(shimo.speech), dtype=np.float32).reshape(-1)
        self.output.play(ArrayCursor(data, self.plan.sample_rate))
        self.repeating = True
        self.repeated = shimo.poem

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
                 "again": again, "time": now_iso(self.clock)}
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
            "reading": dict(self.plan.settings), "voice_spec": self.voice_spec,
            "seed": self.plan.seed, "rules": self.plan.rules, "voice": self.plan.voice,
            "order": list(self.plan.order), "total": self.total, "position": self.position,
            "finished": self.position >= self.total, "memorize_min": self.memorize_min,
            "auto": self.auto, "log": self.log, "started": self.started,
            "updated": now_iso(self.clock),
            **({"keys": self.keys} if self.keys is not None else {}),
        }

    def save(self) -> None:
        from reader.base.errors import OutputError

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
    #: the poem whose 下の句 is being read again (``r``), for the screen
    repeated: int | str | None = None

    def opens(self) -> str:
        """What the reading opens with, as the memorisation screens name it: "the jo-ka"
        (kyogi), "the announcement" (goshiki: it has no jo-ka), or "the first card"
        (--no-joka)."""
        for seg in self.plan.segments:
            if seg.poem == "joka":
                return "the jo-ka"
            if seg.poem == "announce":
                return "the announcement"
            if seg.kind in ("kami", "shimo"):
                break
        return "the first card"

    def _repeating_text(self) -> str:
        """ "repeating 下の句" naming which: the card, its number and the 下の句's first words."""
        poem = self.repeated
        if not isinstance(poem, int) or poem not in self.plan.order:
            return "repeating 下の句"
        import poems

        card = list(self.plan.order).index(poem) + 1
        return f"repeating 下の句 of card {card} [{poem}] {poems.poem(poem).kanji[3]}"

    def state_text(self) -> str:
        if self.phase == "memorize":
            return "memorisation" if not self._start_after_chime else "memorisation over"
        if self.phase == "finished":
            return self._repeating_text() if self.repeating else "finished"
        if self.phase == "quit":
            return "stopped (saved)"
        if self.phase == "lost":
            return "sound device lost (saved)"
        st = self.cursor.state if self.cursor is not None else None
        if self.held:
            return "held"
        if self.repeating:
            return self._repeating_text()
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
        # goshiki: the colour on screen (every table must have laid out that colour's cards)
        colours = {poems.color_of(n) for n in self.plan.order}
        rules = self.plan.rules + (f" {colours.pop()}" if reading_of(self.plan.rules).one_colour
                                   and len(colours) == 1 else "")
        return ClubView(
            phase=self.phase, state=self.state_text(), total=self.total, read=self.position,
            card=None if k is None else k + 1, poem=poem, kami=kami, author=author, kimariji=kim,
            kimariji_sound=snd, karafuda=kara, recent=tuple(self.log[-self.recent_n:][::-1]),
            countdown=countdown, swings=bool(t and t.swings),
            next_signal=(t.next_signal() - t.elapsed() if t and t.next_signal() is not None else None),
            message=self.message, opens=self.opens(),
            title=(f"karuta · {rules} · {self.total} cards · seed {self.plan.seed} · "
                   f"{self.plan.voice} voice"))
