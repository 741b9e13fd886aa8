"""The practice session: the live rules of a match, pure (no window, no sound, no clock).

Who calls what::

    karuta practice ──> headless.new_match ──> PracticeMatch (judges touches: reader.match.rules)
                                     │
                 PracticeSession ────┤  tick(now, heard, waiting_on, finished)
                 (this module)       │  touch(player, card, frame) · pick / send_default
                                     │  start_memorize(now) · start_reading()
                        ┌────────────┴─────────────┐
            practice.local.LocalTable       practice.headless.play  (--bot-vs-bot)
            (the board window's table: a     (the plan's own frames as the clock:
             real clock, the frame heard     nothing sleeps)
             from the DAC, clicks)

Both front ends hand the session the same things: ``now`` (seconds on any clock, for the
memorisation countdown and the end of the reading), ``heard`` (the plan frame reaching the
listener, calibration applied; ``None`` before anything was heard), ``waiting_on`` (the poem
whose take the reading stands waiting at, or ``None``) and ``finished`` (the reading has played
to its end).  Time is handed in as a value, not a ``reader.base.clock.Clock``: the session is
pure and runs on two time bases, the window's clock and (``--bot-vs-bot``) the plan's own
frames, where ``next_due`` works out when something is next due; a clock object would need a
second, settable clock in the app for the latter.  (The club session holds a ``Clock``: it
also opens the device, saves its file and retries a lost device on its own time.)  The
session tells them what happened through ``on_event(name, data)``:

- ``phase`` (``arrange`` → ``memorize`` → ``reading`` → ``over``): the window starts the
  reading's sound on ``reading`` and shows the end screen on ``over``;
- ``read`` (a ``Current``): a new read began;
- ``touch`` (a ``Judgement``): a touch was judged (a human's or a bot's);
- ``closed`` (a ``ReadClosed``): a read closed; its ``owed`` is a send a human still picks;
- ``done`` (a ``ReadClosed``): a read is over, sends made (the cards move; the log is saved).

When a read closes (one rule for the window and for ``--bot-vs-bot``):

- once the next 上の句 is heard (``Current.closes``): goshiki, and any read still open then;
- kyogi, once the take has settled: ``SETTLE_S`` after the take plus the simultaneous window
  (the gold frame shows, and a touch that came just after is still judged: ``dead``);
- kyogi, nobody took it: at the end of the wait after its 上の句 (the plan's ``take``
  segment, ``take_ms``; the frame heard counts on through a live wait);
- the last read, if still open: ``take_ms`` after the reading finished.

Once a read is over the status line tells what it was and who took it ("read 12: 37 しらつゆに ·
A took it"); that line stays until the next 上の句 is heard and at least ``READ_LINE_S`` (a
goshiki read closes as the next 上の句 starts), unless a touch in the new read has news first.

Bots' touches (``PracticeMatch.bot_touches``) are delivered when the frame heard reaches
theirs.  A human's send is picked on the board (``pick``) or the highlighted default taken
(``send_default``).  ``--hints``: ``dim`` holds the cards that no longer fit the morae heard.
"""
from __future__ import annotations

from collections.abc import Callable

from poems.kimariji import kami_heard
from reader.practice import view as V

__all__ = ["PracticeSession", "SETTLE_S", "READ_LINE_S", "RESUME_MEMORIZE_MIN", "morae_heard",
           "ruled_in", "memorize_minutes", "result_lines"]

#: a taken card's read closes this long after the take (and the simultaneous window), s
SETTLE_S = 0.4
#: a read's line ("read 12: 37 しらつゆに · A took it") stays at least this long once the read
#: is over, s, unless a touch has news first: a goshiki read closes when the next 上の句 starts
READ_LINE_S = 3.0


#: a resumed match's memorisation, minutes, unless the player sets it (``--memorize``): the
#: board as it stood, looked over again — at most the rules' own (goshiki 0.5)
RESUME_MEMORIZE_MIN = 2.0


def memorize_minutes(game, index: int, given: float | None) -> float:
    """The memorisation before the reading, minutes: ``given`` (``--memorize``), else the
    rules' (kyogi 15, goshiki 0.5), or for a resumed match (``index`` > 0 reads done) at most
    ``RESUME_MEMORIZE_MIN``."""
    if given is not None:
        return float(given)
    return game.memorize_min if index == 0 else min(game.memorize_min, RESUME_MEMORIZE_MIN)


def result_lines(m, humans) -> list[str]:
    """The end screen's two lines, said to the person at the board: ``["you won by 3",
    "left on the board: you 0, bot 2 3 · bot 2 played at level 2.4 this match"]`` (kyogi
    counts the cards left, goshiki the cards taken: "you lost 0-17"); two players at one board
    are named by their sides ("A (near side) won by 3"); alone, the score."""
    st, game = m.state, m.game
    humans = tuple(humans)
    n = len(m.closed)
    if st.solo:
        taken, missed, faults = st.solo_score()
        first = (f"alone: {taken} taken, {missed} missed, {faults} fault"
                 f"{'s' if faults != 1 else ''} ({n} read{'s' if n != 1 else ''})")
        return [first, f"left on the board: {game.left_alone(st, m.deal)}"]

    def name(p):
        if len(humans) == 1:
            return "you" if p in humans else _seat_name(m, p)
        if len(humans) == 2:
            return f"{p} ({'near' if p == 'A' else 'far'} side)"
        return _seat_name(m, p)

    me = humans[0] if len(humans) == 1 else "A"
    other = "B" if me == "A" else "A"
    count = {p: st.count(p) for p in m.players}
    out = m.outcome()
    if out is None:
        first = f"not finished ({n} read{'s' if n != 1 else ''})"
    elif out.winner == "draw":
        first = f"a draw, {count[me]}-{count[other]}"
    else:
        w = out.winner
        lost = w != me
        if game.territories:  # kyogi: won by the cards left on the loser's side
            margin = count[other if not lost else me]
            said = f"by {margin}"
        else:  # goshiki: cards taken, the person's own count first
            said = f"{count[me]}-{count[other]}"
        if len(humans) == 1:
            first = f"you {'lost' if lost else 'won'} {said}"
        else:
            if not game.territories:
                said = f"{count[w]}-{count[other if w == me else me]}"
            first = f"{name(w)} won {said}"
    counts = ", ".join(f"{name(p)} {count[p]}" for p in m.players)
    second = f"{'left on the board' if game.territories else 'taken'}: {counts}"
    forms = [f"bot {m.seats[p].level} played at level {x:.1f} this match"
             for p, x in sorted(m.skill.items())]
    return [first, " · ".join([second] + forms)]


def _seat_name(m, p) -> str:
    seat = m.seats[p]
    return f"bot {seat.level}" if seat.kind == "bot" else f"player {p}"


# ------------------------------------------------------------------------------ live narrowing
def morae_heard(morae: tuple[int, ...], start: int, heard: float) -> int:
    """How many morae of a 上の句 have begun by plan frame ``heard`` (``morae``: their onset
    frames, from the voice's layout)."""
    if heard < start:
        return 0
    return sum(1 for f in morae if f <= heard)


def ruled_in(cards, read_poem: int, k: int) -> frozenset[int]:
    """The cards of ``cards`` that can still be ``read_poem`` once its first ``k`` morae were
    heard: those whose 上の句 opens with the same ``k`` sounds (as heard: を→お, あふ→おお ...).
    ``--hints`` dims the others."""
    said = kami_heard(read_poem)[:k]
    return frozenset(c for c in cards if kami_heard(c)[:k] == said)


class PracticeSession:
    """One match's live rules (see the module doc).  ``m``: a ``PracticeMatch``;
    ``memorize_s``: the memorisation, seconds; ``release()``: lets the reading go on after a
    wait (the window's ``PlanCursor.release``).  Not thread-safe: one thread calls it all."""

    def __init__(self, m, *, memorize_s: float = 0.0, hints: bool = False,
                 on_event: Callable[[str, object], None] | None = None,
                 release: Callable[[], None] | None = None, mirror: bool = False,
                 here: tuple[str, ...] | None = None):
        self.m = m
        #: a mirror of a match judged elsewhere (an online guest's): ``tick`` only follows
        #: the reading (the counter, the read line's time, hints); no bot touches, no read
        #: closed here -- the judge's news comes in through ``closed_read``, ``shown``, ``end``
        self.mirror = mirror
        self.game = m.game
        self.memorize_s = float(memorize_s)
        self.hints = hints
        self.on_event = on_event or (lambda name, data: None)
        self.release = release or (lambda: None)
        self.humans = tuple(p for p, s in m.seats.items() if s.kind == "human")
        #: the players at this screen ("you" when there is one): the humans, unless online
        self.here = self.humans if here is None else tuple(here)
        self.rate = m.plan.sample_rate
        self.take_s = m.plan.settings.get("take_ms", 3000) / 1000.0
        self.settle_frames = round(SETTLE_S * self.rate)
        self.read_line_frames = round(READ_LINE_S * self.rate)
        self.phase = "arrange" if m.index == 0 else "memorize"
        #: what the board shows besides the cards: ``marks`` (card -> "take" / "fault" / "send"),
        #: ``dim`` (``--hints``), the status line (``line``, typed: ``reader.practice.view``)
        #: and the judgement under it (``verdict``); ``status``: the two in English
        self.marks: dict[int, str] = {}
        self.dim: frozenset[int] = frozenset()
        self.line: V.Line = V.Notice("")
        self.verdict: V.Verdict | None = None
        self._news: V.Verdict | None = None  # a judgement not shown yet (at the next tick)
        self._dim_key = None
        self._memo_end: float | None = None
        self._read_index: int | None = None
        self._bots: list[tuple[str, int, int]] = []
        self._bot_i = 0
        self._heard_k = -1
        self._status_at: int | None = None
        self._heard: float = 0.0  # the last frame heard (a read closes there)
        self._told_at: float | None = None  # the frame the last read's line was put up
        self._finished_at: float | None = None
        self._picked: list[int] = []
        self._owed_poem: int | None = None
        self._done: set[int] = set()  # poems whose read is over (sends made)
        self._waits = {s.poem: seg for i, s in enumerate(m.plan.segments)
                       if s.kind == "kami" for seg in m.plan.segments[i + 1:i + 2] if seg.wait}

    # -- phases -------------------------------------------------------------------------------
    def _set_phase(self, phase: str) -> None:
        self.phase = phase
        self.on_event("phase", phase)

    def start_memorize(self, now: float) -> None:
        """The board is arranged (or a resumed match's board is up): the memorisation
        countdown starts at ``now``."""
        if self.phase == "arrange" or (self.phase == "memorize" and self._memo_end is None):
            self._memo_end = now + self.memorize_s
            self._set_phase("memorize")

    @property
    def memorize_started(self) -> bool:
        """The memorisation countdown runs (or ran): a resumed match's starts at its first
        tick, or at ``start_memorize``."""
        return self._memo_end is not None

    def start_reading(self) -> None:
        """Memorisation over (or skipped): the reading begins."""
        if self.phase in ("arrange", "memorize"):
            self._say(V.Notice(""))
            self._set_phase("reading")

    @property
    def status(self) -> str:
        """The status line in English (``view.status_text``)."""
        return V.status_text(self.line, self.verdict)

    def _say(self, line) -> None:
        """A new status line (the judgement under the last one goes with it)."""
        self.line = line
        self.verdict = None

    def memorize_left(self, now: float) -> float:
        return 0.0 if self._memo_end is None else self._memo_end - now

    @property
    def resumed(self) -> bool:
        """The match was resumed from its log: no arranging (the cards lie as they were), the
        memorisation starts at the first tick."""
        return self.m.index > 0

    @property
    def over(self) -> bool:
        return self.phase == "over"

    # -- the reading --------------------------------------------------------------------------
    def tick(self, now: float, heard: float | None, waiting_on: int | None = None,
             finished: bool = False) -> None:
        """Do what is due at ``now`` with plan frame ``heard`` reaching the listener: the
        memorisation's end; a new read; bots' touches; hints; closing reads."""
        if self.phase == "arrange":
            self._say(V.Arrange())
        elif self.phase == "memorize":
            if self._memo_end is None:  # (resumed: the board is shown from now on)
                self._memo_end = now + self.memorize_s
            left = self.memorize_left(now)
            if left <= 0:
                self.start_reading()
            else:
                self._say(V.Memorize(left, self.m.index + 1 if self.resumed else None))
        if self.phase != "reading":
            return
        m = self.m
        if finished and self._finished_at is None:
            self._finished_at = now
        # the kyogi wait after a 上の句 whose read is over (taken, sends made): go on
        if (not self.mirror and waiting_on is not None and waiting_on in self._done
                and m.owed_send() is None and m.outcome() is None):
            self.release()
        while self.phase == "reading" and self._step(now, heard):
            pass
        if self._news is not None and self.phase == "reading":
            self._show_news()

    def _show_news(self) -> None:
        cur = self.m.current()
        if self._status_at is not None and cur is not None:
            self._status_at = None  # the last read's line gives way to this read's news
            self._say(self._counter(cur))
        self.verdict, self._news = self._news, None

    def _step(self, now: float, heard: float | None) -> bool:
        """One pass over the current read; True if a read closed (the next may be due too)."""
        m = self.m
        cur = m.current()
        if cur is None:
            owed = m.owed_send()
            if owed is None:
                self._set_phase("over")
            return False
        if cur.index != self._read_index:
            self._new_read(cur)
        if heard is None:
            return False
        self._heard = heard
        if self._status_at is not None and heard >= self._status_at:
            self._status_at = None
            self._say(self._counter(cur))
        if self.hints:
            self.dim = self.dim_at(heard)
        if self.mirror:
            return False
        while self._bot_i < len(self._bots) and self._bots[self._bot_i][2] <= heard:
            p, card, f = self._bots[self._bot_i]
            self._bot_i += 1
            if cur.closes is None or f < cur.closes:
                self._judged(m.touch(p, card, f))
        due, at = self._closing(cur, now, heard)
        if due:
            self._close(at)
            return True
        return False

    def _closing(self, cur, now: float, heard: float) -> tuple[bool, int | None]:
        """(whether the read closes now, the frame it closes at: touches from it on do not
        count; ``None``: all count)."""
        if cur.closes is not None and heard >= cur.closes:
            return True, cur.closes
        settled = self.m.settled_at()
        if settled is not None:
            at = settled + self.settle_frames
            return heard >= at, at
        wait = self._waits.get(cur.poem)
        if wait is not None and heard >= wait.end:
            return True, wait.end
        if (cur.closes is None and self._finished_at is not None
                and now - self._finished_at >= self.take_s):
            return True, None
        return False, None

    def dim_at(self, heard: float | None) -> frozenset[int]:
        """``--hints``: the cards on the board that the morae heard by plan frame ``heard`` rule
        out (none while a send is owed, or nothing is heard).  Each screen asks at the frame
        it hears: an online host's judge runs behind its player's ears."""
        m = self.m
        cur = m.current()
        if cur is None or heard is None or m.owed_send() is not None:
            self._dim_key, self._dim = None, frozenset()
            return self._dim
        key = (cur.index, morae_heard(cur.morae, cur.start, heard))
        if key != self._dim_key:
            on = [c for cs in m.board.values() for c in cs]
            self._dim_key, self._dim = key, frozenset(on) - ruled_in(on, cur.poem, key[1])
        return self._dim

    def next_due(self, heard: float, now_of: Callable[[float], float]) -> float | None:
        """The next frame after ``heard`` at which ``tick`` has something to do, if the
        clock is the plan's own (``now_of(frame)``: the clock at that frame): the headless
        player's next step.  ``None``: nothing more will happen by itself."""
        m = self.m
        cur = m.current()
        if cur is None or self.phase != "reading":
            return None
        due = [f for _, _, f in self._bots[self._bot_i:]]
        if cur.closes is not None:
            due.append(cur.closes)
        settled = m.settled_at()
        if settled is not None:
            due.append(settled + self.settle_frames)
        elif cur.poem in self._waits:
            due.append(self._waits[cur.poem].end)
        if cur.closes is None:
            end = m.plan.frames
            if self._finished_at is None:
                due.append(end)
            else:
                due.append(_frame_when(lambda f: now_of(f) - self._finished_at >= self.take_s,
                                       end))
        later = [f for f in due if f > heard]
        return min(later) if later else None

    def _new_read(self, cur) -> None:
        self._read_index = cur.index
        self._bots = [] if self.mirror else self.m.bot_touches()
        self._bot_i = 0
        self.dim = frozenset()
        self.marks = {}
        # the last read's line stays until this 上の句 is heard, and at least READ_LINE_S
        self._status_at = cur.start if self._told_at is None else \
            max(cur.start, round(self._told_at) + self.read_line_frames)
        self.on_event("read", cur)

    def _counter(self, cur) -> V.Counter:
        m = self.m
        return V.Counter(cur.index + 1, self.game.reads_due(m.state, len(m.order), cur.index))

    def _close(self, at: int | None) -> None:
        self.closed_read(self.m.close_read(at))

    def closed_read(self, closed) -> None:
        """A read closed (``PracticeMatch.close_read`` or ``send``; here, or by the judge of an
        online match on another machine, whose mirror this session shows): the send owed, or
        the read done."""
        m = self.m
        self.on_event("closed", closed)
        owed = closed.owed
        if owed is None:
            self._read_done(closed)
            return
        self._owed_poem = closed.poem
        default = m.suggest_send(owed.sender, owed.count)
        self.marks = {c: "send" for c in default}
        self._say(V.Owes(owed.sender, owed.count, self.here == (owed.sender,)))

    def _read_done(self, closed) -> None:
        m = self.m
        self._done.add(closed.poem)
        self.marks = {}
        took = closed.event.took
        kim = closed.timing.get("kimariji", "") if closed.timing else ""
        # what the read was, now that it is over (never while it is live: that would tell)
        self._say(V.ReadOver(closed.index + 1, closed.poem, kim,
                             took if took in ("A", "B", "both") else None,
                             m.deal.owner(closed.poem) is None,
                             tuple(self.game.sent(closed.event))))
        self._told_at = self._heard
        self._news = None  # (the judgement's line belonged to the read now told)
        self.on_event("done", closed)
        if m.current() is None and m.owed_send() is None:
            self._set_phase("over")

    # -- input --------------------------------------------------------------------------------
    def touch(self, player: str, card: int, frame: float | None, note: dict | None = None):
        """A human's touch on ``card`` heard at plan ``frame``: judged (a ``Judgement``), or,
        while ``player`` owes a send, a card picked to send; ``None`` if it did nothing.
        ``note``: logged beside the touch (``PracticeMatch.touch``)."""
        if self.phase != "reading" or player not in self.humans:
            return None
        owed = self.m.owed_send()
        if owed is not None:
            self.pick(player, card)
            return None
        if frame is None:
            return None
        j = self.m.touch(player, card, int(round(frame)), note)
        self._judged(j)
        return j

    def pick(self, player: str, card: int) -> None:
        """``player`` picks ``card`` to send (the send is made once enough are picked)."""
        owed = self.m.owed_send()
        if owed is None or player != owed.sender or card == self._owed_poem:
            return
        if card not in self.m.board[owed.sender] or card in self._picked:
            return
        self._picked.append(card)
        if len(self._picked) >= owed.count:
            picked, self._picked = self._picked[:owed.count], []
            self._send(owed.sender, picked)

    def send_default(self) -> None:
        """Send the highlighted cards (the bot's choice) for the human who owes a send."""
        owed = self.m.owed_send()
        if owed is not None and self.phase == "reading":
            self._send(owed.sender, self.m.suggest_send(owed.sender, owed.count))

    def unpick(self) -> None:
        """Forget the cards picked so far for a send (a send refused: pick again)."""
        self._picked = []

    def _send(self, sender: str, cards) -> None:
        self._read_done(self.m.send(sender, cards))

    def _judged(self, j) -> None:
        self.on_event("touch", j)
        self._mark(j.player, j.card, j.verdict, j.reaction_ms)

    def judged(self, j) -> None:
        """A touch the judge judged outside ``touch`` (an online host's, while a send is
        owed: "moving"): told and shown as any."""
        self._judged(j)

    def _mark(self, player: str, card: int, verdict: str, reaction_ms) -> None:
        if verdict in ("take", "fault"):
            self.marks[card] = verdict
        if verdict in ("take", "fault", "miss", "late"):
            self._news = V.Verdict(player, verdict, reaction_ms, self.here == (player,))

    def shown(self, player: str, card: int, verdict: str) -> None:
        """A mirror: the judge's verdict on a touch (an online host's ``judged``), shown at
        once under the read it belongs to."""
        self._mark(player, card, verdict, None)
        if self._news is not None:
            cur = self.m.current()
            if cur is not None:  # under the read still open, not the last read's outcome
                self._status_at = None
                self._say(self._counter(cur))
            self.verdict, self._news = self._news, None

    def notice(self, text: str) -> None:
        """A line from outside the rules (the network, the sound) on the status line."""
        self._say(V.Notice(str(text)[:120]))

    def waiting(self, what: str) -> None:
        """Online: the status line says what this screen waits for (``view.Waiting``)."""
        self._say(V.Waiting(what))

    def end(self) -> None:
        """A mirror: the judge says the match is over."""
        if self.phase != "over":
            self._set_phase("over")

    # -- what the panels say ------------------------------------------------------------------
    def panels(self) -> dict[str, str]:
        """The side panels' text: ``near`` (A) and ``far`` (B)."""
        m = self.m
        st = m.state
        out = {}
        for p, name in (("A", "near"), ("B", "far")):
            seat = m.seats[p]
            if st.solo:
                if p == "A":
                    taken, missed, faults = st.solo_score()
                    out[name] = (f"alone\n{self.game.left_alone(st, m.deal)} left\n{taken} taken\n"
                                 f"{missed} missed\n{faults} fault{'s' if faults != 1 else ''}")
                continue
            who = {"human": "you" if len(self.humans) == 1 else f"player {p}",
                   "bot": f"bot {seat.level}", "none": "(empty)"}[seat.kind]
            out[name] = f"{p} · {who}\n{st.count(p)} {self.game.count_word}"
        return out


def _frame_when(holds: Callable[[float], bool], start: float) -> float:
    """The first whole frame from ``start`` at which ``holds(frame)`` (a monotone test)."""
    lo, hi = int(start), int(start) + 1
    while not holds(hi):
        lo, hi = hi, hi + 2 * (hi - lo)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if holds(mid) else (mid, hi)
    return hi
