"""The practice board page's own tap-along, its players' names, ``practice --web --resume``
and what ``karuta stats`` takes of a web match -- through ``WebBoard`` with the simulated page
of test_web_practice_table (its own timeline, ``at`` every 50 ms, touches at the frames bot 3
would touch), every message through the protocol's checks both ways."""
from __future__ import annotations

import json
import re
import statistics
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reader.practice import headless
from reader.web import boardproto
from reader.web.board import WebBoard

from test_online import QUICK, VOICE
from test_table import Player
from test_web_practice_table import AS_BOTS, DEVICE, SEATS, Page, noted, one_machine

CODE = "314159"
TS = datetime(2026, 12, 6, 12, 0, tzinfo=timezone.utc)


def store_in(tmp_path):
    from reader.drills.calibrate import CalibrationStore

    return CalibrationStore(tmp_path / "calibration.json")


def joined(m, tmp_path, log, store=None):
    board = WebBoard(m, VOICE, CODE, log_file=log, store=store, echo=lambda line: None)
    page = Page(board)
    page.send({"t": "hello", "v": boardproto.VERSION, "code": CODE, "device": DEVICE})
    assert page.got[0]["t"] == "welcome"
    return board, page


def tap_along(page: Page, board: WebBoard, late_ms: float) -> dict:
    """The page's tap-along: each tap ``late_ms`` after its click (±1 ms); the answer."""
    page.send({"t": "calibrate", "count": 12})
    clicks = page.got[-1]
    assert clicks["t"] == "clicks", clicks
    token = clicks["url"].split("/")[2]
    track = board.click_track(token)
    assert not isinstance(track, str) and len(track) > clicks["clicks"][-1]  # (its sound)
    taps = [c * 1000.0 / clicks["rate"] + late_ms + (-1) ** k
            for k, c in enumerate(clicks["clicks"])]
    page.send({"t": "cal", "taps": taps})
    return page.got[-1]


def start(page: Page, names=None) -> None:
    page.send({"t": "start", **({"names": names} if names else {})})
    page.tl.anchor(page.now + 0.5, page.got[0]["from"])


def play(page: Page, board: WebBoard, until=lambda m: False, as_bots=AS_BOTS,
         here=("A",)) -> list[tuple]:
    """The players ``here`` (each as its bot in ``as_bots`` would) until the match is over
    or ``until(m)``; the touches."""
    players = [Player(p, lambda: page, lambda f: page.tl.instant_of(f), as_bots) for p in here]
    t_end = page.now + 3600
    while not board.over and page.now < t_end and not until(board.m):
        page.now += 0.01
        for player in players:
            player(page.now)
        page.tell_heard()
    return page.touches


def a_took_one(m) -> bool:
    return any(c.event.took == "A" for c in m.closed) and m.owed_send() is None


def test_the_board_page_calibrates_its_device_and_every_touch_is_logged_with_it(tmp_path):
    """The board page's own tap-along (before Start) is kept for the device: its touches are
    logged with it (and the name the page gave), the end screen says it, a calibrate after the
    reading started is refused, and the next board finds the device calibrated."""
    store = store_in(tmp_path)
    m = headless.new_match("kyogi", SEATS, 7, VOICE, cards=3, reading=QUICK)
    board, page = joined(m, tmp_path, tmp_path / "m.jsonl", store)
    assert page.got[0]["calibration"] is None
    got = tap_along(page, board, 30.0)
    assert got["t"] == "calibrated" and got["offset_ms"] == pytest.approx(30.0, abs=1.0), got
    assert board.pages[0].calibration_ms == got["offset_ms"]
    start(page, {"A": "  Hana  "})
    page.send({"t": "calibrate", "count": 12})
    assert page.got[-1] == {"t": "warn", "text": "calibrate before the reading starts: ignored"}
    play(page, board)
    assert board.over
    touches = [t for r in m.log_records()[1:] for t in r["timing"]["touches"]
               if t["player"] == "A"]
    assert touches and all(t["calibration_ms"] == board.pages[0].calibration_ms and t["name"] == "Hana"
                           for t in touches)
    over = next(g for g in page.got if g["t"] == "over")
    assert over["lines"][-1] == f"calibration: {board.pages[0].calibration_ms:+.1f} ms subtracted"
    # kept for the device: the next match's board knows it
    m2 = headless.new_match("kyogi", SEATS, 8, VOICE, cards=3, reading=QUICK)
    _, page2 = joined(m2, tmp_path, None, store_in(tmp_path))
    assert page2.got[0]["calibration"] == board.pages[0].calibration_ms


def test_a_device_calibrated_meanwhile_brings_its_calibration_when_it_joins_again(tmp_path):
    """A page joined uncalibrated; its device is calibrated meanwhile (the drill page's
    tap-along, in another tab): when the page joins again (a reload, a new link) the board
    reads the calibration again -- the welcome says it, the touches are logged with it (a hog
    run's browser test: reloaded after the store had it, the match still said "none")."""
    from reader.drills.calibrate import CalibrationResult

    store = store_in(tmp_path)
    m = headless.new_match("kyogi", SEATS, 7, VOICE, cards=3, reading=QUICK)
    board, page = joined(m, tmp_path, None, store)
    assert page.got[0]["calibration"] is None
    store.save(f"web:{DEVICE}", CalibrationResult(12.5, 8, 0, 0.5, clicks=8), input="web touch")
    board.drop(page.link)
    page.link += 10
    page.got.clear()
    page.hello()
    assert page.got[0]["t"] == "welcome" and page.got[0]["calibration"] == 12.5
    start(page)
    play(page, board)
    touches = [t for r in m.log_records()[1:] for t in r["timing"]["touches"]
               if t["player"] == "A"]
    assert touches and all(t["calibration_ms"] == 12.5 for t in touches)


def test_an_uncalibrated_device_is_said_so_and_its_touches_logged_as_not_calibrated(tmp_path):
    m = headless.new_match("kyogi", SEATS, 7, VOICE, cards=3, reading=QUICK)
    board, page = joined(m, tmp_path, None, store_in(tmp_path))
    start(page)
    play(page, board)
    touches = [t for r in m.log_records()[1:] for t in r["timing"]["touches"]
               if t["player"] == "A"]
    assert touches and all(t["calibration_ms"] is None and "name" not in t for t in touches)
    over = next(g for g in page.got if g["t"] == "over")
    assert over["lines"][-1].startswith("calibration: none (touches judged by their raw "
                                        "frames, kept out of karuta stats")


def test_a_resumed_web_match_goes_on_from_the_read_it_stopped_at(tmp_path):
    """``practice --web --resume``: a match stopped once the player has taken a card goes on
    from its log -- the page is welcomed at the 間 before the current read's 上の句, the reads
    before are kept, and the whole log is the one-machine match of all the touches."""
    log = tmp_path / "m.jsonl"
    m = headless.new_match("kyogi", SEATS, 7, VOICE, cards=3, reading=QUICK)
    board, page = joined(m, tmp_path, log)
    start(page)
    first = list(play(page, board, until=a_took_one))
    board.close()
    assert not board.over and 0 < m.index
    before = m.log_records()
    m2 = headless.resume(log, VOICE)
    assert m2.index == m.index
    board2, page2 = joined(m2, tmp_path, log)
    cur = m2.current()
    segs = m2.plan.segments
    k = next(i for i, s in enumerate(segs) if s.kind == "kami" and s.poem == cur.poem)
    assert segs[k - 1].kind == "ma" and page2.got[0]["from"] == segs[k - 1].start > 0
    start(page2)
    rest = play(page2, board2)
    assert board2.over
    assert noted(m2.log_records()[:len(before)]) == noted(before)
    assert noted(m2.log_records()) == one_machine(SEATS, first + rest).log_records()
    assert log.read_text(encoding="utf-8") == m2.log_text()


def test_the_command_resumes_a_web_match_only_from_a_log_it_can_go_on_with(tmp_path):
    """``--web --resume`` is no longer refused; a log of two bots, or of a match that is
    over, is one line and exit 1."""
    from cli_run import run_inproc

    log = tmp_path / "bots.jsonl"
    r = run_inproc("practice", "--bot-vs-bot", "1,1", "--cards", "1", "--seed", "3",
                   "--voice", "tone", "--log", str(log), data_dir=tmp_path / "data")
    assert r.returncode == 0, r.stderr
    r = run_inproc("practice", "--web", "--resume", "--log", str(log), "--port", "0",
                   "--voice", "tone", data_dir=tmp_path / "data")
    assert r.returncode == 1 and r.stderr.strip() == (
        f"karuta: {log}: its seats are bot and bot; --web plays a player at the page against "
        "a bot or a second player at the same tablet: --vs bot:LEVEL or --vs human")
    done = tmp_path / "over.jsonl"
    m = headless.new_match("kyogi", SEATS, 7, VOICE, cards=3, reading=QUICK)
    board, page = joined(m, tmp_path, done)
    start(page)
    play(page, board)
    assert board.over
    r = run_inproc("practice", "--web", "--resume", "--log", str(done), "--port", "0",
                   "--voice", "tone", data_dir=tmp_path / "data")
    assert r.returncode == 1 and r.stderr.strip() == \
        f"karuta: {done}: the match is over: nothing to resume"


def firsts(records: list[dict]) -> list[tuple[bool, dict]]:
    """A's first counted touch of each read of a log, and whether A got the card."""
    out = []
    for r in records[1:]:
        j = next((t for t in r["timing"]["touches"]
                  if t["player"] == "A" and t["verdict"] in ("take", "fault")), None)
        if j is not None:
            out.append((j["verdict"] == "take" and r["took"] == "A", j))
    return out


def test_stats_take_a_web_matchs_calibrated_touches_per_player_and_count_the_rest(tmp_path):
    """A match begun on an uncalibrated device and resumed after its tap-along: its log has
    both kinds of touch.  ``karuta stats`` gives the player (by the name the page sent) the
    median reaction of the calibrated takes only, and says how many takes it left out."""
    from cli_run import run_inproc

    from reader.drills.stats import StatsDB

    log, data = tmp_path / "m.jsonl", tmp_path / "data"
    data.mkdir()
    store = store_in(tmp_path)
    m = headless.new_match("kyogi", SEATS, 7, VOICE, cards=3, reading=QUICK)
    board, page = joined(m, tmp_path, log, store)
    start(page, {"A": "Hana"})
    play(page, board, until=a_took_one)
    board.close()
    with StatsDB(data / "stats.sqlite3") as db:
        board.record_players(db, TS)
    m2 = headless.resume(log, VOICE)
    board2, page2 = joined(m2, tmp_path, log, store)
    assert tap_along(page2, board2, 25.0)["offset_ms"] is not None
    start(page2, {"A": "Hana"})
    play(page2, board2)
    assert board2.over
    with StatsDB(data / "stats.sqlite3") as db:
        board2.record_players(db, TS)

    firsts_ = firsts(m2.log_records())
    uncal = [j for took, j in firsts_ if took and j["calibration_ms"] is None]
    timed = [j["reaction_ms"] for took, j in firsts_
             if took and j["calibration_ms"] is not None and j["reaction_ms"] >= 100]
    assert uncal and timed, "both kinds of take in this match"
    r = run_inproc("stats", data_dir=data)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("Hana"))
    n = len(uncal)
    assert f"· {n} take{'s' if n != 1 else ''} of an uncalibrated device left out" in line
    assert f"({len(timed)} timed)" in line
    median = float(re.search(r"median (\d+) ms", line).group(1))
    assert median == pytest.approx(statistics.median(timed), abs=1.0)
    assert f"{len(firsts_)} taps" in line
    # (the per-poem table leaves them out too: the reactions it has are the timed ones)
    with StatsDB(data / "stats.sqlite3", reading=True) as db:
        reactions = [t.reaction_ms for t in db.taps() if t.reaction_ms is not None]
    assert len(reactions) == len([j for _, j in firsts_ if j["calibration_ms"] is not None])


def test_two_players_at_one_tablet_are_filed_under_their_own_names(tmp_path):
    from reader.drills.stats import StatsDB
    from reader.practice.match import Seat

    seats = {"A": Seat("human"), "B": Seat("human")}
    m = headless.new_match("kyogi", seats, 7, VOICE, cards=3, reading=QUICK)
    board, page = joined(m, tmp_path, None)
    start(page, {"A": "Hana", "B": "Ken"})
    play(page, board, as_bots={"A": Seat("bot", 3), "B": Seat("bot", 2)}, here=("A", "B"))
    assert board.over
    with StatsDB(tmp_path / "stats.sqlite3") as db:
        n = board.record_players(db, TS)
        got = {p.name: p for p in db.per_player()}
    assert set(got) == {"Hana", "Ken"} and sum(p.taps for p in got.values()) == n > 0
    for name, seat in (("Hana", "A"), ("Ken", "B")):
        counted = [1 for r in m.log_records()[1:] if any(
            t["player"] == seat and t["verdict"] in ("take", "fault")
            for t in r["timing"]["touches"])]
        assert got[name].taps == len(counted)
        assert got[name].uncalibrated == got[name].takes  # (no store: not calibrated)


@pytest.mark.parametrize("names", [{"A": "\x07bell"}, {"A": "x" * 25}, {"A": "   "},
                                   {"A": ""}, {"C": "Hana"}, {"A": 7}, {"A": "Hana\n"},
                                   {"A": "\u202eanaH"}, {"A": "a\x85b"}])
def test_a_name_the_page_sends_is_bounded_and_checked(names):
    from reader.practice.online import ProtocolError

    assert boardproto.check({"t": "start", "names": {"A": "花子 Hana"}})
    with pytest.raises(ProtocolError):
        boardproto.check({"t": "start", "names": names})


def test_the_web_options_port_default_is_the_servers():
    from reader.cli.options import WEB_PORT
    from reader.web.server import DEFAULT_PORT

    assert WEB_PORT == DEFAULT_PORT


_UNSAFE = set(range(0x20)) | set(range(0x7f, 0xa0)) | set(range(0x202a, 0x202f)) | \
    set(range(0x2066, 0x206a))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30))
def test_a_name_is_taken_exactly_when_it_is_short_printable_and_not_blank(name):
    """What the laptop takes as a name (and prints, and files stats under): 1-24 characters,
    not only white space, none a control character or a mark that reorders the line."""
    from reader.practice.online import ProtocolError

    fits = (1 <= len(name) <= 24 and name.strip() != "" and
            not any(ord(c) in _UNSAFE for c in name))
    try:
        boardproto.check({"t": "start", "names": {"B": name}})
        taken = True
    except ProtocolError:
        taken = False
    assert taken == fits, repr(name)


def test_a_resumed_web_match_counts_its_memorisation_down_only_once_the_player_starts(tmp_path):
    """A resumed match's board shows its cards and waits: its memorisation (``memorize_s``,
    2 min by default on resuming) starts when the player presses Start, not at the first
    message after the welcome (a page's ``at`` before it, as from a second device, must not
    start it); the reading starts at its end."""
    log = tmp_path / "m.jsonl"
    m = headless.new_match("kyogi", SEATS, 7, VOICE, cards=3, reading=QUICK)
    board, page = joined(m, tmp_path, log)
    start(page)
    play(page, board, until=a_took_one)
    board.close()
    m2 = headless.resume(log, VOICE)
    board2 = WebBoard(m2, VOICE, CODE, log_file=log, memorize_s=30.0, echo=lambda line: None)
    page2 = Page(board2)
    page2.send({"t": "hello", "v": boardproto.VERSION, "code": CODE, "device": DEVICE})
    assert page2.got[0]["t"] == "welcome"
    page2.now += 5.0
    page2.send({"t": "at", "frame": 0})  # (not started here yet: nothing counts down)
    assert board2.session.phase == "memorize" and not board2.session.memorize_started
    n = len(page2.got)
    page2.send({"t": "start"})
    assert board2.session.memorize_started and "go" not in [g["t"] for g in page2.got[n:]]
    assert board2.session.memorize_left(page2.now) == pytest.approx(30.0)
    page2.now += 31.0
    n = len(page2.got)
    page2.send({"t": "start"})  # (the page's countdown at 0 asks for the reading)
    assert board2.session.phase == "reading" and "go" in [g["t"] for g in page2.got[n:]]


def test_a_touch_made_after_the_pages_sound_had_a_gap_is_judged_but_not_timed(tmp_path):
    """A page that says its sound had a gap since the 上の句 began (``gap_ms``: a stalled
    output clock, so the frame it maps a touch to may be off) still has its touch judged by
    that frame -- the match needs a verdict -- but the log says so and the stats database
    takes no reaction time from it."""
    from reader.drills.stats import StatsDB

    store = store_in(tmp_path)
    m = headless.new_match("kyogi", SEATS, 23, VOICE, cards=3, reading=QUICK)  # (A's read first)
    board, page = joined(m, tmp_path, None, store)
    assert tap_along(page, board, 20.0)["offset_ms"] is not None  # (calibrated: only the gap)
    start(page)
    cur = m.current()
    kami = next(s for s in m.plan.segments if s.kind == "kami" and s.poem == cur.poem)
    while page.tl.heard(page.now) is None or page.tl.heard(page.now) < kami.start + 24000:
        page.now += 0.01
        page.tell_heard()
    page.send({"t": "touch", "id": 1, "card": cur.poem, "frame": kami.start + 24000,
               "stamp": "ok", "gap_ms": 37.5})
    play(page, board, until=lambda m_: bool(m_.closed))
    touch = next(t for t in m.log_records()[1]["timing"]["touches"] if t["player"] == "A")
    assert touch["gap_ms"] == 37.5 and touch["verdict"] == "take"
    with StatsDB(tmp_path / "stats.sqlite3") as db:
        assert board.record_players(db, TS) == 1
        assert [t.reaction_ms for t in db.taps()] == [None]


def test_stats_json_has_an_object_per_player_beside_the_poems_ones(tmp_path):
    """``karuta stats --json``: after the per-poem objects (each with its ``poem``), one object
    per player of the matches on a page (``player``: the name), with the figures of the text's
    per-player line -- the same numbers the text prints."""
    from cli_run import run_inproc

    from reader.drills.stats import StatsDB
    from reader.practice.match import Seat

    seats = {"A": Seat("human"), "B": Seat("human")}
    m = headless.new_match("kyogi", seats, 7, VOICE, cards=3, reading=QUICK)
    board, page = joined(m, tmp_path, None)
    start(page, {"A": "Hana", "B": "Ken"})
    play(page, board, as_bots={"A": Seat("bot", 3), "B": Seat("bot", 2)}, here=("A", "B"))
    data = tmp_path / "data"
    data.mkdir()
    with StatsDB(data / "stats.sqlite3") as db:
        board.record_players(db, TS)
        want = {p.name: p for p in db.per_player()}
    r = run_inproc("stats", "--json", data_dir=data)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    poems = [o for o in got if "poem" in o]
    players = [o for o in got if "player" in o]
    assert poems and got == poems + players  # (the poems first, as before; then the players)
    assert [o["player"] for o in players] == ["Hana", "Ken"]
    for o in players:
        p = want[o["player"]]
        assert o == {"player": p.name, "taps": p.taps, "takes": p.takes, "faults": p.faults,
                     "median_reaction_ms": p.median_reaction_ms, "timed": p.timed,
                     "uncalibrated": p.uncalibrated}
        assert o["taps"] > 0
    text = run_inproc("stats", data_dir=data).stdout
    for o in players:
        line = next(ln for ln in text.splitlines() if ln.strip().startswith(o["player"]))
        assert f"{o['taps']} taps · {o['takes']} taken · {o['faults']} faults" in line
