"""Nothing the user made is lost on the newer commands (issue 22): practice logs, table saves,
files reached through symbolic links, the data folder, voice packs and recordings, the club
session log.

Each test injects the fault through the ``karuta`` command (or holds the lock a second
command would hold) and checks what a user would see: one line ``karuta: ...``, exit 1, and
their files as they were — or, for the concurrency cases, every action kept.  The concurrent
cases are made repeatable by holding the save's lock in the test, never left to timing.

The commands run in this process (``cli_run.run_marked``); the tests marked ``entry_point``,
and the concurrent ones, run them as processes of their own, as a user's shell does.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from cli_run import karuta_argv, karuta_env, one_line_error, run_inproc, run_marked
from audio_fixtures import pulse_server  # noqa: F401 (fixture)
from faults_table import inproc  # noqa: F401 (fixture)

TONE = ("--voice", "tone")


def karuta(tmp_path, *args, env=None, input=None, timeout=120, run=run_marked):
    full = {"KARUTA_DATA_DIR": str(tmp_path / "data"),
            "KARUTA_CONFIG_DIR": str(tmp_path / "config"),
            "KARUTA_CACHE_DIR": str(tmp_path / "cache"), **(env or {})}
    return run(*map(str, args), env=full, input=input, timeout=timeout, cwd=tmp_path)


def ok(res):
    assert res.returncode == 0, (res.stdout, res.stderr)
    return res


# ------------------------------------------------------------------ practice logs

def _practice_log(tmp_path, name="m.jsonl", seed=7) -> Path:
    """A practice log to damage (made in this process: what is tested is the next command)."""
    log = tmp_path / name
    ok(karuta(tmp_path, "practice", "--bot-vs-bot", "2,4", "--seed", seed, "--cards", "3",
              "--log", log, *TONE, run=run_inproc))
    return log


@pytest.mark.parametrize("argv", [
    ["--bot-vs-bot", "1,1", "--cards", "2"],                     # headless: exit 0 before
    pytest.param(["--vs", "bot:2", "--device", "karuta-no-such-device"],  # window: no display
                 marks=pytest.mark.entry_point),
], ids=["bot-vs-bot", "window"])
def test_practice_does_not_start_over_an_existing_log(tmp_path, argv):
    log = _practice_log(tmp_path)
    before = log.read_bytes()
    res = karuta(tmp_path, "practice", "--log", log, "--seed", "3", *argv, *TONE)
    one_line_error(res, "m.jsonl exists", "--resume")
    assert log.read_bytes() == before
    # match keep refuses it too, and names what it is (a practice log, not a match log of its own)
    keep = karuta(tmp_path, "match", "keep", "--rules", "kyogi", "--log", log, input="")
    one_line_error(keep, "m.jsonl is a practice log", "would replace it")
    assert log.read_bytes() == before


def test_practice_writes_no_log_before_the_sound_device_opened(tmp_path, xvfb):
    log = tmp_path / "new.jsonl"
    res = karuta(tmp_path, "practice", "--vs", "bot:2", "--seed", "9", "--log", log,
                 "--device", "karuta-no-such-device", *TONE, env={"DISPLAY": xvfb})
    one_line_error(res, "karuta-no-such-device")
    assert not log.exists() and not list(tmp_path.glob(".new.jsonl*"))


@pytest.mark.parametrize("where,value,words", [
    pytest.param("simultaneous_ms", "abc", ["simultaneous_ms", "0-1000"],
                 marks=pytest.mark.entry_point),
    ("simultaneous_ms", 1e308, ["simultaneous_ms", "1e+308"]),
    ("simultaneous_ms", -5, ["simultaneous_ms"]),
    ("simultaneous_ms", True, ["simultaneous_ms"]),
    ("reading.joka", "x", ["joka", "true or false"]),
    ("reading.ma_ms", "x", ["ma"]),
    ("reading.speed", 1e308, ["speed"]),
])
def test_resume_of_a_log_with_absurd_practice_settings_is_one_line(tmp_path, where, value, words):
    log = _practice_log(tmp_path)
    lines = log.read_text().splitlines()
    head = json.loads(lines[0])
    if where.startswith("reading."):
        head["practice"]["reading"][where.split(".")[1]] = value
    else:
        head["practice"][where] = value
    log.write_text("\n".join([json.dumps(head)] + lines[1:3]) + "\n")
    before = log.read_bytes()
    res = karuta(tmp_path, "practice", "--log", log, "--resume", "--bot-vs-bot", "1,1", *TONE)
    one_line_error(res, "m.jsonl line 1", *words)
    assert log.read_bytes() == before


def test_resume_of_another_rules_or_a_corrupt_log_is_one_line(tmp_path):
    kyogi = _practice_log(tmp_path)
    goshiki = tmp_path / "g.jsonl"
    ok(karuta(tmp_path, "practice", "--bot-vs-bot", "1,2", "--rules", "goshiki", "--seed", "4",
              "--log", goshiki, *TONE))
    mixed = tmp_path / "mixed.jsonl"  # a goshiki deal with kyogi reads
    mixed.write_text(goshiki.read_text().splitlines()[0] + "\n"
                     + "\n".join(kyogi.read_text().splitlines()[1:3]) + "\n")
    cut = tmp_path / "cut.jsonl"
    cut.write_text(kyogi.read_text()[:-40])
    for log, words in ((mixed, ["mixed.jsonl line 2"]), (cut, ["cut.jsonl line"])):
        before = log.read_bytes()
        res = karuta(tmp_path, "practice", "--log", log, "--resume", "--bot-vs-bot", "1,1", *TONE)
        one_line_error(res, *words)
        assert log.read_bytes() == before


# ------------------------------------------------------------------ table saves

def _table(tmp_path, name="c.json") -> Path:
    save = tmp_path / name
    ok(karuta(tmp_path, "table", "cards", "new", save, "--seed", "1", "--player", "a:s",
              run=run_inproc))
    return save


def _names(save: Path) -> list[str]:
    return [a.get("name") for a in json.loads(save.read_text())["actions"]]


def test_two_table_commands_at_once_keep_both_actions(tmp_path):
    """The test holds the save's lock, so both commands are certainly running at once: both
    wait, then each applies its action to what the other saved."""
    from reader.table.store import locked

    save = _table(tmp_path)
    free = _table(tmp_path, "free.json")
    env = karuta_env({"KARUTA_DATA_DIR": str(tmp_path / "data")})

    def do(path, n):
        return subprocess.Popen(karuta_argv("table", "cards", "do", str(path), f"player {n} h"),
                                env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    with locked(save):
        procs = [do(save, n) for n in ("b", "c")]
        # the same command on a save nobody holds, started with them: it loads, changes and
        # writes its save in some time T on this machine as busy as it is now; after 2 T
        # they would certainly have saved theirs, were they not waiting
        start = time.monotonic()
        control = do(free, "d")
        assert control.communicate(timeout=60)[1] == "" and control.returncode == 0
        time.sleep(time.monotonic() - start)
        assert _names(free) == ["a", "d"]
        assert all(p.poll() is None for p in procs), "a command did not wait for the lock"
        assert _names(save) == ["a"]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert sorted(_names(save)[1:]) == ["b", "c"]
    log = (tmp_path / "c.json.log.txt").read_text()
    assert "#2 player" in log and "#3 player" in log


def test_a_table_command_that_cannot_get_the_lock_is_one_line(inproc, monkeypatch):
    from reader.base import files
    from reader.table.store import locked

    rc, _, err = inproc(["table", "cards", "new", "{tmp}/locked-table.json", "--seed", "1", "--player", "a:s"])
    assert rc == 0, err
    save = inproc.root / "locked-table.json"
    before = save.read_bytes()
    monkeypatch.setattr(files, "LOCK_WAIT_S", 0.3)
    with locked(save):
        rc, _, err = inproc(["table", "cards", "do", "{tmp}/locked-table.json", "player b h"])
    assert rc == 1 and err.count("\n") == 1 and "being changed by another karuta" in err, err
    assert save.read_bytes() == before


def test_the_prompt_keeps_an_action_another_command_saved(tmp_path):
    save = _table(tmp_path)
    p = subprocess.Popen(karuta_argv("table", "cards", "play", "--save", str(save), "--resume"),
                         env=karuta_env({"KARUTA_DATA_DIR": str(tmp_path / "data")}), cwd=tmp_path,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        seen = ""
        while "cards> " not in seen:  # the prompt has loaded the save
            ch = p.stdout.read(1)
            assert ch, p.stderr.read()
            seen += ch
        ok(karuta(tmp_path, "table", "cards", "do", save, "player b h"))
        out, err = p.communicate("player c d\nq\n", timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    assert "changed by another karuta" in out
    assert _names(save) == ["a", "b", "c"]


def test_a_gm_log_that_cannot_be_written_stops_the_action_before_the_save(tmp_path):
    save = _table(tmp_path)
    log = tmp_path / "c.json.log.txt"
    log.unlink()
    log.mkdir()  # the GM's log cannot be written (a folder in its place)
    before = save.read_bytes()
    one_line_error(karuta(tmp_path, "table", "cards", "do", save, "player b h"), "c.json.log.txt")
    assert save.read_bytes() == before  # not saved: trying again does not apply it twice
    log.rmdir()
    ok(karuta(tmp_path, "table", "cards", "do", save, "player b h"))
    assert _names(save) == ["a", "b"]
    assert log.read_text().count("player b") == 1


# ------------------------------------------------------------------ symbolic links

def test_saves_and_logs_that_are_links_are_written_through(tmp_path):
    real = tmp_path / "synced"
    real.mkdir()
    save = _table(real)
    (tmp_path / "c.json").symlink_to(save)
    (tmp_path / "c.json.log.txt").symlink_to(real / "c.json.log.txt")
    ok(karuta(tmp_path, "table", "cards", "do", tmp_path / "c.json", "player b h"))
    assert (tmp_path / "c.json").is_symlink() and (tmp_path / "c.json.log.txt").is_symlink()
    assert _names(save) == ["a", "b"] and "player b" in (real / "c.json.log.txt").read_text()

    log = _practice_log(real)
    lines = log.read_text().splitlines()
    log.write_text("\n".join(lines[:3]) + "\n")  # a match cut after two reads
    (tmp_path / "m.jsonl").symlink_to(log)
    ok(karuta(tmp_path, "practice", "--log", tmp_path / "m.jsonl", "--resume",
              "--bot-vs-bot", "2,4", *TONE))
    assert (tmp_path / "m.jsonl").is_symlink()
    assert len(log.read_text().splitlines()) == len(lines)  # the linked copy has the match


def test_atomic_writes_follow_links_keep_permissions_and_stage_every_file(tmp_path):
    from reader.base.errors import OutputError
    from reader.base.files import atomic_write_text, atomic_write_texts

    target = tmp_path / "elsewhere" / "save.json"
    target.parent.mkdir()
    link = tmp_path / "save.json"
    link.symlink_to(target)  # dangling: the first write makes the file it names
    atomic_write_text(link, "one")
    assert link.is_symlink() and target.read_text() == "one"
    target.chmod(0o600)
    atomic_write_text(link, "two")
    assert target.read_text() == "two" and (target.stat().st_mode & 0o777) == 0o600
    (tmp_path / "log.txt").mkdir()
    with pytest.raises(OutputError, match="log.txt"):
        atomic_write_texts([(link, "three"), (tmp_path / "log.txt", "log")])
    assert target.read_text() == "two"
    assert sorted(p.name for p in target.parent.iterdir()) == ["save.json"]  # no temp left


# ------------------------------------------------------------------ the data folder

@pytest.mark.parametrize("argv", [
    pytest.param(["stats"], marks=pytest.mark.entry_point),
    ["drill", "memory", "--count", "1"], ["read", "--show-log"],
    ["tournament", "new", "--players", "{tmp}/p.csv", "--seed", "1"],
    ["voice", "add", "{tmp}/src"],
], ids=lambda a: " ".join(a[:2]))
def test_a_data_folder_that_is_a_dangling_link_is_one_line(tmp_path, argv):
    (tmp_path / "p.csv").write_text("name\na\nb\nc\nd\n")
    (tmp_path / "src").mkdir()
    link = tmp_path / "data"
    link.symlink_to(tmp_path / "unmounted" / "karuta")
    res = karuta(tmp_path, *[a.replace("{tmp}", str(tmp_path)) for a in argv])
    one_line_error(res, "data folder", "link to", "does not exist")
    assert not (tmp_path / "unmounted").exists()  # nothing made at the link's target


def test_a_config_folder_that_is_a_file_is_one_line(tmp_path):
    (tmp_path / "config").write_text("not a folder")
    one_line_error(karuta(tmp_path, "voice", "use", "synth"), "config folder", "is a file")
    assert (tmp_path / "config").read_text() == "not a folder"


# ------------------------------------------------------------------ club session, packs

@pytest.mark.parametrize("log, words", [
    ([{"poem": 1}, {"card": 2, "poem": 2}], ("line 1 has no card number",)),
    ([{"card": 1, "poem": 1}, {"card": 3, "poem": 2}], ("line 2: card 3 is poem 3",)),
    ([{"card": 9, "poem": 1}], ("line 1: card 9 of 3",)),
], ids=["no card", "another poem", "past the order"])
def test_a_session_whose_read_log_does_not_fit_its_order_is_damaged(tmp_path, log, words):
    """Issue 33: a read-log entry without its card showed as "?" (exit 0): the session is
    said to be damaged in one line, by --show-log and --resume alike, and left as it is."""
    sessions = tmp_path / "data" / "sessions"
    sessions.mkdir(parents=True)
    saved = {"kind": "karuta-club-session", "version": 2, "reading": {"rules": "kyogi"},
             "seed": 1, "order": [1, 2, 3], "position": 2, "voice_spec": None, "log": log}
    (sessions / "last.json").write_text(json.dumps(saved))
    before = (sessions / "last.json").read_bytes()
    for argv in (["read", "--show-log"], ["read", "--resume", "--voice", "tone"]):
        one_line_error(karuta(tmp_path, *argv), "last.json is damaged", "read log", *words,
                       "left as it is")
    assert (sessions / "last.json").read_bytes() == before
    assert sorted(p.name for p in sessions.iterdir()) == ["last.json"]


def _pack(tmp_path, name="p", toml: str | None = None) -> Path:
    import numpy as np
    import soundfile as sf

    src = tmp_path / f"src-{name}"
    src.mkdir()
    t = np.arange(48000) / 48000
    x = (0.3 * np.sin(2 * np.pi * 220 * t) * np.minimum(1, np.minimum(t, 1 - t) * 20))
    for part in (1, 2):
        sf.write(src / f"001_{part}.wav", x.astype("float32"), 48000, subtype="PCM_16")
    if toml is not None:
        (src / "voice.toml").write_text(toml)
    return src


def test_a_pack_index_clip_without_its_file_is_one_line(tmp_path):
    ok(karuta(tmp_path, "voice", "add", _pack(tmp_path), "--name", "p", "--no-align"))
    index = tmp_path / "data" / "voices" / "p" / "pack.json"
    meta = json.loads(index.read_text())
    del meta["clips"]["1.kami"]["file"]
    index.write_text(json.dumps(meta))
    before = index.read_bytes()
    for argv in (["voice", "check", "p"], ["render", "--voice", "p", "--poems", "1",
                                             "--no-joka", "--out", tmp_path / "o.wav"]):
        one_line_error(karuta(tmp_path, *argv), "pack.json", "file")
    assert "damaged" in ok(karuta(tmp_path, "voice", "list")).stdout
    assert index.read_bytes() == before


def test_a_clip_field_at_the_top_of_voice_toml_is_reported(tmp_path):
    src = _pack(tmp_path, toml='name = "g"\ngain_db = -3\ncolour = "red"\n')
    res = ok(karuta(tmp_path, "voice", "add", src, "--no-align"))
    assert "gain_db = -3 applies to one clip" in res.stdout
    assert "colour: unknown field" in res.stdout
    one_line_error(karuta(tmp_path, "voice", "check", "g"), "problems")


def test_an_absurd_gain_at_the_top_of_voice_toml_is_refused(tmp_path):
    """Issue 33: ``gain_db = 1e308`` (at the top, where a user may think it sets the whole
    pack) was accepted with exit 0: one line, nothing installed."""
    src = _pack(tmp_path, toml='name = "g"\ngain_db = 1e308\n')
    one_line_error(karuta(tmp_path, "voice", "add", src, "--no-align"),
                   "gain_db = 1e+308 is out of range", "nothing was imported")
    assert not (tmp_path / "data" / "voices" / "g").exists()


# ------------------------------------------------------------------ voice record

def test_an_unwritable_recordings_folder_is_said_before_recording(tmp_path, monkeypatch):
    from reader.base.errors import KarutaError
    from reader.voices.recorder import RecordSession, clip_order

    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "voice.toml").write_text('name = "mine"\n')  # prepared by an earlier session
    monkeypatch.setenv("KARUTA_DATA_DIR", str(tmp_path / "data"))
    session = RecordSession("mine", clip_order((1,), False), folder=folder)
    import tempfile

    def refuse(*a, **k):  # what a read-only folder does to a new file (root ignores modes)
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "TemporaryFile", refuse)
    with pytest.raises(KarutaError, match="cannot write .*mine: Permission denied"):
        session.prepare()


def test_a_take_that_cannot_be_saved_is_kept_and_rescued(tmp_path, monkeypatch):
    import numpy as np
    import soundfile as sf

    from reader.base.errors import KarutaError
    from reader.voices.recorder import RecordSession, clip_order

    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    folder = tmp_path / "mine"
    session = RecordSession("mine", clip_order((1,), False), folder=folder)
    session.prepare()
    take = np.full(4800, 0.25, np.float32)
    (folder / "001_1.flac").mkdir()  # the take's name is taken: the save fails
    with pytest.raises(KarutaError):
        session.save(session.current, take)
    session.keep_unsaved(session.current, take)
    rescued, where = session.save_unsaved()
    assert [c.filename for c in rescued] == ["001_1.flac"]
    assert where.parent == tmp_path / "tmp"
    x, rate = sf.read(where / "001_1.flac", dtype="float32")
    assert rate == 48000 and np.allclose(x, take, atol=1e-4)
    (folder / "001_1.flac").rmdir()  # once the folder is fixed, a kept take goes home
    session.keep_unsaved(session.current, take)
    assert session.save_unsaved() == ([], None) and (folder / "001_1.flac").is_file()


def test_the_default_voice_setting_and_a_club_session_that_are_links_stay_links(tmp_path):
    from reader.club.store import keep_previous

    real = tmp_path / "synced"
    real.mkdir()
    (real / "voice.toml").write_text('default = "synth"\n')
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "voice.toml").symlink_to(real / "voice.toml")
    ok(karuta(tmp_path, "voice", "use", "tone"))
    assert (tmp_path / "config" / "voice.toml").is_symlink()
    assert 'default = "tone"' in (real / "voice.toml").read_text()

    (real / "last.json").write_text('{"the": "unfinished session"}')
    last = tmp_path / "last.json"
    last.symlink_to(real / "last.json")
    line = keep_previous(last)  # a new club session starts: the old one is kept, the link stays
    assert last.is_symlink()
    [kept] = tmp_path.glob("previous-*.json")
    assert not kept.is_symlink() and kept.read_text() == '{"the": "unfinished session"}'
    assert str(kept) in line and "damaged" in line  # (not a session karuta can read back)


def _session(order, position, seed=1):
    return {"kind": "karuta-club-session", "version": 2, "reading": {"rules": "kyogi"},
            "seed": seed, "order": order, "position": position, "voice_spec": None,
            "log": [{"card": k + 1, "poem": order[k]} for k in range(position)],
            "updated": f"2026-12-{seed:02d}T19:30:00+09:00"}


def test_new_sessions_set_the_last_aside_with_its_time_and_say_so(tmp_path):
    """Issue 34: a new reading silently set the unfinished one aside as previous.json, one
    level kept (a second new reading lost it).  Each is set aside under the time of its last
    save, said in one line with the command that continues it; the newest 10 are kept (the
    line names one removed); ``read --list-sessions`` lists them and ``--resume --session``
    continues one."""
    from reader.club import store

    sessions = tmp_path / "data" / "sessions"
    sessions.mkdir(parents=True)
    last = sessions / "last.json"
    lines, kept = [], []
    for i in range(1, 13):
        last.write_text(json.dumps(_session([1, 2, 3], i % 3, seed=i)))
        os.utime(last, (1_800_000_000 + i * 60,) * 2)
        kept.append(last.read_bytes())
        lines.append(store.keep_previous(last))
        assert not last.exists()
    first = lines[0]
    assert first.startswith("the last session (stopped before card 2/3 · kyogi · seed 1 · last "
                            "saved 2026-12-01 19:30) was set aside as ")
    assert "`karuta read --resume --session " in first and "--list-sessions" in first
    aside = store.set_aside_sessions(last)
    assert len(aside) == 10 and [p.read_bytes() for p in aside] == kept[:1:-1]
    assert "was removed: the newest 10 are kept" in lines[10] and "removed" not in lines[9]
    res = ok(karuta(tmp_path, "read", "--list-sessions"))
    listed = res.stdout.splitlines()
    assert len(listed) == 11 and listed[0].startswith(str(aside[0]) + ": ")
    assert "stopped before card 1/3 · kyogi · seed 12" in listed[0] and "seed 11" in listed[1]
    assert listed[-1] == "continue one with: karuta read --resume --session PATH"
    res = ok(karuta(tmp_path, "read", "--show-log", "--session", aside[1]))
    assert "seed 11" in res.stdout and "next card 3/3" in res.stdout


@pytest.mark.realtime
@pytest.mark.entry_point
def test_voice_record_keeps_a_take_it_cannot_save(pulse_server, tmux, tmp_path):
    """Through the command, recording from a PulseAudio null sink's monitor: the take's file
    name is taken by a folder, so the save fails; the take is kept, and at quit written to
    the temp folder and said (exit 1).  A recordings folder that is a file: one line first."""
    import numpy as np
    import soundfile as sf

    from audio_fixtures import require_tool

    subprocess.run(["pactl", "set-default-source", f"{pulse_server.sink}.monitor"],
                   env=pulse_server.env, check=True)
    data, tmp = tmp_path / "data", tmp_path / "tmp"
    tmp.mkdir()
    env = {"KARUTA_DATA_DIR": str(data), "KARUTA_CONFIG_DIR": str(tmp_path / "cfg"),
           "TMPDIR": str(tmp), "XDG_RUNTIME_DIR": pulse_server.env["XDG_RUNTIME_DIR"],
           "PULSE_SERVER": pulse_server.env["PULSE_SERVER"], "HOME": pulse_server.env["HOME"]}
    (data / "recordings").mkdir(parents=True)
    (data / "recordings" / "flat").write_text("a file where the folder goes")
    res = karuta(tmp_path, "voice", "record", "flat", "--poems", "1", env=env)
    one_line_error(res, "cannot write", "flat")
    assert (data / "recordings" / "flat").read_text() == "a file where the folder goes"

    stage = data / "recordings" / "mine"
    (stage / "001_1.flac").mkdir(parents=True)
    t = np.arange(int(1.5 * 48000)) / 48000
    tone = (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    wav = tmp_path / "tone.wav"
    sf.write(wav, np.concatenate([np.zeros(24000, np.float32), tone,
                                  np.zeros(4800, np.float32)]), 48000, subtype="PCM_16")
    tmux.start(karuta_argv("voice", "record", "mine", "--poems", "1", "--no-align",
                           "--stop-after", "0.8"), env)
    tmux.wait_for("clip 1/2")
    tmux.keys("Space")
    tmux.wait_for("● REC")
    subprocess.run([require_tool("pacat", "pulseaudio-utils"), "-d", pulse_server.sink,
                    "--file-format=wav", str(wav)], env=pulse_server.env, check=True, timeout=20)
    tmux.wait_for("the take is kept")
    tmux.keys("q")
    s = tmux.wait_for("EXIT=", timeout=60)
    assert "EXIT=1" in s and "could not be saved" in s, s
    rescued = list(tmp.glob("karuta-unsaved-mine-*/001_1.flac"))
    assert len(rescued) == 1
    x, rate = sf.read(rescued[0], dtype="float32")
    assert rate == 48000 and len(x) / rate == pytest.approx(1.5, abs=0.05)


def test_a_new_table_in_a_missing_folder_makes_no_folder(tmp_path):
    save = tmp_path / "no" / "such" / "c.json"
    one_line_error(karuta(tmp_path, "table", "cards", "new", save, "--seed", "1"), "does not exist")
    one_line_error(karuta(tmp_path, "table", "cards", "new", "", "--seed", "1"))
    assert not (tmp_path / "no").exists()


def test_a_killed_writers_temp_file_is_removed_by_the_next_save(tmp_path):
    """SIGKILL between staging and renaming leaves ``.NAME.PID-xxxx.tmp``: the next save of
    that file removes it (its process is gone); a live process's temp file is left alone."""
    log = _practice_log(tmp_path)
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f".m.jsonl.{dead.pid}-abcd.tmp"
    live = tmp_path / f".m.jsonl.{os.getpid()}-efgh.tmp"
    for f in (stale, live):
        f.write_text('{"rules": "kyogi", "A": [1')  # half a log
    lines = log.read_text().splitlines()
    log.write_text("\n".join(lines[:3]) + "\n")
    ok(karuta(tmp_path, "practice", "--resume", "--log", log, "--bot-vs-bot", "2,4", *TONE))
    assert not stale.exists() and live.exists()
    assert len(log.read_text().splitlines()) > 3


def test_voice_add_and_voice_check_count_the_same_problems(tmp_path):
    """Issue 34: ``voice add`` listed 5 rows and ``voice check`` then said "has 1 problem":
    both say how many rows are listed, how many are problems (what fails the check) and how
    many are notes, and ``voice check``'s one line counts the same problems."""
    import re

    src = _pack(tmp_path)  # one poem of 1 s clips: too short; a partial pack; not aligned
    add = ok(karuta(tmp_path, "voice", "add", src, "--name", "p", "--no-align"))
    table = add.stdout[add.stdout.index("clip  "):].splitlines()
    rows = [ln for ln in table[1:] if not ln.startswith(("voice ", "use it"))]
    m = re.search(r"voice 'p': (\d+) listed: (\d+) problems, (\d+) notes \(partial, not "
                  r"aligned: they do not fail the check\)", add.stdout)
    assert m, add.stdout
    listed, problems, notes = map(int, m.groups())
    assert listed == len(rows) == problems + notes and notes == 2 and problems == 2
    check = karuta(tmp_path, "voice", "check", "p")
    one_line_error(check, f"voice 'p' has {problems} problems (listed above; the other 2 rows "
                          "are notes)")
    assert f"; {listed} listed: {problems} problems, 2 notes" in check.stdout


def test_a_progress_line_ends_before_the_next_line(tmp_path):
    """Issue 34: ``voice record``'s build line ran into the next ("1/1 clipsvoice 'mine'"):
    the progress line on a terminal is ended with a newline once drawn, however the work ends
    (an error too); off a terminal nothing is drawn."""
    import io

    from reader.cli.progress import LineProgress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    with LineProgress("building the pack", "clips", stream=tty) as bar:
        bar.update(1, 1)
    assert tty.getvalue() == "\rbuilding the pack: 1/1 clips\n"
    tty = Tty()
    with pytest.raises(RuntimeError):
        with LineProgress("importing", "files", stream=tty) as bar:
            bar.update(1, 3)
            raise RuntimeError
    assert tty.getvalue().endswith("1/3 files\n")
    quiet = io.StringIO()
    with LineProgress("importing", stream=quiet) as bar:
        bar.update(1, 3)
    assert quiet.getvalue() == ""
