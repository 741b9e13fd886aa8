"""`karuta table`: the command, end to end (save, resume, undo, --json, log, recite).

The commands run in this process (``cli_run.run_marked``); the tests marked ``entry_point``
(the prompt, a kill, sound through PortAudio) run the installed command as a user's shell does
(the files they start from are made in this process, ``setup``).  The synthesized voice's
clips come from the worker's shared cache (``synth_cache``): its cache is not tested here."""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import soundfile as sf

from audio_fixtures import ASOUNDRC, find_lead_in, read_wav_capture
from cli_run import karuta_argv, run_inproc, run_marked


def karuta(*args, input=None, env=None, timeout=180):
    return run_marked(*map(str, args), input=input, env=env, timeout=timeout)


def setup(*args):
    """``karuta ARGS`` in this process, for the files a test starts from."""
    return ok(run_inproc(*map(str, args)))


def ok(res):
    assert res.returncode == 0, res.stderr
    return res


def one_line_error(res, *words):
    assert res.returncode == 1, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("karuta: "), res.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert "Traceback" not in res.stderr


def do(save, system, line, *extra):
    return karuta("table", system, "do", save, line, *extra)


def state(save, system):
    return json.loads(ok(karuta("table", system, "show", save, "--json")).stdout)["state"]


# --- playing cards ------------------------------------------------------------------------------

def test_cards_new_judge_json_and_log(tmp_path):
    save = tmp_path / "c.json"
    out = json.loads(ok(karuta("table", "cards", "new", save, "--seed", "3", "--player", "tenjo:s",
                               "--npc", "oni", "--json")).stdout)
    hand = out["state"]["hands"]["tenjo"]
    assert len(hand) == 5 and out["state"]["people"]["tenjo"]["mode"] == "♠"
    assert out["state"]["pile"] == 108 - 5          # a count: the order is no one's to see
    two = hand[:2]
    r = json.loads(ok(do(save, "cards", f"judge tenjo 思考 2 12 {two[0]} {two[1]} t=20", "--json")).stdout)
    j = r["result"]["judgement"]
    expect = 12 + sum(10 if c == "JK" or c[1:] in "JQKA" else int(c[1:]) for c in two)
    assert j["value"] == expect and r["action"]["do"] == "judge"
    assert j["success"] == (expect >= 20 or j["critical"])
    assert sorted(r["state"]["discard"]) == sorted(two)
    log = (tmp_path / "c.json.log.txt").read_text()
    assert "#1 player tenjo" in log and f"#3 judgement 1: tenjo 思考 level 2" in log
    assert ok(karuta("table", "cards", "log", save)).stdout == log
    # undo through `do u`: the hand is whole again, and the log forgets the judgement
    r = json.loads(ok(do(save, "cards", "u", "--json")).stdout)
    assert r["result"]["undone"]["do"] == "judge" and sorted(r["state"]["hands"]["tenjo"]) == sorted(hand)
    assert "judgement 1" not in (tmp_path / "c.json.log.txt").read_text()


def test_cards_bad_input_is_one_line_and_changes_nothing(tmp_path):
    save = tmp_path / "c.json"
    ok(karuta("table", "cards", "new", save, "--seed", "3", "--player", "tenjo:♠"))
    hand = state(save, "cards")["hands"]["tenjo"]
    absent = next(f"{s}{r}" for s in "♠♥♦♣" for r in ("2", "3", "4", "5", "6", "7")
                  if f"{s}{r}" not in hand)
    before = save.read_bytes(), (tmp_path / "c.json.log.txt").read_bytes()
    for line, words in [
        ("judge tenjo 近接 2 5 ♣11", ["unknown card"]),                 # an unknown card
        (f"judge tenjo 近接 2 5 {absent}", ["not in tenjo's hand"]),   # a card not in the hand
        ("judge tenjo 近接 2 5 limit", ["only when the hand is short"]),
        ("judge nobody 近接 2 5", ["no one called"]),
        ("fly away", ["what is 'fly'"]),
        ("draw tenjo x", ["whole number"]),
    ]:
        one_line_error(do(save, "cards", line), *words)
    assert (save.read_bytes(), (tmp_path / "c.json.log.txt").read_bytes()) == before


# --- 現幻 -----------------------------------------------------------------------------------------

@pytest.mark.entry_point
def test_genkan_session_through_the_command(tmp_path):
    save = tmp_path / "t.json"
    ok(karuta("table", "genkan", "new", save, "--seed", "7", "--player", "在五:3", "--player",
              "小町:4", "--key", "17,61"))
    st = state(save, "genkan")
    assert st["keys"] == [17, 61] and len(st["players"]["在五"]["hand"]) == 3
    r = json.loads(ok(do(save, "genkan", "scene", "--json")).stdout)
    assert len(r["state"]["scene"]) == 3 and not set(r["state"]["scene"]) & {17, 61}
    card = st["players"]["在五"]["hand"][0]
    r = json.loads(ok(do(save, "genkan", f"act 在五 男 5 2 {card} sp=1", "--json")).stdout)
    j = r["result"]["judgement"]
    assert len(j["turned"]) == 5 and j["hand_used"] == [card]
    assert card not in r["state"]["players"]["在五"]["hand"]
    r = json.loads(ok(do(save, "genkan", "compose solo 小町", "--json")).stdout)
    d = r["result"]["drawn"]
    one_line_error(do(save, "genkan", f"place {d[0]}.2 {d[1]}.2 {d[2]}.3 {d[3]}.4 {d[4]}.5"),
                   "not 5-7-5-7-7")                                  # an impossible 5-7-5-7-7
    r = ok(do(save, "genkan", f"place {d[0]}.1 {d[1]}.2 {d[2]}.3 {d[3]}.4 {d[4]}.5"))
    assert "poem #1 (単独) by 小町" in r.stdout
    ok(do(save, "genkan", "score 1 gm=2 pl=1"))
    assert state(save, "genkan")["players"]["小町"]["points"] == 3
    shown = ok(karuta("table", "genkan", "show", save)).stdout
    assert "敬慕点 3" in shown and "#1 単独 by 小町 — 3 敬慕点" in shown
    log = (tmp_path / "t.json.log.txt").read_text()
    assert "行為判定: 在五" in log and "poem #1 (単独)" in log and "= 3 敬慕点" in log
    assert log.rstrip().endswith("so far: 敬慕点 在五 0, 小町 3; 1 poem(s) composed")


def test_genkan_contest_difficulty_below_the_previous_is_refused(tmp_path):
    save = tmp_path / "t.json"
    ok(karuta("table", "genkan", "new", save, "--seed", "11", "--player", "a:3", "--player", "b:3"))
    one_line_error(do(save, "genkan", "contest a,b,oni 男 30 min=2 teams=a:x,b"), "NAME:TEAM")
    ok(do(save, "genkan", "contest a,b,oni 男 30 min=2"))
    before = save.read_bytes()
    one_line_error(do(save, "genkan", "turn 1"), "at least 2 (the minimum)")
    assert save.read_bytes() == before
    # 30 cards turned up hold 3 男 cards or more (this seed): a declares 3 and stays
    r = json.loads(ok(do(save, "genkan", "turn 3", "--json")).stdout)
    assert r["result"]["judgement"]["success"] and r["result"]["judgement"]["achievement"] >= 3
    c = r["state"]["contest"]
    assert c["order"][c["turn"]] == "b" and c["last"] == 3
    before = save.read_bytes()
    one_line_error(do(save, "genkan", "turn 2"), "at least 3 (the previous declaration)")
    assert save.read_bytes() == before


def test_genkan_bad_cards_and_bad_save(tmp_path):
    save = tmp_path / "t.json"
    ok(karuta("table", "genkan", "new", save, "--seed", "7", "--player", "在五:3"))
    hand = state(save, "genkan")["players"]["在五"]["hand"]
    absent = next(n for n in range(1, 101) if n not in hand)
    before = save.read_bytes()
    one_line_error(do(save, "genkan", f"act 在五 男 5 2 {absent} sp=1"), "not in 在五's hand")
    one_line_error(do(save, "genkan", "act 在五 男 5 2 101 sp=1"), "not a card")
    one_line_error(do(save, "genkan", "act 在五 神 5 2"), "男, 女 or 官僧")
    one_line_error(do(save, "genkan", "talk 在五 過去 男 5 3"), "at least 4")
    one_line_error(do(save, "genkan", "place 1.1 2.2 3.3 4.4 5.5"), "nothing is being composed")
    assert save.read_bytes() == before
    # a corrupt save and an edited one are one line each
    (tmp_path / "bad.json").write_text("{not json")
    one_line_error(karuta("table", "genkan", "show", tmp_path / "bad.json"), "bad.json", "not a table save")
    d = json.loads(before)
    d["actions"].append({"do": "act", "who": "在五", "attr": "男", "dice": 5, "difficulty": 2,
                         "cards": [absent], "special": 1})
    (tmp_path / "edited.json").write_text(json.dumps(d, ensure_ascii=False))
    one_line_error(karuta("table", "genkan", "show", tmp_path / "edited.json"), "action 2", "not in")
    one_line_error(karuta("table", "cards", "show", save), "a 'genkan' table")
    for bad, words in [({"settings": [1, 2]}, ["settings"]),
                       ({"actions": d["actions"][:1] + [{"do": "act", "who": ["x"]}]}, ["action 2", "malformed"]),
                       ({"actions": [7]}, ["action 1"])]:
        (tmp_path / "odd.json").write_text(json.dumps(dict(d, **bad), ensure_ascii=False))
        one_line_error(karuta("table", "genkan", "show", tmp_path / "odd.json"), *words)
    one_line_error(karuta("table", "genkan", "new", save), "exists")
    one_line_error(karuta("table", "genkan", "new", tmp_path / "n.json", "--set", "refill=maybe"),
                   "refill")
    one_line_error(karuta("table", "genkan", "new", tmp_path / "n.json", "--key", "17,x"), "--key")
    one_line_error(karuta("table", "genkan", "play", "--save", tmp_path / "nope.json", "--resume"),
                   "no such save")


# --- the prompt -----------------------------------------------------------------------------------

@pytest.mark.entry_point
def test_prompt_undo_help_and_resume(tmp_path):
    save = tmp_path / "c.json"
    lines = "?\nplayer b h\ndraw b 2\nu\nshow\nwhat\nq\n"
    r = ok(karuta("table", "cards", "play", "--save", save, "--seed", "5", "--player", "a:s",
                  input=lines))
    assert "judge WHO SKILL LEVEL ABILITY" in r.stdout           # help
    assert "undone: draw" in r.stdout and "! what is 'what'" in r.stdout
    assert "--resume" in r.stdout
    st = state(save, "cards")
    assert set(st["hands"]) == {"a", "b"} and len(st["hands"]["b"]) == 5
    r = ok(karuta("table", "cards", "play", "--save", save, "--resume", input="open 3\nq\n"))
    assert "open 3:" in r.stdout
    assert len(state(save, "cards")["discard"]) == 3
    one_line_error(karuta("table", "cards", "play", "--save", save, "--seed", "1"), "exists")


def test_killed_mid_session_loses_nothing(tmp_path):
    save = tmp_path / "t.json"
    p = subprocess.Popen([*karuta_argv(), "table", "genkan", "play", "--save",
                          str(save), "--seed", "2", "--player", "a:4"],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         text=True)
    try:
        for n, line in enumerate(["scene", "act a 女 6 1", "scene"], 2):
            p.stdin.write(line + "\n")
            p.stdin.flush()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if len(json.loads(save.read_text())["actions"]) == n:
                        break
                except (OSError, ValueError):
                    pass
                time.sleep(0.05)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    assert len(json.loads(save.read_text())["actions"]) == 4
    assert not [f for f in tmp_path.iterdir() if f.name.endswith(".tmp")]
    st = state(save, "genkan")
    assert st["scene_no"] == 2


# --- recitation -----------------------------------------------------------------------------------

def _composed(tmp_path, name="t.json"):
    save = tmp_path / name
    setup("table", "genkan", "new", save, "--seed", "7", "--player", "小町:4")
    d = json.loads(setup("table", "genkan", "do", save, "compose solo 小町", "--json").stdout)
    d = d["result"]["drawn"]
    setup("table", "genkan", "do", save, f"place {d[0]}.1 {d[1]}.2 {d[2]}.3 {d[3]}.4 {d[4]}.5")
    return save, [[d[0], 1], [d[1], 2], [d[2], 3], [d[3], 4], [d[4], 5]]


def _alsa_capture(tmp_path, synth_cache):
    """(environment whose only sound device is an ALSA file capture, the capture's path)."""
    home = tmp_path / "home"
    home.mkdir()
    cap = home / "capture.wav"
    (home / ".asoundrc").write_text(ASOUNDRC.format(rate=48000, wav=cap))
    env = dict(os.environ, HOME=str(home), XDG_RUNTIME_DIR=str(home),
               KARUTA_CACHE_DIR=str(synth_cache))
    env.pop("PULSE_SERVER", None)
    return env, cap


def test_recite_renders_the_composed_poem_with_the_synthesized_voice(tmp_path, synth_cache,
                                                                    monkeypatch):
    from audio.synth import SynthVoice
    from audio.voice import SpeechItem, composed_text
    from poems.kimariji import sound_morae
    from reader.table.recite import HOLD_MS, speech_key

    monkeypatch.setenv("KARUTA_CACHE_DIR", str(synth_cache))
    save, ku = _composed(tmp_path)
    out = tmp_path / "poem.wav"
    r = ok(karuta("table", "genkan", "recite", save, "1", "--out", out))
    assert f"recited poem #1 to {out}" in r.stdout
    # (the note before a synthesis, when the shared cache did not hold the poem yet)
    assert r.stderr in ("", "synthesizing poem #1 (5 ku; about 2-3 s a ku the "
                        "first time, then it is cached) …\n"), r.stderr
    data, rate = sf.read(out, dtype="float32")
    key = speech_key({"ku": ku})
    voice = SynthVoice()
    item = SpeechItem(key, "whole", hold_ms=HOLD_MS)
    lay = voice.layout(item)
    assert rate == 48000 and len(data) == lay.frames
    # the voice says the composed ku, mora for mora, in their modern reading
    reading = composed_text(key).reading
    assert tuple(m.kana for m in lay.morae) == tuple(sound_morae(reading))
    # and the file is that speech (16-bit), not silence
    ref = np.asarray(voice.samples(item), dtype=np.float32)
    assert np.sqrt(np.mean(data ** 2)) > 0.02
    assert np.max(np.abs(data - np.clip(ref, -1, 1))) < 2 / 32768


def test_recite_says_it_is_synthesizing_before_the_wait(tmp_path):
    """Issue 34: ``table recite`` gave no sign for its ~12 s of synthesis: a line says what is
    being made and why it takes a while, when the poem is not cached yet; nothing once it is."""
    from audio.synth import SynthVoice
    from reader.cli.table import synthesis_note
    from reader.table.recite import poem_plan

    entry = {"id": 3, "ku": [[1, 1], [2, 2], [3, 3], [4, 4], [5, 5]]}
    voice = SynthVoice(cache_dir=tmp_path / "cache")
    note = synthesis_note(entry, voice)
    assert note and note.startswith("synthesizing poem #3 (5 ku;") and "\n" not in note
    path = voice.cache_path(poem_plan(entry, voice).segments[0].speech)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")  # as a cached clip is found
    assert synthesis_note(entry, voice) is None


@pytest.mark.entry_point
def test_recite_at_the_prompt_plays_live_through_portaudio(tmp_path, synth_cache):
    save, ku = _composed(tmp_path)
    env, cap = _alsa_capture(tmp_path, synth_cache)
    r = karuta("table", "genkan", "play", "--save", save, "--resume", input="recite\nq\n", env=env)
    assert r.returncode == 0, r.stderr
    assert "recited poem #1" in r.stdout
    # the reference: the same poem rendered to a file (its clip from the cache the play filled),
    # in this process (the command through its entry point is what played it)
    ok(run_inproc("table", "genkan", "recite", str(save), "--out", str(tmp_path / "ref.wav"),
                  env={"KARUTA_CACHE_DIR": str(synth_cache)}))
    ref, _ = sf.read(tmp_path / "ref.wav", dtype="int16")
    heard = read_wav_capture(cap)
    lead = find_lead_in(heard, ref)
    # what was played is the rendered poem, sample for sample; a machine too busy to feed the
    # device in time inserts silence (an underflow), so silence is left out of the comparison
    played = heard[lead:]
    assert np.array_equal(played[played != 0][:np.count_nonzero(ref)], ref[ref != 0])


def test_recite_without_a_poem_or_device_is_one_line(tmp_path):
    save = tmp_path / "t.json"
    setup("table", "genkan", "new", save, "--seed", "7", "--player", "小町:4")
    one_line_error(karuta("table", "genkan", "recite", save, "--out", tmp_path / "x.wav"),
                   "no poem composed yet")
    save2, _ = _composed(tmp_path, "t2.json")
    one_line_error(karuta("table", "genkan", "recite", save2, "3"), "no composed poem #3")
    one_line_error(karuta("table", "genkan", "recite", save2, "--out", tmp_path / "nodir" / "x.wav"),
                   "does not exist")


@pytest.mark.entry_point  # no sound device: PortAudio as a process of its own finds it
def test_recite_live_without_a_sound_device_points_to_out(tmp_path):
    save, _ = _composed(tmp_path)
    home = tmp_path / "empty"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), XDG_RUNTIME_DIR=str(home))
    env.pop("PULSE_SERVER", None)
    one_line_error(karuta("table", "genkan", "recite", save, env=env), "no sound device", "--out")
    # at the prompt it is one '!' line and the table goes on
    r = karuta("table", "genkan", "play", "--save", save, "--resume", input="recite\nscene\nq\n",
               env=env)
    assert r.returncode == 0 and "! no sound device" in r.stdout and "scene 1:" in r.stdout


@pytest.mark.entry_point
def test_play_with_recite_reads_each_poem_as_it_is_placed(tmp_path, synth_cache):
    save = tmp_path / "t.json"
    setup("table", "genkan", "new", save, "--seed", "7", "--player", "小町:4")
    d = json.loads(setup("table", "genkan", "do", save, "compose solo 小町", "--json").stdout)
    d = d["result"]["drawn"]
    env, cap = _alsa_capture(tmp_path, synth_cache)
    r = karuta("table", "genkan", "play", "--save", save, "--resume", "--recite",
               input=f"place {d[0]}.1 {d[1]}.2 {d[2]}.3 {d[3]}.4 {d[4]}.5\nq\n", env=env)
    assert r.returncode == 0, r.stderr
    assert "poem #1 (単独)" in r.stdout and "recited poem #1" in r.stdout
    heard = read_wav_capture(cap)
    assert np.count_nonzero(np.abs(heard) > 1000) > 48000   # over a second of voice was played


# --- issue 22/24: words, sheets, views, the seed's rules ------------------------------------------

def test_mistyped_words_are_one_line_and_nothing_is_saved(tmp_path):
    """A NAME=VALUE word the command does not take is refused with the words it does take."""
    c, g = tmp_path / "c.json", tmp_path / "g.json"
    ok(karuta("table", "cards", "new", c, "--seed", "3", "--player", "a:s"))
    ok(karuta("table", "genkan", "new", g, "--seed", "3", "--player", "a:3", "--player", "b:3"))
    card = state(c, "cards")["hands"]["a"][0]
    before = {p: p.read_bytes() for p in (c, g, tmp_path / "c.json.log.txt", tmp_path / "g.json.log.txt")}
    for save, system, line, words in [
        (c, "cards", f"judge a x 1 3 {card[0]}2={card}", ["only a joker is named with '='"]),
        (c, "cards", f"judge a x 1 3 {card} mdo=3", ["unknown word 'mdo=3'", "mod=", "t=", "vs="]),
        (c, "cards", f"judge a x 1 3 {card} dif=2", ["unknown word 'dif=2'"]),
        (c, "cards", f"judge a x 1 3 {card} mod=", ["no value"]),
        (g, "genkan", "compose solo a hnad=男", ["unknown word 'hnad=男'", "hand=", "advice="]),
        (g, "genkan", "act a 男 5 2 mod=3", ["unknown word 'mod=3'", "sp="]),
        (g, "genkan", "act a 男 5 2 dif=", ["unknown word 'dif='"]),
        (g, "genkan", "contest A:3,B:5", ["usage: contest"]),
        (g, "genkan", "contest A:3:1:2,b 男", ["NAME:DICE:SP"]),
    ]:
        one_line_error(do(save, system, line), *words)
    assert {p: p.read_bytes() for p in before} == before


def test_cards_sheet_mod_limit_and_npc_through_the_command(tmp_path):
    save = tmp_path / "c.json"
    ok(karuta("table", "cards", "new", save, "--seed", "4", "--player", "tenjo:s", "--npc", "oni"))
    ok(do(save, "cards", "sheet tenjo 理力=12 肉体=5 思考=2/理力 近接=4/肉体"))
    hand = state(save, "cards")["hands"]["tenjo"]
    ok(do(save, "cards", f"discard tenjo {' '.join(hand[2:])}"))
    # 2 cards held at 《近接》 level 4: 《限界突破》 turns up the 2 the hand lacks, one card played
    r = json.loads(ok(do(save, "cards", f"judge tenjo 近接 @ {hand[0]} limit mod=-2", "--json")).stdout)
    j = r["result"]["judgement"]
    assert (j["level"], j["ability"], j["mod"], len(j["opened"])) == (4, 5, -2, 2)
    assert r["state"]["hands"]["tenjo"] == [hand[1]] and isinstance(r["state"]["pile"], int)
    opened = sum(cards_value(c) for c in j["opened"])
    assert j["value"] == 5 + cards_value(hand[0]) + opened - 2
    # an NPC asked to judge outside combat draws 5 first; the GM then plays from them
    r = json.loads(ok(do(save, "cards", "judge oni 感知 1 6 mod=+1", "--json")).stdout)
    assert "oni holds no hand outside combat: draws 5" in r["result"]["text"]
    drawn = r["result"]["drawn"]
    assert r["result"]["judgement"] is None
    assert state(save, "cards")["hands"]["oni"] == drawn
    r = json.loads(ok(do(save, "cards", f"judge oni 感知 1 6 {drawn[0]} mod=+1", "--json")).stdout)
    assert r["result"]["judgement"]["value"] == 6 + cards_value(drawn[0]) + 1
    assert state(save, "cards")["hands"]["oni"] == drawn[1:]


def cards_value(c):
    return 10 if c == "JK" or c[1:] in ("J", "Q", "K", "A") else int(c[1:])


def test_private_show_log_json_and_hidden_pile(tmp_path):
    save = tmp_path / "c.json"
    ok(karuta("table", "cards", "new", save, "--seed", "5", "--player", "a", "--player", "b"))
    ok(do(save, "cards", "sheet b 理力=9"))
    st = json.loads(ok(karuta("table", "cards", "show", save, "--json")).stdout)
    assert isinstance(st["state"]["pile"], int) and st["seed"] == 5
    a, b = st["state"]["hands"]["a"], st["state"]["hands"]["b"]
    mine = json.loads(ok(karuta("table", "cards", "show", save, "--as", "a", "--json")).stdout)
    assert mine["viewer"] == "a" and "seed" not in mine and "settings" not in mine
    assert mine["state"]["hands"] == {"a": a} and mine["state"]["hand_counts"]["b"] == 5
    shown = ok(karuta("table", "cards", "show", save, "--as", "a")).stdout
    assert all(c in shown for c in a) and "b [pc, mode -]: 5 card(s)" in shown and "理力" not in shown
    one_line_error(karuta("table", "cards", "show", save, "--as", "zz"), "no one called 'zz'")
    # at the prompt: show NAME
    r = ok(karuta("table", "cards", "play", "--save", save, "--resume", input="show b\nq\n"))
    assert "(the view of b" in r.stdout and "sheet: 理力 9" in r.stdout
    log = json.loads(ok(karuta("table", "cards", "log", save, "--json")).stdout)
    assert [e["action"]["do"] for e in log["entries"]] == ["player", "player", "sheet"]
    assert log["entries"][2]["result"]["text"] == "sheet b: 理力 9" and log["seed"] == 5


def test_genkan_sheets_contest_values_words_and_an_outside_poem(tmp_path):
    save = tmp_path / "g.json"
    ok(karuta("table", "genkan", "new", save, "--seed", "8", "--player", "在五:3", "--player", "小町:3"))
    ok(do(save, "genkan", "sheet 在五 知=3 男=2 歌学=2"))
    r = json.loads(ok(do(save, "genkan", "act 在五 男 知 ふつう", "--json")).stdout)
    j = r["result"]["judgement"]
    assert (j["dice"], j["difficulty"], len(j["turned"])) == (5, 2, 5)
    r = json.loads(ok(do(save, "genkan", "contest 在五:知,小町:4:1,oni:2 男 min=簡単", "--json")).stdout)
    c = r["state"]["contest"]
    assert c["dice"] == {"在五": 5, "小町": 4, "oni": 2} and c["special"]["小町"] == 1
    r = json.loads(ok(do(save, "genkan", "turn 難しい", "--json")).stdout)
    assert len(r["result"]["judgement"]["turned"]) == 5 and r["result"]["judgement"]["difficulty"] == 3
    # whatever 在五 did, 小町 must declare at least 3 (the previous declaration)
    one_line_error(do(save, "genkan", "turn ふつう"), "at least 3 (the previous declaration)")
    ok(do(save, "genkan", "contest stop"))
    r = ok(do(save, "genkan", "poem 小野小町 9"))
    assert "poem #1 (from outside)" in r.stdout and "compose henka PLAYER of=1" in r.stdout
    d = json.loads(ok(do(save, "genkan", "compose henka 在五 of=1", "--json")).stdout)["result"]["drawn"]
    r = ok(do(save, "genkan", f"place 9.1 {d[0]}.2 9.3 {d[1]}.4 {d[2]}.5"))
    assert "poem #2 (返歌) by 在五" in r.stdout
    one_line_error(do(save, "genkan", "score 1 gm=2"), "from outside")
    mine = json.loads(ok(karuta("table", "genkan", "show", save, "--as", "小町", "--json")).stdout)
    assert isinstance(mine["state"]["players"]["在五"]["hand"], int)
    assert isinstance(mine["state"]["players"]["小町"]["hand"], list) and mine["state"]["sheets"] == {}


def test_an_old_save_replays_under_its_rules_and_goes_on_under_the_new(tmp_path):
    """A save from before rules 2: its 《限界突破》 turned up level − cards played; it loads as it
    was played, and the actions added after it follow the seed (level − cards held)."""
    from reader.table.store import Table
    t = Table("cards", {}, 6)
    t.push({"do": "player", "name": "a"})
    hand = t.state["hands"]["a"]
    t.push({"do": "discard", "who": "a", "cards": hand[2:]})
    d = dict(t.to_dict())
    d.pop("rules")
    d["actions"].append({"do": "judge", "who": "a", "level": 4, "ability": 5, "cards": [hand[0]],
                         "limit": True})
    save = tmp_path / "old.json"
    save.write_text(json.dumps(d, ensure_ascii=False))
    log = json.loads(ok(karuta("table", "cards", "log", save, "--json")).stdout)
    assert len(log["entries"][2]["result"]["judgement"]["opened"]) == 3    # as it was played
    ok(do(save, "cards", "draw a 1"))
    r = json.loads(ok(do(save, "cards", "judge a x 4 5 " + state(save, "cards")["hands"]["a"][0]
                         + " limit", "--json")).stdout)
    assert len(r["result"]["judgement"]["opened"]) == 4 - 2
    saved = json.loads(save.read_text())
    assert saved["rules"] == 2 and saved["rules_1_actions"] == 3
    # undoing into the old actions: what is added after follows the new rules
    ok(do(save, "cards", "u"))
    ok(do(save, "cards", "u"))
    ok(do(save, "cards", "u"))
    assert json.loads(save.read_text())["rules_1_actions"] == 2
