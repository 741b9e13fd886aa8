"""``karuta stats``: table, JSON, CSV export, a real matplotlib PNG, bad input."""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import warnings
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import cli_run
from click.testing import CliRunner

from reader.cli.stats import stats
from reader.drills.stats import DB_NAME, StatsDB
from testbed.x_driver import colours

ROOT = Path(__file__).resolve().parents[1]
T0 = datetime(2025, 4, 1, 9, 0, tzinfo=timezone.utc)


def run_karuta(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return cli_run.run_karuta(*args, data_dir=data_dir)


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KARUTA_DATA_DIR", str(tmp_path))
    with StatsDB(tmp_path / DB_NAME) as db:
        sid = db.start_session("speed", T0)
        for i, (poem, ms) in enumerate([(87, 310.0), (87, 250.0), (87, 400.0), (53, 700.0), (44, 520.0)]):
            db.record_tap(sid, poem, T0 + timedelta(seconds=i), kimariji="x", reaction_ms=ms,
                          from_kami_ms=ms + 300, correct=True)
        db.record_tap(sid, 53, T0, kimariji="なげ", reaction_ms=-80.0, from_kami_ms=200.0,
                      correct=True, anticipation=True)
        db.record_tap(sid, 86, T0, kimariji="なげけ", reaction_ms=90.0, from_kami_ms=500.0,
                      correct=False, fault=True)
        mid = db.start_session("memory", T0)
        for poem, stab, state in ((3, 8.3, "review"), (30, 0.2, "learning"), (87, 2.5, "review")):
            db.record_review(mid, poem, T0, mode="kami", correct=True, response_ms=1500.0, rating=3,
                             chosen=poem, state=state, due=T0 + timedelta(days=stab), stability=stab,
                             card_json="{}")
    return tmp_path


def test_table(data_dir):
    r = CliRunner().invoke(stats, [])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].split()[:3] == ["no", "kimariji", "color"]
    assert len(lines) == 1 + 6  # poems 3 30 44 53 86 87
    row87 = next(ln for ln in lines if ln.split()[0] == "87")
    # no kimariji color taps median best ant flt rev ok memory
    assert row87.split()[:11] == ["87", "む", "yellow", "3", "310", "250", "0", "0", "1", "1", "review"]


def test_empty_database(tmp_path, monkeypatch):
    monkeypatch.setenv("KARUTA_DATA_DIR", str(tmp_path))
    r = CliRunner().invoke(stats, [])
    assert r.exit_code == 0 and "no answers recorded yet" in r.output
    r = CliRunner().invoke(stats, ["--json"])
    assert json.loads(r.output) == []


def test_json(data_dir):
    r = CliRunner().invoke(stats, ["--json"])
    assert r.exit_code == 0
    rows = {d["poem"]: d for d in json.loads(r.output)}
    assert set(rows) == {3, 30, 44, 53, 86, 87}
    assert rows[87]["median_reaction_ms"] == 310.0 and rows[87]["best_reaction_ms"] == 250.0
    assert rows[87]["memory_state"] == "review" and rows[87]["stability"] == 2.5
    assert rows[53]["anticipations"] == 1 and rows[53]["median_reaction_ms"] == 700.0
    assert rows[86]["faults"] == 1 and rows[86]["median_reaction_ms"] is None
    assert rows[30]["memory_state"] == "learning" and rows[30]["due"].startswith("2025-04-01T13:48")
    r = CliRunner().invoke(stats, ["--json", "--all"])
    assert len(json.loads(r.output)) == 100


def test_export_csv_stdout_and_file(data_dir, tmp_path):
    r = CliRunner().invoke(stats, ["--export", "csv"])
    assert r.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(r.output)))
    assert [int(x["poem"]) for x in rows] == [3, 30, 44, 53, 86, 87]
    out = tmp_path / "s.csv"
    r = CliRunner().invoke(stats, ["--export", "csv", "--out", str(out), "--all"])
    assert r.exit_code == 0
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert len(rows) == 100 and rows[86]["median_reaction_ms"] == "310.0"


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def test_plot_is_a_real_png_with_japanese_labels(data_dir, tmp_path):
    import matplotlib.image as mpimg
    import numpy as np

    out = tmp_path / "plot.png"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = CliRunner().invoke(stats, ["--plot", str(out)])
    assert r.exit_code == 0, r.output
    missing = [str(w.message) for w in caught if "missing from" in str(w.message)]
    assert missing == []  # every Japanese glyph was found
    assert _png_size(out) == (1200, 1050)
    img = mpimg.imread(out)[..., :3]
    flat = img.reshape(-1, 3)
    not_white = (flat < 0.98).any(axis=1).mean()
    assert 0.02 < not_white < 0.9
    assert colours((flat * 255).astype(np.uint8)) > 10  # bars in goshiki colours, text


def test_plot_font_is_japanese():
    import matplotlib

    from reader.cli.stats import _japanese_font

    _japanese_font()
    assert "IPAexGothic" in matplotlib.rcParams["font.family"]


def test_plot_of_empty_database_in_a_fresh_process(tmp_path):
    """A new process, an empty database: the 'no data' panels still render, no glyph warnings."""
    out = tmp_path / "empty.png"
    r = run_karuta(tmp_path, "stats", "--plot", str(out))
    assert r.returncode == 0, r.stderr
    assert "missing from" not in r.stderr and _png_size(out) == (1200, 1050)


@pytest.mark.parametrize("args, expect", [
    (["stats", "--out", "x.csv"], "--out goes with --export"),
    (["stats", "--plot", "x.jpg"], "FILE.png"),
    (["stats", "--export", "xml"], "--export"),
])
def test_bad_options_one_line(tmp_path, args, expect):
    r = run_karuta(tmp_path, *args)
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1 and expect in r.stderr


def test_unwritable_outputs_one_line(tmp_path):
    # in this process (cli_run.run_inproc: no Python start and matplotlib import per case);
    # the plot through the entry point: test_plot_of_empty_database_in_a_fresh_process
    r = cli_run.run_inproc("stats", "--plot", str(tmp_path / "no" / "such" / "dir" / "p.png"),
                           data_dir=tmp_path)
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1 and r.stderr.startswith("karuta: cannot write")
    r = cli_run.run_inproc("stats", "--export", "csv", "--out", str(tmp_path / "no" / "x.csv"),
                           data_dir=tmp_path)
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1 and r.stderr.startswith("karuta: cannot write")


def test_a_plot_that_cannot_be_written_whole_leaves_the_previous_one(tmp_path):
    """A disk that fills while the PNG is written (RLIMIT_FSIZE below the picture's size):
    one line, the plot made before is there whole, no partial or temporary file."""
    import resource

    data_dir = tmp_path
    with StatsDB(tmp_path / DB_NAME) as db:  # every poem: a large picture, a small database
        sid = db.start_session("speed", T0)
        for poem in range(1, 101):
            db.record_tap(sid, poem, T0, kimariji="x", reaction_ms=200.0 + 7 * poem,
                          from_kami_ms=900.0, correct=True)
    out = tmp_path / "plot.png"
    # the plot made before, in this process (the small disk below needs a process of its own)
    r = cli_run.run_inproc("stats", "--plot", str(out), data_dir=data_dir)
    assert r.returncode == 0, r.stderr
    before = out.read_bytes()
    # above what reading the database writes (SQLite's -shm grows by 32 KiB), below the PNG
    limit = max((tmp_path / DB_NAME).stat().st_size, 32768) + 4096
    assert len(before) > limit + 8192, (len(before), limit)

    def small_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    r = subprocess.run(cli_run.karuta_argv("stats", "--plot", str(out), "--all"),
                       env=cli_run.karuta_env(data_dir=data_dir), capture_output=True, text=True,
                       preexec_fn=small_disk, timeout=120)
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith("karuta: cannot write") and "Traceback" not in r.stderr
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if "plot" in p.name) == ["plot.png"]


def test_corrupt_database_moved_aside_and_reported(tmp_path):
    (tmp_path / DB_NAME).write_bytes(b"\x00garbage" * 1000)
    r = run_karuta(tmp_path, "stats")
    assert r.returncode == 1  # a damaged database is a damaged input (issue 33)
    assert len(r.stderr.splitlines()) == 1
    assert "corrupt-1" in r.stderr and "nothing in it could be read" in r.stderr
    assert "no answers recorded yet" not in r.stdout
    assert (tmp_path / f"{DB_NAME}.corrupt-1").read_bytes().startswith(b"\x00garbage")
    r = run_karuta(tmp_path, "stats")  # the new one is fine
    assert r.returncode == 0 and r.stderr == ""
    assert "no answers recorded yet" in r.stdout and "corrupt-1" in r.stdout


def _sessions_db(path: Path) -> list[tuple[float, float]]:
    """A stats database of six sessions a day apart, written by the drills' own recording
    calls: four speed drills (StatsDB.record_tap, as run_drill records a tap) getting quicker
    and surer, two memory drills (MemorySession.answer: an FSRS review each).  Returns each
    speed session's (median reaction, accuracy)."""
    import random

    from reader.drills.memory_drill import MemorySession
    from reader.memory.deck import MemoryDeck

    want = []
    with StatsDB(path) as db:
        deck = MemoryDeck()
        for day, (base, wrong) in enumerate([(620, 2), (540, 2), (470, 1), (400, 0)]):
            at = T0 + timedelta(days=2 * day)
            sid = db.start_session("speed", at)
            rts = [base + 40 * i for i in range(4)]
            for i, ms in enumerate(rts):
                db.record_tap(sid, 1 + i, at + timedelta(seconds=i), kimariji="x",
                              reaction_ms=float(ms), from_kami_ms=ms + 300.0, correct=True)
            for i in range(wrong):
                db.record_tap(sid, 50 + i, at, kimariji="y", reaction_ms=200.0,
                              from_kami_ms=500.0, correct=False, fault=True)
            want.append(((rts[1] + rts[2]) / 2, 4 / (4 + wrong)))
            if day in (1, 3):  # a memory drill the next day: answers right, then one wrong
                at = at + timedelta(days=1)
                rng = random.Random(day)
                plan = deck.plan_session(at, rng, count=3)
                s = MemorySession(db, deck, plan, db.start_session("memory", at), rng)
                for k in range(3):
                    q = s.next_question()
                    s.answer(q, q.answer if k or day == 3 else (q.answer + 1) % len(q.choices),
                             1200.0, at + timedelta(seconds=k))
        db.start_session("speed", T0 + timedelta(days=9))  # (quit before a tap: not a point)
    return want


def test_the_plot_shows_progress_over_sessions(tmp_path):
    """`karuta stats --plot progress.png` draws, under the per-poem panels, each session in
    order: its median reaction (left axis) and its accuracy, taps and memory answers apart (%,
    right axis).  Checked on the figure's own data, then the PNG the command writes."""
    import matplotlib.pyplot as plt

    from reader.cli.stats import PROGRESS_TITLE, figure

    want = _sessions_db(tmp_path / DB_NAME)
    with StatsDB(tmp_path / DB_NAME, reading=True) as db:
        sessions = db.per_session()
        fig = figure(db.per_poem(only_with_data=True), sessions)
    try:
        assert [s.kind for s in sessions] == ["speed", "speed", "memory", "speed", "speed",
                                              "memory"]
        panel = next(ax for ax in fig.axes if ax.get_title() == PROGRESS_TITLE)
        (rt,) = panel.get_lines()
        speed_x = [i for i, s in enumerate(sessions) if s.kind == "speed"]
        assert list(rt.get_xdata()) == speed_x
        assert list(rt.get_ydata()) == pytest.approx([m for m, _ in want])  # 680 → 460 ms
        twin = next(ax for ax in fig.axes if ax is not panel and ax.bbox.bounds == panel.bbox.bounds)
        taps, answers = twin.get_lines()
        assert list(taps.get_ydata()) == pytest.approx([100 * a for _, a in want])
        assert list(answers.get_xdata()) == [2, 5]
        assert list(answers.get_ydata()) == pytest.approx([200 / 3, 100])
        assert len(panel.get_xticklabels()) == 6
    finally:
        plt.close(fig)
    out = tmp_path / "progress.png"
    r = cli_run.run_inproc("stats", "--plot", str(out), data_dir=tmp_path)
    assert r.returncode == 0, r.stderr
    assert _png_size(out) == (1200, 1050)
