"""The club session (reader.club) without sound: card positions, the memorisation timer on a
fake clock, the session file (round trip, corrupt files), keys and ``--next-keys`` /
``--back-keys``, step-back targets, and the session driving a real ``PlanCursor`` through an
output that reads it synchronously (repeat after step back / resume, hold in goshiki)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from audio_fixtures import small_plan, tone_voice  # noqa: F401
from fakes import FakeClock
from reader.club import session as csession, store, timer
from reader.ui import keys as ui_keys
from reader.club import terminal as club_terminal
from reader.base.errors import DeviceError, KarutaError


# ---------------------------------------------------------------------------- card positions
def test_card_start_is_the_ma_before_the_kami(tone_voice):
    plan = small_plan(tone_voice, cards=3, seed=2)
    kami = csession.card_kami_index(plan)
    assert [plan.segments[i].poem for i in kami] == list(plan.order)
    for k in range(3):
        s = plan.segments[csession.card_start_index(plan, k)]
        assert s.kind == "ma" and s.poem == plan.order[k]


# ---------------------------------------------------------------------------- timer
def test_timer_signals_once_at_13_and_ends_at_15_minutes():
    clk = FakeClock()
    t = timer.MemorizeTimer(15 * 60, timer.parse_signals(None, 15), clk)
    t.start()
    assert t.poll() == [] and t.remaining() == 900 and t.next_signal() == 780
    clk.t += 779.9
    assert t.poll() == [] and not t.swings
    clk.t += 0.2
    assert t.poll() == [("signal", 780.0)] and t.swings
    assert t.poll() == []  # once
    clk.t += 119.8
    assert t.poll() == [] and t.remaining() == pytest.approx(0.1)
    clk.t += 0.2
    ev = t.poll()
    assert [e[0] for e in ev] == ["end"] and t.ended and t.remaining() == 0
    assert t.poll() == []


def test_timer_settable_signals_skip_and_jumps():
    clk = FakeClock()
    t = timer.MemorizeTimer(600, timer.parse_signals("2,5", 10), clk)
    t.start()
    clk.t += 400  # a slow poll passes two signals: both fire, in order
    assert t.poll() == [("signal", 120.0), ("signal", 300.0)]
    t.skip()
    assert [e[0] for e in t.poll()] == ["end"]
    t2 = timer.MemorizeTimer(600, (120.0,), clk)
    t2.start()
    t2.skip()
    assert [e[0] for e in t2.poll()] == ["end"] and not t2.fired  # no signal after a skip


def test_signal_options():
    assert timer.parse_signals(None, 15) == (780.0,)
    assert timer.parse_signals(None, 1) == ()
    assert timer.parse_signals("none", 15) == ()
    for bad in ("x", "16", "0"):
        with pytest.raises(KarutaError):
            timer.parse_signals(bad, 15)


def test_chimes_are_short_and_not_silent():
    for kind in ("signal", "end"):
        c = timer.chime(48000, kind)
        assert c.dtype == np.float32 and 0.2 < len(c) / 48000 < 2.0
        assert 0.1 < np.abs(c).max() <= 1.0
    cur = timer.ArrayCursor(timer.chime(48000), 48000)
    got = np.concatenate([cur.read(480) for _ in range(200)])
    assert np.array_equal(got, timer.chime(48000)) and cur.read(480).shape[0] == 0


# ---------------------------------------------------------------------------- session file
OPTS = dict(rules="kyogi", seed=7, cards=4, poems_spec=None, colors=(), karafuda=None, ma=0.3,
            yoin=0.2, take=0.2, gap=None, speed=None, joka=False, last_shimo=None, voice_spec="tone")


class _NoOutput:
    is_active = False

    def stop(self):
        pass

    def wait(self, timeout=None):
        return True


def test_save_resume_round_trip(tmp_path, tone_voice):
    from reader.cli.read import build

    plan, voice = build(OPTS)
    sf = store.SessionFile(tmp_path / "s" / "last.json")
    s = csession.ClubSession(plan, voice, _NoOutput(), voice_spec="tone", session=sf, clock=FakeClock())
    s.save()
    # two cards read (as the live loop records them)
    s._card_read(0)
    s._card_read(1)
    data = sf.load()
    assert data["position"] == 2 and data["order"] == list(plan.order) and not data["finished"]
    assert [e["poem"] for e in data["log"]] == list(plan.order[:2])
    kami = [plan.segments[i] for i in csession.card_kami_index(plan)]
    assert [e["kimariji"] for e in data["log"]] == [k.kimariji for k in kami[:2]]
    assert [e["kimariji_sound"] for e in data["log"]] == [k.kimariji_sound for k in kami[:2]]
    # the saved reading settings rebuild the same plan
    from reader.reading.settings import settings_from_dict
    from reader.reading.voices import build_reading

    assert data["version"] == 2 and data["voice_spec"] == "tone"
    again, _ = build_reading(settings_from_dict(data["reading"]), data["seed"], data["voice_spec"])
    assert again.order == plan.order and again.to_dict() == plan.to_dict()
    # resumed session starts at card 3's 間 and marks a re-read card "again"
    r = csession.ClubSession(again, voice, _NoOutput(), voice_spec="tone", session=sf, position=2,
                         log=data["log"], clock=FakeClock())
    assert r.position == 2 and csession.card_start_index(again, 2) == csession.card_kami_index(again)[2] - 1
    r._card_read(1)
    assert r.log[-1]["again"] is True and r.position == 2
    assert json.loads(sf.path.read_text())["log"][-1]["card"] == 2


@pytest.mark.parametrize("text, words", [
    ("{not json", "corrupt"),
    ("[]", "not a karuta session"),
    ('{"kind": "karuta-club-session", "version": 1}', "options missing"),
    ('{"kind": "karuta-club-session", "version": 99}', "version 99"),
    ("", "corrupt"),
])
def test_corrupt_session_is_one_line_and_left_alone(tmp_path, text, words):
    p = tmp_path / "last.json"
    p.write_text(text)
    with pytest.raises(store.SessionError) as e:
        store.SessionFile(p).load()
    assert words in str(e.value) and "\n" not in str(e.value)
    assert p.read_text() == text


def test_missing_session(tmp_path):
    with pytest.raises(store.SessionError, match="no saved session"):
        store.SessionFile(tmp_path / "nope.json").load()


def test_default_session_path_follows_karuta_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KARUTA_DATA_DIR", str(tmp_path))
    assert store.default_session_path() == tmp_path / "sessions" / "last.json"


# ---------------------------------------------------------------------------- keys, step back
class FakeKeys:
    def __init__(self, text):
        self.chars = list(text)

    def get(self, timeout=0.0):
        from reader.ui.keys import Key

        return Key(self.chars.pop(0), 0) if self.chars else None


@pytest.mark.parametrize("text, cmd", [
    (" ", "next"), ("\r", "next"), ("\x1b[6~", "next"), ("\x1b[C", "next"), ("\x1bOC", "next"),
    ("p", "hold"), ("h", "hold"), ("r", "repeat"), ("b", "back"), ("\x1b[D", "back"),
    ("\x7f", "back"), ("q", "quit"), ("s", "skip"), ("\x1b", None), ("x", None),
])
def test_keys(text, cmd):
    assert ui_keys.read_command(FakeKeys(text)) == cmd


def test_back_target(tone_voice):
    plan = small_plan(tone_voice, cards=3, seed=2)
    s = csession.ClubSession(plan, tone_voice, _NoOutput(), voice_spec="tone",
                         session=store.SessionFile("/nonexistent/x.json"))
    assert s.back_target() is None
    kami = csession.card_kami_index(plan)
    s.current, s.heard = 1, kami[1]  # card 2's 上の句
    assert s.back_target() == 0
    s.heard = kami[1] + 1  # its take
    assert plan.segments[s.heard].kind == "take" and s.back_target() == 0
    s.heard = kami[1] + 2  # released: its 下の句 -> read card 2 again
    assert plan.segments[s.heard].kind == "shimo" and s.back_target() == 1
    s.current, s.heard = 0, kami[0]
    assert s.back_target() == 0


def test_screen_shows_card_kimariji_counts_and_log(tone_voice):
    plan = small_plan(tone_voice, cards=3, seed=2)
    s = csession.ClubSession(plan, tone_voice, _NoOutput(), voice_spec="tone",
                         session=store.SessionFile("/tmp/unused.json"), clock=FakeClock())
    s.save = lambda: None
    kami = csession.card_kami_index(plan)
    s._heard(kami[0])
    s._heard(kami[0] + 1)
    text = "\n".join(club_terminal.screen_lines(s.view()))
    seg = plan.segments[kami[0]]
    assert "card 1/3" in text and "read 1 · left 2" in text and seg.kimariji in text
    assert f"{plan.order[0]:3d} {seg.kimariji}" in text


def test_screen_shows_the_configured_keys(tone_voice):
    plan = small_plan(tone_voice, cards=2, seed=2)
    s = csession.ClubSession(plan, tone_voice, _NoOutput(), voice_spec="tone",
                         session=store.SessionFile("/tmp/unused.json"), clock=FakeClock())
    keys = ui_keys.key_bindings("n,space", None)
    text = "\n".join(club_terminal.screen_lines(s.view(), bindings=keys))
    assert "keys: n/space next" in text and "b/←/BS/PgUp back a card" in text


# ---------------------------------------------------------------------------- pedal keys
@pytest.mark.parametrize("next_spec, back_spec, text, cmd", [
    (None, None, "\x1b[5~", "back"),
    ("n", None, "n", "next"), ("n", None, "N", "next"), ("n", None, " ", None),
    ("b", None, "b", "next"), ("b", None, "\x1b[D", "back"),   # b leaves the default back set
    (None, "x,pagedown", "\x1b[6~", "back"), (None, "x,pagedown", "\r", "next"),
    ("pgdn, Return ,tab", "up", "\t", "next"), ("pgdn,return,tab", "up", "\x1bOA", "back"),
    ("comma", ".", ",", "next"), ("comma", ".", ".", "back"),
    ("n", None, "p", "hold"), ("n", None, "r", "repeat"), ("n", None, "q", "quit"),
])
def test_next_and_back_keys(next_spec, back_spec, text, cmd):
    keys = ui_keys.key_bindings(next_spec, back_spec)
    assert ui_keys.read_command(FakeKeys(text), bindings=keys) == cmd


@pytest.mark.parametrize("next_spec, back_spec, words", [
    ("b,space", "b", "'b' is in both --next-keys and --back-keys"),
    ("n", "N", "'n' is in both"),
    ("q", None, "--next-keys: 'q' already means quit"),
    (None, "r", "--back-keys: 'r' already means repeat"),
    ("f13", None, "unknown key 'f13'"),
    (" , ", None, "name at least one key"),
    (None, "space,enter,pagedown,right", "--back-keys took every default key of --next-keys"),
])
def test_bad_key_options_are_one_line(next_spec, back_spec, words):
    with pytest.raises(KarutaError) as e:
        ui_keys.key_bindings(next_spec, back_spec)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_window_keymap_follows_the_bindings():
    from reader.club.window import _keymap
    from reader.ui.window import import_pygame

    pg = import_pygame()
    km = _keymap(pg, ui_keys.key_bindings("n,pagedown", "b"))
    assert km[pg.K_n] == "next" and km[pg.K_PAGEDOWN] == "next" and km[pg.K_b] == "back"
    assert pg.K_SPACE not in km and pg.K_LEFT not in km
    assert km[pg.K_p] == "hold" and km[pg.K_r] == "repeat" and km[pg.K_ESCAPE] == "quit"
    default = _keymap(pg)
    assert default[pg.K_SPACE] == "next" and default[pg.K_KP_ENTER] == "next"
    assert default[pg.K_PAGEUP] == "back" and default[pg.K_BACKSPACE] == "back"


# ---------------------------------------------------------------------------- session + cursor
class PumpOutput:
    """An output that plays nothing: ``pump(frames)`` reads the cursor as a device would
    (no latency: ``frame_now`` is the frames read)."""

    def __init__(self):
        self.cursor = None
        self.frames = 0
        self.blocks: list[np.ndarray] = []

    def play(self, cursor):
        self.cursor, self.frames, self.blocks = cursor, 0, []

    @property
    def is_active(self):
        return self.cursor is not None and not self.cursor.finished

    def stop(self):
        if self.cursor is not None:
            self.cursor.stop()

    def wait(self, timeout=None):
        return True

    def frame_now(self):
        return self.frames if self.cursor is not None else None

    def pump(self, session, frames, block=480):
        for _ in range(-(-frames // block)):
            b = self.cursor.read(block)
            self.blocks.append(b)
            self.frames += b.shape[0]
            session.tick()

    def pump_until(self, session, pred, limit=48000 * 120):
        n = 0
        while not pred():
            self.pump(session, 480)
            n += 480
            assert n < limit, "condition never came"

    def played(self):
        return np.concatenate(self.blocks) if self.blocks else np.zeros(0, np.float32)


def club_session(plan, voice, out, **kw):
    s = csession.ClubSession(plan, voice, out, voice_spec="tone", session=store.SessionFile("/tmp/unused.json"),
                         clock=FakeClock(), **kw)
    s.save = lambda: None
    return s


def repeating(plan, card: int) -> str:
    """The state shown while card ``card``'s 下の句 is read again: which card, its number and
    the 下の句's first words (it said only "repeating 下の句")."""
    import poems

    poem = plan.order[card - 1]
    return f"repeating 下の句 of card {card} [{poem}] {poems.poem(poem).kanji[3]}"


def shimo_of(plan, poem):
    return next(s for s in plan.segments if s.kind == "shimo" and s.poem == poem)


def test_resume_then_r_repeats_the_previous_cards_shimo_at_once(tone_voice):
    from audio.render import render

    plan = small_plan(tone_voice, cards=4, seed=3, joka=False)
    out = PumpOutput()
    s = club_session(plan, tone_voice, out, position=2)
    s.start()
    start = csession.card_start_index(plan, 2)
    assert out.cursor.anchors[0].plan_frame == plan.segments[start].start  # not re-based
    s.command("repeat")
    shimo = shimo_of(plan, plan.order[1])
    out.pump(s, 960)
    assert s.view().state == repeating(plan, 2)  # which card: named (issue 34)
    out.pump_until(s, lambda: out.cursor.state.waiting)
    got = out.played()
    ref = render(plan, tone_voice)
    ma = plan.segments[start]
    expect = np.concatenate([tone_voice.samples(shimo.speech), ref[ma.start:]])
    np.testing.assert_array_equal(got, expect[:got.shape[0]])
    assert s.current == 2 and s.view().state == "waiting for take"
    assert [e["poem"] for e in s.log] == [plan.order[2]]


def test_step_back_then_r_repeats_the_shimo_before_the_card(tone_voice):
    plan = small_plan(tone_voice, cards=4, seed=3, joka=False)
    out = PumpOutput()
    s = club_session(plan, tone_voice, out)
    s.start()
    for k in range(3):  # to card 3's take
        out.pump_until(s, lambda: out.cursor.state.waiting)
        if k < 2:
            s.command("next")
            out.pump(s, 480)
    assert s.current == 2
    s.command("back")  # card 3's take is on: back to card 2
    assert s.position == 1 and out.cursor.anchors[0].plan_frame == \
        plan.segments[csession.card_start_index(plan, 1)].start
    s.command("repeat")
    out.pump(s, 480)
    seg, rep = out.cursor.segment_at(100)
    assert rep and seg == shimo_of(plan, plan.order[0])
    assert s.view().state == repeating(plan, 1)  # which card: named (issue 34)
    got = out.played()
    np.testing.assert_array_equal(got, tone_voice.samples(seg.speech)[:got.shape[0]])
    out.pump_until(s, lambda: out.cursor.state.waiting)
    assert s.current == 1 and s.log[-1]["card"] == 2 and s.log[-1]["again"]


@pytest.mark.parametrize("auto", [False, True])
def test_goshiki_hold_pauses_at_the_next_silence_and_resumes(tone_voice, auto):
    from reader.reading.engine import build_plan
    from reader.reading.selection import parse_selection
    from reader.reading.settings import preset

    plan = build_plan(preset("goshiki", cards=3, poems=parse_selection(None, ("blue",))), 4,
                      tone_voice)
    assert not any(seg.wait for seg in plan.segments)
    out = PumpOutput()
    s = club_session(plan, tone_voice, out, auto=auto)
    s.start()
    kami = plan.segments[csession.card_kami_index(plan)[1]]
    out.pump_until(s, lambda: out.cursor.position > kami.start + 1000)
    s.command("hold")  # mid-上の句: it is said to its end, then the reading stands still
    assert s.view().state == "held"
    out.pump_until(s, lambda: out.cursor.position == kami.end)
    before = out.played().shape[0]
    out.pump(s, 48000 * 3)
    assert out.cursor.position == kami.end and not out.played()[before:].any()
    assert s.view().state == "held" and s.position == 2
    s.command("hold")  # resume
    out.pump_until(s, lambda: s.phase == "finished")
    assert [e["poem"] for e in s.log] == list(plan.order)


def test_version_1_session_still_resumes(tmp_path, tone_voice):
    """A session saved by the first release (reading options under their CLI names) loads as
    the same reading: the same settings, hence the same order and plan."""
    from reader.cli.read import build
    from reader.reading.settings import settings_from_dict
    from reader.reading.voices import build_reading

    plan, _ = build(OPTS)
    v1 = {"kind": "karuta-club-session", "version": 1,
          "options": dict(OPTS, colors=[]), "seed": 7, "rules": "kyogi", "voice": "tone",
          "order": list(plan.order), "total": len(plan.order), "position": 1, "finished": False,
          "memorize_min": 0.0, "auto": False,
          "log": [{"card": 1, "poem": plan.order[0], "kimariji": "x", "kimariji_sound": "x",
                   "karafuda": False, "again": False, "time": "2026-01-01T00:00:00+00:00"}],
          "started": "2026-01-01T00:00:00+00:00", "updated": "2026-01-01T00:00:00+00:00"}
    p = tmp_path / "old.json"
    p.write_text(json.dumps(v1), encoding="utf-8")
    before = p.read_bytes()
    data = store.SessionFile(p).load()
    assert data["version"] == 2 and data["position"] == 1 and data["voice_spec"] == "tone"
    again, _ = build_reading(settings_from_dict(data["reading"]), data["seed"], data["voice_spec"])
    assert again.to_dict() == plan.to_dict()
    assert p.read_bytes() == before  # loading never rewrites the user's file


def test_resume_cli_reads_a_version_1_session(tmp_path):
    """``karuta read --resume --show-log`` on a version-1 file (the command a user runs)."""
    import subprocess

    from cli_run import run_karuta

    v1 = {"kind": "karuta-club-session", "version": 1,
          "options": dict(OPTS, colors=[]), "seed": 7, "rules": "kyogi", "voice": "tone",
          "order": [3, 5, 7, 9], "total": 4, "position": 4, "finished": True, "memorize_min": 0.0,
          "log": [], "started": "2026-01-01T00:00:00+00:00"}
    p = tmp_path / "old.json"
    p.write_text(json.dumps(v1), encoding="utf-8")
    r = run_karuta("read", "--show-log", "--session", str(p), home=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "seed 7" in r.stdout and "finished" in r.stdout


def test_the_club_window_letterboxes_its_layout_in_any_window_size():
    from reader.club.window import SIZE, Letterbox, _inside, button_rect

    nx, ny, nw, nh = button_rect(SIZE)
    for size in [(1280, 800), (1920, 1080), (960, 540), (800, 1280), (3840, 2160)]:
        box = Letterbox(size, SIZE)
        sw, sh = box.shown
        assert sw <= size[0] and sh <= size[1] and (sw == size[0] or sh == size[1])
        assert abs(sw / sh - SIZE[0] / SIZE[1]) < 0.01  # the layout is not stretched
        ox, oy = box.offset
        assert abs(ox - (size[0] - sw - ox)) <= 1 and abs(oy - (size[1] - sh - oy)) <= 1
        # a touch on the shown NEXT button lands on it; one beside it does not
        cx, cy = ox + (nx + nw / 2) * box.scale, oy + (ny + nh / 2) * box.scale
        assert _inside(button_rect(SIZE), *box.to_canvas(cx, cy))
        assert not _inside(button_rect(SIZE), *box.to_canvas(ox + (nx - 5) * box.scale, cy))


def test_keys_hold_next_repeat_back_quit_make_the_read_log(tone_voice):
    """What ``karuta read --live`` does with a club's keys, card by card (the terminal and the
    window only turn keys into these commands: tests/test_club_cli.py): a hold keeps a next
    pressed during it until the hold ends; r repeats the last 下の句 and waits again; b during
    a take goes back a card (read again, logged "again"); q saves where the reading stands."""
    from reader.ui import keys as ui_keys

    plan = small_plan(tone_voice, cards=4, seed=5, joka=False)
    out = PumpOutput()
    saved = []
    s = club_session(plan, tone_voice, out)
    s.save = lambda: saved.append(s.to_dict())

    def waiting_at(card):
        out.pump_until(s, lambda: out.cursor.state.waiting and s.current == card - 1)
        v = s.view()
        assert (v.card, v.state) == (card, "waiting for take")
        return "\n".join(club_terminal.screen_lines(v))

    def key(text):
        s.command(ui_keys.read_command(FakeKeys(text)))

    s.start()
    screen = waiting_at(1)
    kami = plan.segments[csession.card_kami_index(plan)[0]]
    assert "card 1/4" in screen and "read 1 · left 3" in screen and kami.kimariji in screen
    key("p")  # a hand is up: hold
    assert s.view().state == "held"
    key(" ")  # next during the hold: kept until the hold ends
    out.pump(s, 48000 * 2)
    assert s.current == 0 and s.view().state == "held" and s.position == 1
    key("p")
    assert "read 2 · left 2" in waiting_at(2)
    key("r")  # card 1's 下の句 again, then the wait at card 2 again
    out.pump(s, 960)
    assert s.view().state == repeating(plan, 1)  # which card: named (issue 34)
    waiting_at(2)
    key("b")  # a take came too early: back to card 1, its 上の句 again
    assert s.position == 0
    waiting_at(1)
    assert s.position == 1 and saved[-1]["position"] == 1
    key(" ")
    waiting_at(2)
    key("\x1b[6~")  # PageDown (a foot pedal) is next too
    assert "read 3 · left 1" in waiting_at(3)
    key("q")
    assert s.phase == "quit" and s.view().state == "stopped (saved)"
    data = saved[-1]
    assert data["position"] == 3 and data["order"] == list(plan.order) and not data["finished"]
    assert [e["card"] for e in data["log"]] == [1, 2, 1, 2, 3]
    assert [e["again"] for e in data["log"]] == [False, False, True, True, False]
    assert [e["poem"] for e in data["log"]] == [plan.order[i - 1] for i in (1, 2, 1, 2, 3)]
    lines = csession.format_log(data["log"], data["total"], data["seed"])
    assert lines[0] == f"read log (seed {plan.seed}): 3 of 4 cards"
    assert len([ln for ln in lines if "(again)" in ln]) == 2


# ---------------------------------------------------------------------------- the device goes away
class LosingOutput(PumpOutput):
    """``PumpOutput`` whose device can go away (``gone``): reading where it stands and opening
    a stream then fail with a ``DeviceError``, as the real outputs do (tests/test_faults_device.py
    pulls a real sound server's plug)."""

    gone = False

    def frame_now(self):
        if self.gone:
            raise DeviceError("the sound device went away")
        return super().frame_now()

    def play(self, cursor):
        if self.gone:
            raise DeviceError("no sound device")
        super().play(cursor)

    def stop(self):
        if not self.gone:
            super().stop()


@pytest.mark.parametrize("auto", [False, True])
def test_a_lost_device_stops_at_the_last_card_heard_saved_then_reads_on_from_it(tone_voice, auto):
    """The sound server dies mid-reading: the reading stops at the last card heard, saved, and
    goes no further while nothing can be heard; ``next`` (or, with ``--auto``, every
    ``REOPEN_EVERY_S`` on the session's clock) tries the device again — while it is still gone
    the session waits on — and once it is back the reading goes on from the first card not
    heard, no card skipped or logged twice."""
    plan = small_plan(tone_voice, cards=5, seed=3, joka=False)
    out = LosingOutput()
    echoed = []
    s = club_session(plan, tone_voice, out, auto=auto, echo=echoed.append)
    saved = []
    s.save = lambda: saved.append(s.to_dict())
    s.start()
    kami = csession.card_kami_index(plan)

    def go_on():  # the reader lets each take go (--auto: the reading goes on by itself)
        if not auto and out.cursor.state.waiting:
            s.command("next")

    out.pump_until(s, lambda: go_on() or out.cursor.position > plan.segments[kami[2]].start + 4800)
    assert s.position == 2  # card 3's 上の句 is being heard: the plug is pulled
    out.gone = True
    s.tick()
    assert s.phase == "lost" and s.view().state == "sound device lost (saved)"
    assert saved[-1]["position"] == 2 and len(saved[-1]["log"]) == 2
    assert echoed[-1].startswith("the sound device went away: stopped at card 3/5 (saved)")
    for _ in range(50):  # nothing is heard: the position does not move on
        s.clock.advance(0.02 if not auto else 0.05)
        s.tick()
    assert s.position == 2 and s.phase == "lost"
    if auto:
        s.clock.advance(s.REOPEN_EVERY_S)
        s.tick()  # tried by itself: still gone
    else:
        s.command("next")  # tried: still gone
    assert s.phase == "lost" and "try again" in s.message
    out.gone = False
    if auto:
        s.clock.advance(s.REOPEN_EVERY_S - 0.1)
        s.tick()
        assert s.phase == "lost"  # not before its time
        s.clock.advance(0.1)
        s.tick()
    else:
        s.command("next")
    assert s.phase == "reading" and s.message.startswith("device back: reading on from card 3")
    assert out.cursor.anchors[0].plan_frame == plan.segments[csession.card_start_index(plan, 2)].start
    out.pump_until(s, lambda: go_on() or s.phase == "finished")
    assert [e["card"] for e in s.log] == [1, 2, 3, 4, 5]
    assert [e["poem"] for e in s.log] == list(plan.order)


class _NoKeys:
    """A ``KeyReader`` no key comes from."""

    def get(self, timeout=None):
        return None


class _InterruptedScreen:
    """A pipe whose first write is where a Ctrl-C lands (a write to a slow terminal blocks:
    the interrupt can come there as well as in a command)."""

    def __init__(self):
        self.lines: list[str] = []

    def isatty(self):
        return False

    def write(self, text):
        if not self.lines:
            self.lines.append("(interrupted here)")
            raise KeyboardInterrupt
        self.lines.append(text)

    def flush(self):
        pass


def test_a_ctrl_c_while_the_screen_is_drawn_saves_and_quits(tone_voice):
    """Ctrl-C at the club's terminal is "save and quit" wherever the loop is when it lands —
    drawing the screen included (it escaped from there as "karuta: interrupted", exit 130)."""
    plan = small_plan(tone_voice, cards=3, seed=3, joka=False)
    s = club_session(plan, tone_voice, PumpOutput())
    try:
        club_terminal.run_terminal(s, out=_InterruptedScreen(), keys=_NoKeys())
    except KeyboardInterrupt:
        pytest.fail("the Ctrl-C escaped the club's loop: 'karuta: interrupted', exit 130")
    assert not s.running and s.message == "interrupted (saved)"


class _Underran(_NoOutput):
    underruns = 105


@pytest.mark.parametrize("how", ["quit", "finished"])
def test_the_end_of_a_reading_says_underruns_only_when_not_stopped_by_the_reader(tmp_path,
                                                                                 tone_voice, how):
    """Issue 34: after Ctrl-C (or q) a club reading printed ``karuta: audio: 105 underruns``,
    which reads as an error: the reader stopped the sound, nothing is said about it.  A
    reading that ran to its end still says the count, and what it means."""
    from reader.cli.read import build
    from reader.club.run import say_the_end

    plan, voice = build(OPTS)
    s = csession.ClubSession(plan, voice, _Underran(), voice_spec="tone",
                             session=store.SessionFile(tmp_path / "last.json"), clock=FakeClock())
    s._card_read(0)
    if how == "quit":
        s.command("quit")  # what the terminal does on q and on Ctrl-C
    else:
        s.phase = "finished"
    lines: list[str] = []
    say_the_end(s, s.output, lines.append)
    audio = [ln for ln in lines if "audio" in ln]
    if how == "quit":
        assert audio == [] and "stopped at card 2/4 (saved)" in lines[-1], lines
    else:
        assert audio == ["karuta: audio: 105 underruns (gaps of silence in the sound: the "
                         "machine was too busy to keep the sound device fed)"], lines


@pytest.mark.parametrize("rules, joka, opens", [
    ("kyogi", True, "the jo-ka"), ("goshiki", True, "the announcement"),
    ("goshiki", False, "the first card"), ("kyogi", False, "the first card")])
def test_the_memorisation_names_what_follows_it(tone_voice, rules, joka, opens):
    """Issue 34: goshiki live mode said "s: skip to the jo-ka" and "the jo-ka follows";
    goshiki has no jo-ka: what the screens and the message name is what the plan opens with."""
    from reader.reading.engine import build_plan
    from reader.reading.settings import settings_from_options

    settings = settings_from_options(rules, colors=("blue",) if rules == "goshiki" else (),
                                     cards=3, joka=joka)
    plan = build_plan(settings, 1, tone_voice)
    assert any(seg.poem == "joka" for seg in plan.segments) == (rules == "kyogi" and joka)
    clock = FakeClock()
    s = csession.ClubSession(plan, tone_voice, PumpOutput(), voice_spec="tone",
                             session=store.SessionFile("/tmp/unused.json"), clock=clock,
                             memorize_s=60.0)
    s.save = lambda: None
    s.start()
    screen = "\n".join(club_terminal.screen_lines(s.view()))
    assert f"(s: skip to {opens})" in screen and ("jo-ka" in screen) == (opens == "the jo-ka")
    clock.advance(61.0)
    s.tick()
    assert s.message == f"memorisation over: {opens} follows"


def test_the_read_log_lines_up_in_columns_whatever_the_kana():
    """Issue 34: the read log's columns drifted with the kimariji's and its sound's length
    (む against うかりける).  On the terminal each column starts at one display column (kana
    count two); in the window each starts at one x, past the widest text before it."""
    import poems

    from reader.ui.term import width as term_width
    from reader.ui.window import load_font

    entries = [{"card": c, "poem": n, "kimariji": k, "kimariji_sound": k, "karafuda": kara,
                "again": again, "time": "2026-01-01T10:00:0%dZ" % c}
               for c, (n, k, kara, again) in enumerate(
                   [(87, "む", True, False), (74, "うかりける", False, True),
                    (33, "ひさ", False, False), (100, "もも", False, False)], 1)]
    lines = [csession.log_line(e) for e in entries]
    for field in ("first", "time"):
        starts = set()
        for e, ln in zip(entries, lines):
            text = poems.poem(e["poem"]).kanji[0] if field == "first" else "10:00:0"
            starts.add(term_width(ln[:ln.index(text)]))
        assert len(starts) == 1, (field, lines)
    from reader.club.window import log_columns

    font = load_font(24)
    xs = log_columns(entries, font)
    rows = [csession.log_fields(e) for e in entries]
    for i in range(len(xs) - 1):
        assert xs[i + 1] > xs[i] + max(font.size(r[i])[0] for r in rows), (i, xs)
