"""The `karuta` command end to end, as a user runs it (subprocesses, real files, real devices).

The tests marked ``entry_point`` (help, listings, sound, one bad option) run the installed
command; the other pure commands (files and text out) run in this process
(``cli_run.run_marked``)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf

from audio_fixtures import ASOUNDRC, find_lead_in, read_wav_capture
from cli_run import karuta_argv, one_line_error, run_marked

FAST = ["--voice", "tone", "--no-joka", "--ma", "0.3", "--take", "0.2", "--yoin", "0.2"]


def karuta(*args, env=None, input=None, timeout=120):
    """The installed command in a test marked ``entry_point``, else in this process."""
    return run_marked(*args, env=env, input=input, timeout=timeout)


@pytest.mark.entry_point
def test_help_lists_the_commands():
    res = karuta("--help")
    assert res.returncode == 0
    for cmd in ("read", "render", "plan", "poems", "kimariji", "match"):
        assert cmd in res.stdout


@pytest.mark.entry_point
def test_poems_json_is_the_stable_form():
    data = json.loads(karuta("poems", "--json").stdout)
    assert len(data) == 100
    p44 = data[43]
    assert p44["no"] == 44 and p44["kimariji"] == "あふこ" and p44["kimariji_sound"] == "おおこ"
    for p in data:
        assert {"no", "author", "kanji", "kana", "reading", "kimariji", "kimariji_sound", "color"} <= set(p)
        assert len(p["kanji"]) == len(p["kana"]) == len(p["reading"]) == 5
        assert p["color"] in {"blue", "pink", "yellow", "green", "orange"}


def test_kimariji_after_reads_and_among_a_colour():
    d = json.loads(karuta("kimariji", "--read", "21,61", "--json").stdout)
    assert len(d) == 98 and d["63"] == {"kimariji": "い", "kimariji_sound": "い"}
    d = json.loads(karuta("kimariji", "--among", "blue", "--json").stdout)
    assert set(map(int, d)) == set(json.loads(karuta("poems", "--color", "blue", "--json").stdout)[i]["no"]
                                   for i in range(20))


def test_plan_json_is_reproducible_from_the_seed():
    a = json.loads(karuta("plan", "--json", "--seed", "12", *FAST).stdout)
    b = json.loads(karuta("plan", "--json", "--seed", "12", *FAST).stdout)
    c = json.loads(karuta("plan", "--json", "--seed", "13", *FAST).stdout)
    assert a == b and a["order"] != c["order"]
    assert sorted(a["order"]) == list(range(1, 101))
    assert {s["kind"] for s in a["segments"]} == {"kami", "take", "shimo", "ma"}
    assert all(s["end_ms"] - s["start_ms"] == pytest.approx(300.0) for s in a["segments"] if s["kind"] == "ma")


def test_joka_pauses_are_reading_options():
    """The jo-ka's pauses (issue 21's reader: 1.5 s before its 下の句, 0.9 s before it is read
    again) are options like every pause."""
    def gaps(*opts):
        plan = json.loads(karuta("plan", "--json", "--seed", "1", "--cards", "1", "--voice", "tone", *opts).stdout)
        return [s["end_ms"] - s["start_ms"] for s in plan["segments"] if s["kind"] == "gap"]

    assert gaps() == pytest.approx([1500.0, 900.0])
    assert gaps("--joka-gap", "2", "--gap", "0.5") == pytest.approx([2000.0, 500.0])


def test_render_writes_what_the_plan_says(tmp_path):
    out, plan_out = tmp_path / "r.wav", tmp_path / "r.json"
    res = karuta("render", "--out", str(out), "--plan-out", str(plan_out), "--seed", "3", "--cards", "4", *FAST)
    assert res.returncode == 0, res.stderr
    audio, rate = sf.read(out, dtype="int16")
    info = sf.info(out)
    assert info.subtype == "PCM_16" and rate == 48000
    plan = json.loads(plan_out.read_text())
    assert len(audio) == plan["frames"]
    for seg in plan["segments"]:
        part = audio[seg["start_frame"]:seg["end_frame"]]
        if seg["kind"] in ("ma", "take"):
            assert not part.any(), f"{seg['kind']} before/after {seg['poem']} is not silent"
        else:
            assert np.abs(part[:480]).max() > 0, "speech starts where the plan says"
    # the last 上の句 starts on the sample the plan says: silence right up to it, sound right after
    last = [s for s in plan["segments"] if s["kind"] == "kami"][-1]
    assert not audio[last["start_frame"] - 14400:last["start_frame"]].any()


@pytest.mark.entry_point
def test_read_auto_plays_exactly_the_rendered_file(tmp_path):
    """Live playback through real PortAudio/ALSA carries the same samples as the file."""
    home = tmp_path / "home"
    home.mkdir()
    cap = home / "capture.wav"
    (home / ".asoundrc").write_text(ASOUNDRC.format(rate=48000, wav=cap))
    args = ["--seed", "5", "--cards", "2", *FAST]
    res = karuta("read", "--auto", *args, env={"HOME": str(home)}, input="")
    assert res.returncode == 0, res.stderr
    assert "[2/2]" in res.stdout
    karuta("render", "--out", str(tmp_path / "ref.wav"), *args)
    ref, _ = sf.read(tmp_path / "ref.wav", dtype="int16")
    got = read_wav_capture(cap)
    off = find_lead_in(got, ref)
    assert np.array_equal(got[off:off + len(ref)], ref)


def test_read_live_waits_for_the_reader(tmp_path):
    """Without --auto the reading stops after each 上の句 until a key; q quits cleanly."""
    home = tmp_path / "home"
    home.mkdir()
    cap = home / "capture.wav"
    (home / ".asoundrc").write_text(ASOUNDRC.format(rate=48000, wav=cap))
    # no keys at all: the reader waits at the first take; closing input ends nothing, so send q
    proc = subprocess.Popen(karuta_argv("read", "--seed", "5", "--cards", "2", *FAST),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, HOME=str(home)))
    first = ""
    while "[1/2]" not in first:  # wait for the first card's line, however slow the machine
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        first += line
    proc.stdin.write("q")
    proc.stdin.flush()
    out, err = proc.communicate(timeout=60)
    out = first + out
    assert proc.returncode == 0, err
    assert "[1/2]" in out and "[2/2]" not in out, out
    assert "stopped" in out


@pytest.mark.parametrize("args,words", [
    (["plan", "--color", "purple"], ["purple"]),
    (["plan", "--poems", "101"], ["101"]),
    (["plan", "--poems", "1-3", "--cards", "5"], ["more than"]),
    (["plan", "--speed", "10"], ["speed"]),
    (["plan", "--rules", "goshiki"], ["colour"]),
    pytest.param(["plan", "--bogus"], ["--bogus"], marks=pytest.mark.entry_point),
    (["kimariji", "--read", "0"], ["0"]),
    (["render", "--out", "/nonexistent/dir/x.wav", "--voice", "tone"], ["/nonexistent/dir"]),
    (["render", "--voice", "nosuchvoice", "--out", "x.wav"], ["nosuchvoice"]),
])
def test_bad_input_is_one_line_and_exit_1(args, words, tmp_path):
    one_line_error(karuta(*args), *words)


@pytest.mark.entry_point
def test_no_sound_device_points_to_render(tmp_path):
    empty = tmp_path / "run"
    empty.mkdir()
    res = karuta("read", "--voice", "tone", env={"HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(empty),
                                                 "PULSE_SERVER": f"unix:{empty}/none"})
    one_line_error(res, "no sound device", "karuta render")


def test_a_whole_100_card_reading_does_not_drift(tmp_path):
    """Every 間 is exactly 1 s to the sample and the last 上の句 starts on the planned sample."""
    out, plan_out = tmp_path / "r.wav", tmp_path / "r.json"
    res = karuta("render", "--out", str(out), "--plan-out", str(plan_out), "--seed", "8",
                 "--voice", "tone", "--speed", "4", "--take", "0.5", "--yoin", "0.3")
    assert res.returncode == 0, res.stderr
    audio, _ = sf.read(out, dtype="int16")
    plan = json.loads(plan_out.read_text())
    assert len(audio) == plan["frames"]
    kami = [s for s in plan["segments"] if s["kind"] == "kami" and isinstance(s["poem"], int)]
    mas = [s for s in plan["segments"] if s["kind"] == "ma"]
    assert len(kami) == len(mas) == 100
    for ma in mas:
        assert ma["end_frame"] - ma["start_frame"] == 48000
        seg = audio[ma["start_frame"] - 240:ma["end_frame"] + 240]
        # sound up to the 間, exactly 48000 silent samples, sound right after it
        assert not seg[240:-240].any()
        assert seg[:240].any() and seg[-240:].any()
