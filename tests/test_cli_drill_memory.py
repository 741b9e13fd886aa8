"""``karuta drill memory`` end to end: piped stdin, a real tty (tmux), a killed process, the
window (SDL dummy driver with posted events, and one real Xvfb window driven by xdotool)."""
from __future__ import annotations

import os
import random
import re
import select
import shlex
import shutil
import sqlite3
import subprocess
import time
from datetime import datetime, timedelta, timezone
from io import StringIO
from pathlib import Path

import pytest
from cli_run import karuta_argv, karuta_env
from fakes import FakeClock
from testbed.x_driver import colours, screenshot_when, window_of

from poems import all_poems, poem
from reader.drills.memory_drill import MemorySession, run_terminal, run_window
from reader.memory.deck import MemoryDeck
from reader.drills.stats import DB_NAME, StatsDB

ROOT = Path(__file__).resolve().parents[1]
NO_DISPLAY_LINE = "karuta: no display for --window: run without --window to drill in the terminal"
T0 = datetime(2025, 4, 1, 9, 0, tzinfo=timezone.utc)


def karuta(*args: str) -> list[str]:
    return karuta_argv(*args)


def clean_env(data_dir: Path, **extra: str) -> dict[str, str]:
    return karuta_env(extra, data_dir=data_dir)


def db_reviews(data_dir: Path) -> list[tuple[int, int, str]]:
    raw = sqlite3.connect(data_dir / DB_NAME)
    try:
        return raw.execute("SELECT poem, correct, mode FROM reviews ORDER BY id").fetchall()
    finally:
        raw.close()


# -- answering like a player who knows every card ----------------------------------------------

_KAMI = {"　".join(p.kami_kanji): p.no for p in all_poems()}
_TORI = {p.torifuda: p.no for p in all_poems()}
_KIM = {p.kimariji: p.no for p in all_poems()}
_Q = re.compile(r"\[(\d+)/(\d+)\] (上の句|決まり字|取り札): (.+)\n((?:  \d\) .+\n)+)")


def solve(transcript: str, wrong: bool = False) -> tuple[int, int]:
    """(poem, digit to type) for the last question in ``transcript``."""
    m = list(_Q.finditer(transcript))[-1]
    kind, prompt = m.group(3), m.group(4)
    texts = [ln.split(") ", 1)[1] for ln in m.group(5).splitlines()]
    if kind == "取り札":
        no = _TORI[prompt]
        want = "　".join(poem(no).kami_kanji)
    else:
        no = _KAMI[prompt] if kind == "上の句" else _KIM[prompt]
        want = poem(no).torifuda
    right = texts.index(want)
    pick = (right + 1) % len(texts) if wrong else right
    return no, pick + 1


class Reader:
    """Reads a child's stdout pipe without blocking; ``expect`` waits for a pattern."""

    def __init__(self, proc: subprocess.Popen):
        self.proc, self.text, self.pos = proc, "", 0
        self._raw = b""

    def expect(self, pattern: str, timeout: float = 30.0) -> re.Match:
        end = time.monotonic() + timeout
        rx = re.compile(pattern)
        while True:
            m = rx.search(self.text, self.pos)
            if m:
                self.pos = m.end()
                return m
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for {pattern!r}; got:\n{self.text}")
            r, _, _ = select.select([self.proc.stdout], [], [], min(left, 0.2))
            if r:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk and self.proc.poll() is not None:
                    raise AssertionError(f"process ended waiting for {pattern!r}; got:\n{self.text}")
                self._raw += chunk
                self.text = self._raw.decode("utf-8", errors="replace")


    def drain(self) -> str:
        """Everything up to end of output (the process has ended)."""
        self._raw += self.proc.stdout.read()
        self.text = self._raw.decode("utf-8", errors="replace")
        return self.text


def start(args, data_dir, **env) -> tuple[subprocess.Popen, Reader]:
    proc = subprocess.Popen(karuta(*args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=clean_env(data_dir, **env), cwd=ROOT)
    return proc, Reader(proc)


def answer(proc: subprocess.Popen, digit: int | str) -> None:
    proc.stdin.write(f"{digit}\n".encode())
    proc.stdin.flush()


# -- terminal, piped -------------------------------------------------------------------------

def test_piped_drill_all_right(tmp_path):
    proc, out = start(["drill", "memory", "--count", "6", "--mode", "mix", "--seed", "5"], tmp_path)
    asked = []
    for _ in range(6):
        out.expect(r"\(q to stop\): ")
        no, digit = solve(out.text)
        asked.append(no)
        answer(proc, digit)
        out.expect(r"○ right")
    out.expect(r"answered 6, right 6")
    proc.stdin.close()
    assert proc.wait(20) == 0
    assert proc.stderr.read() == b""
    rows = db_reviews(tmp_path)
    assert [r[0] for r in rows] == asked and all(r[1] == 1 for r in rows)
    assert {r[2] for r in rows} <= {"kami", "kimariji", "reverse"}
    with StatsDB(tmp_path / DB_NAME) as db:  # the FSRS cards were saved with the answers
        assert set(db.memory_cards()) == set(asked)
    assert "new available 14" in out.text  # 6 of blue's 20 introduced


def test_piped_wrong_answer_is_asked_again(tmp_path):
    proc, out = start(["drill", "memory", "--count", "3", "--seed", "2", "--choices", "6"], tmp_path)
    out.expect(r"\(q to stop\): ")
    first, digit = solve(out.text, wrong=True)
    answer(proc, digit)
    out.expect(r"× wrong .*Again.*: it was \d\) ")
    for _ in range(3):
        out.expect(r"\(q to stop\): ")
        assert out.text.rstrip().endswith("(q to stop):")
        no, digit = solve(out.text)
        answer(proc, digit)
        out.expect("○ right")
    proc.stdin.close()
    assert proc.wait(20) == 0
    rows = db_reviews(tmp_path)
    assert len(rows) == 4 and rows[0] == (first, 0, "kami")
    assert [r[0] for r in rows].count(first) == 2
    assert "[2/4]" in out.text and "6) " in out.text


def test_stray_input_and_quit(tmp_path):
    proc, out = start(["drill", "memory", "--count", "5", "--seed", "1"], tmp_path)
    out.expect(r"\(q to stop\): ")
    answer(proc, "x")
    out.expect(r"type a digit 1-4, or q")
    answer(proc, "9")  # out of range: asked again
    answer(proc, "q")
    out.expect(r"answered 0, right 0")
    assert proc.wait(20) == 0
    assert db_reviews(tmp_path) == []


def test_end_of_input_stops_cleanly(tmp_path):
    r = subprocess.run(karuta("drill", "memory", "--count", "3", "--seed", "4"), input=b"1\n",
                       capture_output=True, env=clean_env(tmp_path), cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    assert b"answered 1," in r.stdout and len(db_reviews(tmp_path)) == 1


def test_killed_mid_drill_keeps_answers(tmp_path):
    proc, out = start(["drill", "memory", "--count", "8", "--seed", "9"], tmp_path)
    for _ in range(3):
        out.expect(r"\(q to stop\): ")
        answer(proc, solve(out.text)[1])
        out.expect("○ right")
    out.expect(r"\(q to stop\): ")
    proc.kill()  # SIGKILL: no clean-up, no checkpoint
    proc.wait(10)
    assert len(db_reviews(tmp_path)) == 3
    with StatsDB(tmp_path / DB_NAME) as db:
        assert db.notice is None and len(db.memory_cards()) == 3


def test_due_only_with_nothing_due(tmp_path):
    r = subprocess.run(karuta("drill", "memory", "--due"), capture_output=True, text=True,
                       env=clean_env(tmp_path), cwd=ROOT, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 0
    assert "nothing to drill now" in r.stdout


def test_due_only_after_a_session(tmp_path):
    # answered 10 minutes ago ("Good" -> due after 10 minutes): due now
    with StatsDB(tmp_path / DB_NAME) as db:
        deck = MemoryDeck()
        sid = db.start_session("memory", T0)
        past = datetime.now(timezone.utc) - timedelta(minutes=30)
        for n in (3, 30):
            card, rating = deck.review(n, True, 4000.0, "kami", past)
            db.record_review(sid, n, past, mode="kami", correct=True, response_ms=4000.0,
                             rating=int(rating), chosen=n, state="learning", due=card.due,
                             stability=card.stability, card_json=card.to_json())
    proc, out = start(["drill", "memory", "--due", "--seed", "1"], tmp_path)
    out.expect(r"2 poems: 2 due, 0 new")
    seen = set()
    for _ in range(2):
        out.expect(r"\(q to stop\): ")
        no, digit = solve(out.text)
        seen.add(no)
        answer(proc, digit)
    assert proc.wait(20) == 0
    assert seen == {3, 30}


def test_window_without_display_is_one_line(tmp_path):
    r = subprocess.run(karuta("drill", "memory", "--window"), capture_output=True, text=True,
                       env=clean_env(tmp_path), cwd=ROOT, timeout=60)
    assert r.returncode == 1
    assert r.stderr.splitlines() == [NO_DISPLAY_LINE]
    assert not (tmp_path / DB_NAME).exists()  # refused before anything was opened


def test_a_display_that_does_not_answer_is_one_line_not_an_invisible_window(tmp_path):
    """DISPLAY names an X server that is not there (a closed session, a wrong number): SDL
    falls back to a driver that draws into memory, and the drill would run with nothing on
    the screen (a board once ran a whole match so, unseen).  One line instead."""
    r = subprocess.run(karuta("drill", "memory", "--window"), capture_output=True, text=True,
                       env={**clean_env(tmp_path), "DISPLAY": ":987"}, cwd=ROOT, timeout=60)
    assert r.returncode == 1
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("karuta")]
    assert lines == [NO_DISPLAY_LINE + " (the display :987 did not answer: SDL fell back to its "
                     "'offscreen' driver, which shows nothing)"], r.stderr


@pytest.mark.parametrize("args, expect", [
    (["drill", "memory", "--mode", "nope"], "Invalid value for '--mode'"),
    (["drill", "memory", "--choices", "12"], "--choices"),
    (["drill", "memory", "--color", "purple"], "--color"),
    (["drill", "nope"], "No such command"),
])
def test_bad_options_are_one_line(tmp_path, args, expect):
    r = subprocess.run(karuta(*args), capture_output=True, text=True, env=clean_env(tmp_path),
                       cwd=ROOT, timeout=60)
    assert r.returncode == 1
    assert len(r.stderr.splitlines()) == 1 and expect in r.stderr


def test_drill_help_lists_memory(tmp_path):
    r = subprocess.run(karuta("drill", "--help"), capture_output=True, text=True,
                       env=clean_env(tmp_path), cwd=ROOT, timeout=60)
    assert r.returncode == 0 and "memory" in r.stdout


def test_corrupt_db_at_drill_start(tmp_path):
    (tmp_path / DB_NAME).write_bytes(os.urandom(4096))
    proc, out = start(["drill", "memory", "--count", "1", "--seed", "1", "--color", "青"], tmp_path)
    out.expect(r"\(q to stop\): ")
    answer(proc, solve(out.text)[1])
    assert proc.wait(20) == 0
    err = proc.stderr.read().decode()
    assert len(err.splitlines()) == 1 and "corrupt-1" in err and "new one started" in err
    assert (tmp_path / f"{DB_NAME}.corrupt-1").exists() and len(db_reviews(tmp_path)) == 1


# -- terminal, a real tty (tmux): single keys, no Enter ------------------------------------------

@pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux")
def test_tty_single_keys_with_tmux(tmp_path):
    sock = f"karuta-test-{os.getpid()}"
    tmux = ["tmux", "-L", sock, "-f", "/dev/null"]
    env = clean_env(tmp_path)
    cmd = shlex.join(["env", *(f"{k}={env[k]}" for k in ("KARUTA_DATA_DIR",)),
                      *karuta("drill", "memory", "--count", "3", "--seed", "11", "--mode", "kimariji")])
    subprocess.run([*tmux, "new-session", "-d", "-s", "drill", "-x", "160", "-y", "60", cmd],
                   check=True, env=env)
    try:
        def pane() -> str:
            return subprocess.run([*tmux, "capture-pane", "-p", "-J", "-t", "drill", "-S", "-200"],
                                  capture_output=True, text=True).stdout

        def wait_for(n_prompts: int) -> str:
            end = time.monotonic() + 30
            while time.monotonic() < end:
                text = pane()
                if text.count("(q to stop):") >= n_prompts:
                    return text
                time.sleep(0.05)
            raise AssertionError(pane())

        for i in range(1, 3):
            text = wait_for(i)
            _, digit = solve(text + "\n")
            subprocess.run([*tmux, "send-keys", "-t", "drill", str(digit)], check=True)  # no Enter
        text = wait_for(3)
        assert text.count("○ right") == 2
        subprocess.run([*tmux, "send-keys", "-t", "drill", "q"], check=True)
        end = time.monotonic() + 20
        while time.monotonic() < end and len(db_reviews(tmp_path)) < 2:
            time.sleep(0.05)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
    rows = db_reviews(tmp_path)
    assert len(rows) == 2 and all(r[1] == 1 and r[2] == "kimariji" for r in rows)


# -- in process: the session and its front ends with a fake clock ---------------------------------

def drill_clock(step_ms: float = 1.0) -> FakeClock:
    """Each read of the clock moves it on by ``step_ms``; ``now()`` starts at T0."""
    return FakeClock(t=0.0, step_ms=step_ms, wall=T0)


def _session(tmp_path, count=4, seed=3, mode="kami"):
    db = StatsDB(tmp_path / DB_NAME)
    deck = MemoryDeck()
    rng = random.Random(seed)
    plan = deck.plan_session(T0, rng, count=count)
    sid = db.start_session("memory", T0)
    return db, MemorySession(db, deck, plan, sid, rng, modes=(mode,))


class SolvingStdin(StringIO):
    """A pipe whose next line is the right answer to the last question written to ``out``."""

    def __init__(self, out: StringIO):
        super().__init__()
        self.out = out

    def readline(self, *a):
        return f"{solve(self.out.getvalue() + chr(10))[1]}\n"


def test_terminal_rates_by_response_time(tmp_path):
    db, session = _session(tmp_path, count=3)
    out = StringIO()
    run_terminal(session, drill_clock(step_ms=10_000.0), SolvingStdin(out), out)  # 10 s each
    assert [a.rating for a in session.answers] == ["Hard"] * 3
    assert all(a.correct and a.response_ms == 10_000.0 for a in session.answers)
    assert [r.rating for r in db.reviews()] == [2, 2, 2]
    db.close()


@pytest.fixture
def dummy_video(monkeypatch):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    monkeypatch.setenv("SDL_AUDIODRIVER", "dummy")
    yield


@pytest.mark.parametrize("mode", ["kami", "reverse"])
def test_window_dummy_driver_keys_and_clicks(tmp_path, dummy_video, mode):
    import pygame

    db, session = _session(tmp_path, count=4, mode=mode)
    shots = []

    def on_question(q, rects):
        surf = pygame.display.get_surface()
        shots.append(pygame.surfarray.array3d(surf).copy())
        i = len(shots)
        if i % 2:  # odd questions by key, even ones by a click on the right choice
            key = getattr(pygame, f"K_{q.answer + 1}")
            pygame.event.post(pygame.event.Event(pygame.KEYDOWN, key=key, mod=0, unicode=str(q.answer + 1)))
        else:
            pos = rects[q.answer].center
            pygame.event.post(pygame.event.Event(pygame.MOUSEBUTTONDOWN, pos=pos, button=1))

    out = StringIO()
    run_window(session, drill_clock(), out, feedback_ms=0, on_question=on_question)
    assert len(session.answers) == 4 and all(a.correct for a in session.answers)
    assert len(db.reviews()) == 4 and out.getvalue().count("○ right") == 4
    for img in shots:  # something was drawn: the paper of the cards, text
        assert (img.reshape(-1, 3) == (246, 238, 214)).all(axis=1).sum() > 5000
        assert colours(img) > 20
    db.close()


def test_window_frames_a_wrong_pick_red_and_the_right_card_green(tmp_path, dummy_video):
    """The verdict: the right torifuda framed green, the wrong pick red, the others plain —
    drawn by the helper the speed drill's window uses too (reader.ui.choices)."""
    import pygame

    from reader.drills.memory_drill import WINDOW_SIZE, _draw
    from reader.ui.choices import RIGHT, WRONG
    from reader.ui.window import open_window

    db, session = _session(tmp_path, count=2)
    screen = open_window(WINDOW_SIZE, "test")
    try:
        q = session.next_question()
        wrong = (q.answer + 1) % len(q.choices)
        a = session.answer(q, wrong, 900.0, T0)
        rects = _draw(screen, q, 1, 2, a)
        img = pygame.surfarray.array3d(screen)

        def framed(rect, colour):
            x, y, w, h = rect
            return int((img[x:x + w, y:y + h] == colour).all(axis=2).sum())

        assert framed(rects[wrong], WRONG) > 400 and framed(rects[q.answer], RIGHT) > 400
        others = [r for i, r in enumerate(rects) if i not in (wrong, q.answer)]
        assert others and all(framed(r, RIGHT) == framed(r, WRONG) == 0 for r in others)
    finally:
        pygame.display.quit()
        db.close()


def test_window_escape_stops(tmp_path, dummy_video):
    import pygame

    db, session = _session(tmp_path, count=4)

    def on_question(q, rects):
        pygame.event.post(pygame.event.Event(pygame.KEYDOWN, key=pygame.K_ESCAPE, mod=0, unicode=""))

    run_window(session, drill_clock(), StringIO(), feedback_ms=0, on_question=on_question)
    assert session.answers == [] and db.reviews() == []
    db.close()


# -- a real X server --------------------------------------------------------------------------

def test_window_under_xvfb(tmp_path, xvfb):
    proc, out = start(["drill", "memory", "--window", "--count", "3", "--seed", "6"], tmp_path,
                      DISPLAY=xvfb)
    try:
        env = {**os.environ, "DISPLAY": xvfb}
        window_of(proc, xvfb)  # (its 60 s: a loaded machine once took over 30 s to map it)

        def paper(img):
            return (img.reshape(-1, 3) == (246, 238, 214)).all(axis=1).sum()

        img = screenshot_when(xvfb, lambda im: paper(im) > 4 * 100 * 100,
                              what="four cards' worth of paper")
        assert img.shape == (800, 1280, 3)
        assert colours(img) > 20  # antialiased Japanese text, not a flat fill
        for n in (1, 2):
            subprocess.run(["xdotool", "key", "1"], env=env, check=True)
            out.expect(r"(○ right|× wrong)")
            time.sleep(1.2)  # the verdict stays ~0.9 s
        subprocess.run(["xdotool", "key", "Escape"], env=env, check=True)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert len(db_reviews(tmp_path)) == 2
    assert "answered 2," in out.drain()
