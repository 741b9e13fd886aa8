"""``karuta drill memory``: which torifuda goes with which 上の句 / kimariji, and the reverse.

Layers (top calls down)::

    memory (click command)   parse options, open StatsDB, plan the session, pick a front end
      run_terminal / run_window   show a question, time the answer, show the verdict
        MemorySession            next_question() -> answer() -> ... ; each answer is an FSRS
                                 review committed to the stats DB before the next question
          reader.memory.deck          questions, distractors, scheduling (pure)

Time: a ``reader.base.clock.Clock`` is passed in (``now()`` an aware datetime for schedules
and the log, ``ms()`` for response times); tests hand in the fake one.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, TYPE_CHECKING

from reader.base.clock import Clock


if TYPE_CHECKING:  # heavy imports stay inside functions at run time
    import random

    from reader.memory.deck import MemoryDeck, Question, SessionPlan
    from reader.drills.stats import StatsDB

__all__ = ["Answer", "MemorySession", "run_terminal", "run_window"]

#: a poem answered wrongly is asked again this many questions later (once per session)
REQUEUE_GAP = 3


@dataclass(frozen=True)
class Answer:
    question: Question
    chosen: int | None  # index into question.choices
    response_ms: float | None
    correct: bool
    rating: str  # Again / Hard / Good / Easy
    due: datetime  # when the poem comes back


@dataclass
class MemorySession:
    """One drill session over a ``SessionPlan``.

    ``next_question()`` gives the next question or None at the end; ``answer()`` reviews the
    poem's FSRS card and commits the review to the database, then returns the ``Answer``.  A poem
    answered wrongly is asked again ``REQUEUE_GAP`` questions later (once).
    """

    db: StatsDB
    deck: MemoryDeck
    plan: SessionPlan
    session_id: str
    rng: random.Random
    modes: Sequence[str] = ("kami",)  # one mode, or several to pick from at random
    n_choices: int = 4
    universe: Sequence[int] = tuple(range(1, 101))
    answers: list[Answer] = field(default_factory=list)

    def __post_init__(self):
        self._queue = list(self.plan.poems)
        self._requeued: set[int] = set()
        self._open = 0  # 1 while a question has been given and not answered

    @property
    def remaining(self) -> int:
        return len(self._queue)

    @property
    def position(self) -> int:
        return len(self.answers) + 1

    @property
    def total(self) -> int:
        return len(self.answers) + self._open + len(self._queue)

    def next_question(self) -> Question | None:
        from reader.memory.deck import make_question

        if not self._queue:
            return None
        no = self._queue.pop(0)
        self._open = 1
        mode = self.modes[0] if len(self.modes) == 1 else self.rng.choice(list(self.modes))
        return make_question(no, mode, self.rng, universe=self.universe, n_choices=self.n_choices)

    def answer(self, q: Question, chosen: int | None, response_ms: float | None, now: datetime) -> Answer:
        from reader.memory.deck import state_name

        correct = q.is_correct(chosen)
        self._open = 0
        card, rating = self.deck.review(q.poem, correct, response_ms, q.mode, now)
        self.db.record_review(
            self.session_id, q.poem, now, mode=q.mode, correct=correct, response_ms=response_ms,
            rating=int(rating), chosen=None if chosen is None else q.choices[chosen],
            state=state_name(card.state), due=card.due, stability=card.stability,
            card_json=card.to_json(),
        )
        if not correct and q.poem not in self._requeued:
            self._requeued.add(q.poem)
            self._queue.insert(min(REQUEUE_GAP, len(self._queue)), q.poem)
        a = Answer(q, chosen, response_ms, correct, rating.name, card.due)
        self.answers.append(a)
        return a

    def summary(self) -> str:
        right = sum(a.correct for a in self.answers)
        return f"answered {len(self.answers)}, right {right}"


def _verdict(a: Answer) -> str:
    secs = "" if a.response_ms is None else f"{a.response_ms / 1000:.2f} s, "
    if a.correct:
        return f"○ right ({secs}{a.rating}) — kimariji {a.question.kimariji}"
    q = a.question
    return (f"× wrong ({secs}{a.rating}): it was {q.answer + 1}) {q.choice_texts[q.answer]}"
            f" — kimariji {q.kimariji}")


def _question_text(q: Question, pos: int, total: int) -> str:
    label = {"kami": "上の句", "kimariji": "決まり字", "reverse": "取り札"}[q.mode]
    lines = [f"[{pos}/{total}] {label}: {q.prompt}"]
    lines += [f"  {i + 1}) {t}" for i, t in enumerate(q.choice_texts)]
    return "\n".join(lines)


# -- terminal ----------------------------------------------------------------------------------

def _next_key(keys) -> str | None:
    """One key from a ``reader.ui.keys.KeyReader`` (a terminal: as pressed; a pipe: character
    by character), or None at the end of input."""
    while True:
        key = keys.get(timeout=0.5)
        if key is not None:
            return key.char
        if keys.closed:
            return None


def run_terminal(session: MemorySession, clock: Clock, stdin: IO[str], out: IO[str]) -> None:
    """Ask every question on the terminal.  Keys: 1..N answer, q (or end of input) stops."""
    def say(text: str = "", end: str = "\n") -> None:
        out.write(text + end)
        out.flush()

    from reader.ui.keys import KeyReader

    with KeyReader(stdin) as keys:  # (its stamps are not used: the answer is timed here)
        while (q := session.next_question()) is not None:
            say(_question_text(q, session.position, session.total))
            say(f"answer 1-{len(q.choices)} (q to stop): ", end="")
            t0 = clock.ms()
            while True:
                try:
                    key = _next_key(keys)
                except KeyboardInterrupt:
                    key = None
                if key is not None and key.isspace():  # Enter after a digit (a pipe's lines)
                    continue
                t1 = clock.ms()
                if key is None or key.lower() in ("q", "\x1b"):
                    say()
                    return
                if key.isdigit() and 1 <= int(key) <= len(q.choices):
                    break
                say(f"\n(type a digit 1-{len(q.choices)}, or q) ", end="")
            say(key)  # echo (a cbreak terminal does not; a pipe has none)
            a = session.answer(q, int(key) - 1, t1 - t0, clock.now())
            say(_verdict(a))
            say()


# -- window ------------------------------------------------------------------------------------

WINDOW_SIZE = (1100, 760)


def _layout(q: Question, size: tuple[int, int]):
    """Rects: (prompt rect, [choice rects]).  Cards side by side for torifuda choices; lines of
    上の句 (with the torifuda prompt as a card on the left) in reverse mode."""
    import pygame

    w, h = size
    n = len(q.choices)
    if q.choices_are_torifuda:
        prompt = pygame.Rect(40, 30, w - 80, 150)
        gap = 24
        card_w = min(200, (w - 80 - gap * (n - 1)) // n)
        card_h = min(int(card_w * 1.4), h - 260)
        card_w = int(card_h / 1.4)
        left = (w - (card_w * n + gap * (n - 1))) // 2
        rects = [pygame.Rect(left + i * (card_w + gap), 220, card_w, card_h) for i in range(n)]
    else:
        prompt = pygame.Rect(40, 60, 230, 322)
        top, row = 60, min(110, (h - 100) // n)
        rects = [pygame.Rect(310, top + i * row, w - 350, row - 16) for i in range(n)]
    return prompt, rects


def _draw(screen, q: Question, pos: int, total: int, answer: Answer | None = None) -> list:
    import pygame

    from reader.ui.torifuda import draw_torifuda
    from reader.ui.choices import answer_frames, draw_choices, draw_verdict
    from reader.ui.window import BACKGROUND, PAPER, draw_text, load_font

    screen.fill(BACKGROUND)
    small, big = load_font(22), load_font(44)
    prompt, rects = _layout(q, screen.get_size())
    label = {"kami": "上の句", "kimariji": "決まり字", "reverse": "取り札"}[q.mode]
    draw_text(screen, f"{pos}/{total}  {label} → {'取り札' if q.choices_are_torifuda else '上の句'}",
              small, pygame.Rect(10, 4, 600, 30))
    if q.prompt_is_torifuda:
        draw_torifuda(screen, prompt, q.poem)
    else:
        draw_text(screen, q.prompt, big, prompt, center=True)
    # the same frames as the speed drill's (reader.ui.choices): the right one green, a wrong
    # pick red
    frames = (answer_frames(len(q.choices), q.answer, answer.chosen) if answer is not None
              else None)
    if q.choices_are_torifuda:
        draw_choices(screen, rects, q.choices, big, frames)
    else:
        for i, (r, text) in enumerate(zip(rects, q.choice_texts)):
            color = frames[i] if frames else None
            pygame.draw.rect(screen, PAPER, r, border_radius=8)
            if color:
                pygame.draw.rect(screen, color, r, width=6, border_radius=8)
            draw_text(screen, f"{i + 1}  {text}", load_font(32), r.inflate(-24, -24), color=(20, 20, 20))
    if answer is not None:
        draw_verdict(screen, answer.correct, f"決まり字 {q.kimariji}", big,
                     pygame.Rect(0, screen.get_height() - 70, screen.get_width(), 60))
    pygame.display.flip()
    return rects


def run_window(
    session: MemorySession, clock: Clock, out: IO[str], *, feedback_ms: float = 900,
    on_question: Callable[[Question, list], None] | None = None,
) -> None:
    """Ask every question in a pygame window.  Keys 1..N or a click on a choice answer;
    Esc, q or closing the window stops.  Verdicts are also echoed to ``out``.

    ``on_question(question, choice_rects)`` is called once each question is on screen (tests
    post their input events there).
    """
    from reader.ui.window import import_pygame, open_window, poll_events

    pygame = import_pygame()

    screen = open_window(WINDOW_SIZE, "karuta drill memory")
    digit_keys = {getattr(pygame, f"K_{d}"): d for d in range(1, 10)}
    digit_keys.update({getattr(pygame, f"K_KP{d}"): d for d in range(1, 10)})
    redraw_events = {pygame.VIDEOEXPOSE, pygame.WINDOWEXPOSED, pygame.WINDOWSHOWN}

    def wait_choice(q: Question, rects: list) -> tuple[int, float] | None:
        """(chosen index, stamp ms), or None to stop."""
        while True:
            for stamp, ev in poll_events(clock):
                if ev.type == pygame.QUIT:
                    return None
                if ev.type in redraw_events:  # shown, uncovered: SDL keeps the surface, show it again
                    pygame.display.flip()
                if ev.type == pygame.KEYDOWN:
                    if ev.key in (pygame.K_ESCAPE, pygame.K_q):
                        return None
                    d = digit_keys.get(ev.key)
                    if d is not None and d <= len(q.choices):
                        return d - 1, stamp
                if ev.type == pygame.MOUSEBUTTONDOWN and ev.button == 1:
                    for i, r in enumerate(rects):
                        if r.collidepoint(ev.pos):
                            return i, stamp
            pygame.time.wait(1)  # poll about every ms: stamps are taken off the queue

    try:
        while (q := session.next_question()) is not None:
            pos, total = session.position, session.total
            rects = _draw(screen, q, pos, total)
            t0 = clock.ms()
            if on_question is not None:
                on_question(q, rects)
            got = wait_choice(q, rects)
            if got is None:
                return
            chosen, stamp = got
            a = session.answer(q, chosen, stamp - t0, clock.now())
            out.write(_question_text(q, pos, total) + "\n" + _verdict(a) + "\n\n")
            out.flush()
            _draw(screen, q, pos, total, a)
            end = clock.ms() + feedback_ms
            while clock.ms() < end:
                for _, ev in poll_events(clock):
                    if ev.type == pygame.QUIT or (
                            ev.type == pygame.KEYDOWN and ev.key in (pygame.K_ESCAPE, pygame.K_q)):
                        return
                pygame.time.wait(5)
    finally:
        pygame.display.quit()


# -- command -------------------------------------------------------------------------------------
