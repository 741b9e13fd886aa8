"""``karuta tournament read``: the round's goshiki reading through the club reader.

- the tie-break card of a knock-out round plays, sample for sample, what ``karuta render``
  writes for that card (ALSA file capture), and it is the 18th card of the round's order;
- a whole round's reading in a real terminal (tmux) on a PulseAudio null sink: the round's
  colour and seed, 30 s memorisation by default, heard on the sink, ``q`` saves, ``--resume``
  goes on at the right card (``p``'s hold at the next silence is the club session's:
  tests/test_club.py);
- ``karuta read --rules goshiki --live`` starts 30 s of memorisation by default (seed 004),
  kyogi still 15 minutes.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cli_run import karuta_argv, run_inproc, run_karuta  # noqa: F401

from audio_fixtures import REPO, find_lead_in, pulse_server  # noqa: F401
from test_club_cli import APPEND_ASOUNDRC, pulse_env
from waits import wait_until

FAST = ["--voice", "tone", "--speed", "4"]


def karuta(*args, env=None, timeout=120):
    return run_karuta(*map(str, args), env=env, timeout=timeout)


def js(*args, **kw):
    """A pure command's JSON (the day set up, its status): in this process (``run_inproc``);
    what reads aloud goes through the installed command (``karuta``)."""
    res = run_inproc(*map(str, args), "--json", **kw)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def make_day(tmp_path: Path, to_knockout: bool = False) -> Path:
    csv = tmp_path / "p.csv"
    csv.write_text("名前\n" + "".join(f"選手{i}\n" for i in range(4)), encoding="utf-8")
    db = tmp_path / "t.sqlite"
    js("tournament", "new", "-f", db, "--players", csv, "--rounds", 1, "--seed", 9)
    rnd = js("tournament", "pair", "-f", db)
    if to_knockout:
        for tb in rnd["tables"]:
            js("tournament", "result", "-f", db, tb["table"], 8, 3)
        js("tournament", "pair", "-f", db)  # the semi-finals
    return db


def memorisation_left(screen: str) -> int:
    """Seconds of memorisation left on the club screen ("memorisation  0:29 left")."""
    import re

    m = re.search(r"memorisation\s+(\d+):(\d\d) left", screen)
    assert m, screen
    return int(m.group(1)) * 60 + int(m.group(2))


def plan(*args) -> dict:
    res = run_inproc("plan", "--json", *map(str, args))
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_tiebreak_card_plays_exactly_the_rendered_card(tmp_path):
    db = make_day(tmp_path, to_knockout=True)
    status = js("tournament", "status", "-f", db)
    exported = js("tournament", "export", "-f", db, "--out", tmp_path / "x.json")
    assert exported["written"]
    data = json.loads((tmp_path / "x.json").read_text())
    semi = data["rounds"][-1]
    color = status["color"]
    assert semi["stage"] == "semi" and semi["color"] == color
    seed = semi["reading_seed"]
    # the 18th card of the round's order (the order of 20 starts with the 17 read)
    order20 = plan("--rules", "goshiki", "--color", color, "--seed", seed, "--cards", 20,
                   *FAST)["order"]
    order17 = plan("--rules", "goshiki", "--color", color, "--seed", seed, *FAST)["order"]
    assert order20[:17] == order17
    card = order20[17]

    home = tmp_path / "home"
    home.mkdir()
    raw = home / "capture.raw"
    (home / ".asoundrc").write_text(APPEND_ASOUNDRC.format(raw=raw))
    res = karuta("tournament", "read", "-f", db, "--tiebreak", 1, *FAST, env={"HOME": str(home)})
    assert res.returncode == 0, res.stderr
    assert "tie-break card 18" in res.stdout and "finished: 1 of 1 cards read" in res.stdout
    sess = json.loads((tmp_path / "t-pages" / f"round{semi['round']}-reading-tiebreak1.json")
                      .read_text())
    assert [e["poem"] for e in sess["log"]] == [card]
    ref = tmp_path / "ref.wav"
    r = run_inproc("render", "--out", ref, "--rules", "goshiki", "--poems", card, "--cards", 1,
               "--no-joka", "--seed", seed, *FAST)
    assert r.returncode == 0, r.stderr
    import soundfile as sf

    want, _ = sf.read(ref, dtype="int16")
    time.sleep(0.3)
    got = np.fromfile(raw, dtype=np.int16)
    off = find_lead_in(got, want)
    assert np.array_equal(got[off:off + len(want)], want)
    # a preliminary round has no tie-break: one line (refused before any sound: in-process)
    r = run_inproc("tournament", "read", "-f", db, "--round", 1, "--tiebreak", 1, *FAST)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "a tie is a draw" in r.stderr


@pytest.mark.realtime
def test_round_reading_memorisation_quit_resume(pulse_server, tmux, tmp_path):
    db = make_day(tmp_path)
    status = js("tournament", "status", "-f", db)
    data = js("tournament", "export", "-f", db)
    seed = data["rounds"][0]["reading_seed"]
    color = status["color"]
    order = plan("--rules", "goshiki", "--color", color, "--seed", seed, *FAST)["order"]
    assert len(order) == 17
    env = pulse_env(tmp_path)
    tmux.start([*karuta_argv(), "tournament", "read", "-f", str(db), "--device", "pulse", *FAST],
               env)
    s = tmux.wait_for("memorisation", f"seed {seed}")
    assert f"goshiki {color} · 17 cards" in s  # the round's colour on the reader's screen
    assert 20 <= memorisation_left(s) <= 30, s  # seed 004: 30 s
    tmux.keys("s")  # skip the memorisation
    # heard on the sink: a second's listening at a time (a loaded machine once started the
    # sound after the first second, and the test failed on a single second)
    wait_until(lambda: pulse_server.listen(1.0).any(), 30, "the reading heard on the sink")
    tmux.wait_for("card 1/17", timeout=60)
    sess_path = tmp_path / "t-pages" / "round1-reading.json"
    # (p holds at the next silence: the same club session, tests/test_club.py)
    wait_until(lambda: json.loads(sess_path.read_text())["position"] >= 1, 30, "card 1 read")
    tmux.keys("q")
    s = tmux.wait_for("EXIT=0", timeout=30)
    saved = json.loads(sess_path.read_text())
    assert "`karuta tournament read --resume` continues" in s
    from poems import COLORS

    assert saved["reading"]["poems"] == sorted(COLORS[color]) and saved["seed"] == seed
    done = saved["position"]
    assert 0 < done < 17
    assert [e["poem"] for e in saved["log"]][:done] == order[:done]
    # --resume goes on at the next card, same order
    tmux.start([*karuta_argv(), "tournament", "read", "-f", str(db), "--resume", "--device",
                "pulse", *FAST], env)
    tmux.wait_for(f"resuming at card {done + 1}/17", timeout=30)
    wait_until(lambda: json.loads(sess_path.read_text())["position"] > done, 60,
               f"card {done + 1} read")
    tmux.keys("q")
    tmux.wait_for("EXIT=0", timeout=30)
    log = json.loads(sess_path.read_text())["log"]
    assert [e["poem"] for e in log] == order[:len(log)] and len(log) > done


@pytest.mark.realtime
def test_goshiki_live_reading_memorises_30_seconds_by_default(pulse_server, tmux, tmp_path):
    sess = tmp_path / "g.json"
    env = pulse_env(tmp_path)
    tmux.start([*karuta_argv(), "read", "--rules", "goshiki", "--color", "blue", "--live",
                "--device", "pulse", "--session", str(sess), "--seed", "3", *FAST], env)
    s = tmux.wait_for("memorisation")
    assert 20 <= memorisation_left(s) <= 30, s
    tmux.keys("q")
    tmux.wait_for("EXIT=0")
    tmux.start([*karuta_argv(), "read", "--live", "--device", "pulse", "--session",
                str(tmp_path / "k.json"), "--seed", "3", *FAST], env)
    s = tmux.wait_for("memorisation")
    assert 14 * 60 <= memorisation_left(s) <= 15 * 60, s
    tmux.keys("q")
    tmux.wait_for("EXIT=0")
