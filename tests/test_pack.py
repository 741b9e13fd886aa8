"""Voice packs: import of every layout and format, splitting, loudness, gapless joins, the
check table, bad input, fallback to the synthesized voice, speed, and ``resolve_voice``.

All audio is made here (tones, noise, ToneVoice); nothing outside the test's folders is read.
"""
from __future__ import annotations

import os
import importlib.util
import shutil
import subprocess
import time

import numpy as np
import pytest
import soundfile as sf

from audio.align import LOW_CONFIDENCE
from audio.pack import (FallbackVoice, MissingClip, VoicePack, active_rms, check_pack, find_split,
                        format_problems, import_pack, resolve_voice, scan_source, set_default_voice)
from audio.voice import SpeechItem, ToneVoice
from reader.base.errors import KarutaError
from testbed.synth_clips import made_ahead

RATE = 48000
needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg not installed")


pytestmark = pytest.mark.usefixtures("pack_dirs")


def tone(seconds, rate=RATE, freq=440.0, amp=0.4):
    n = int(round(seconds * rate))
    t = np.arange(n) / rate
    r = max(1, int(0.002 * rate))
    env = np.minimum(1.0, np.minimum(np.arange(n) + 1, np.arange(n)[::-1] + 1) / r)
    return (amp * np.sin(2 * np.pi * freq * t) * env).astype(np.float32)


def sil(seconds, rate=RATE):
    return np.zeros(int(round(seconds * rate)), np.float32)


def ku_reading(n_ku=3, rate=RATE, amp=0.4, ku_s=(0.9, 0.8, 1.0), breath=0.25):
    """A 'reading': ku of tones with short breaths between them."""
    parts = []
    for i, d in enumerate(ku_s[:n_ku]):
        if i:
            parts.append(sil(breath, rate))
        parts.append(tone(d, rate, freq=300 + 110 * i, amp=amp))
    return np.concatenate(parts)


def write(path, x, rate, **kw):
    path.parent.mkdir(parents=True, exist_ok=True)
    ext = path.suffix.lower()
    if ext in (".wav", ".flac", ".ogg"):
        sf.write(path, x, rate, **kw)
    else:  # mp3, opus, m4a through ffmpeg
        tmp = path.with_suffix(".src.wav")
        sf.write(tmp, x, rate, subtype="FLOAT")
        codec = {".mp3": "libmp3lame", ".opus": "libopus", ".m4a": "aac"}[ext]
        extra = ["-ar", "48000"] if ext == ".opus" else []
        subprocess.run(["ffmpeg", "-y", "-loglevel", "error", "-i", str(tmp), "-c:a", codec, *extra, str(path)],
                       check=True)
        tmp.unlink()
    return path


def voice_of(pack):
    return FallbackVoice(pack, ToneVoice())


# ---- layouts -----------------------------------------------------------------------------

def test_wasuramoti_ogg_pack(tmp_path):
    src = tmp_path / "src" / "inaba"
    lengths = {}
    for n in (0, 1, 2):
        for half in (1, 2):
            x = ku_reading(3 if half == 1 else 2, 22050)
            lengths[(n, half)] = len(x) * RATE / 22050
            write(src / f"inaba_{n:03d}_{half}.ogg", np.concatenate([sil(0.3, 22050), x, sil(0.5, 22050)]), 22050)
    pack = import_pack(src, reference=False)
    assert pack.name == "inaba" and pack.meta["layout"] == "wasuramoti"
    assert pack.folder == tmp_path / "data" / "voices" / "inaba"
    assert sorted(pack.clip_keys()) == sorted((k, p) for k in ("joka", "1", "2") for p in ("kami", "shimo"))
    for (n, half), want in lengths.items():
        item = SpeechItem("joka" if n == 0 else str(n), "kami" if half == 1 else "shimo")
        lay = pack.layout(item)
        x = pack.samples(item)
        assert lay.frames == len(x) and lay.sample_rate == RATE and not lay.exact
        assert abs(len(x) - want) < 0.03 * RATE  # silence and Vorbis padding gone
        assert len(lay.morae) > 5 and lay.morae[0].start == 0 and lay.morae[-1].end == lay.frames
    # the voice.toml written with the pack says where it came from
    assert "imported_from" in (pack.folder / "voice.toml").read_text()


@needs_ffmpeg
def test_karuta_tools_mp3_gapless_render(tmp_path):
    """The 間 between a recorded 下の句 and the next 上の句 is exact in a rendered file."""
    from reader.reading.engine import build_plan
    from reader.reading.settings import preset

    from audio.render import render_to_file

    src = tmp_path / "src" / "yomite"
    truth = {}
    for n in (0, 1, 2, 3):
        for half in (1, 2):
            body = ku_reading(3 if half == 1 else 2, 44100)
            truth[(n, half)] = len(body)
            write(src / f"{n:03d}_{half}.mp3", np.concatenate([sil(0.2, 44100), body, sil(0.4, 44100)]), 44100)
    pack = import_pack(src, reference=False)
    assert pack.meta["layout"] == "karuta-tools" and len(pack.clip_keys()) == 8
    # encoder padding removed: each clip is as long as the tones that went in (±3 ms of edge ramp)
    for (n, half), frames in truth.items():
        got = pack.layout(SpeechItem("joka" if n == 0 else str(n), "kami" if half == 1 else "shimo")).frames
        assert abs(got - frames * RATE / 44100) < 0.003 * RATE
    voice = voice_of(pack)
    plan = build_plan(preset("kyogi", poems=(1, 2, 3), ma_ms=1000, take_ms=300, yoin_ms=3000, gap_ms=500), 7, voice)
    out = tmp_path / "reading.wav"
    render_to_file(plan, voice, out, subtype="FLOAT")
    y, rate = sf.read(out, dtype="float32")
    assert rate == RATE and voice.missing == []
    mas = [s for s in plan.segments if s.kind == "ma"]
    assert len(mas) == 3
    for seg in mas:
        before = np.flatnonzero(np.abs(y[seg.start - RATE:seg.start]) > 1e-6)
        after = np.flatnonzero(np.abs(y[seg.end:seg.end + RATE]) > 1e-6)
        last_sound = seg.start - RATE + int(before[-1])
        first_sound = seg.end + int(after[0])
        assert abs((first_sound - last_sound - 1) - RATE) <= 1  # 1 s of 間, ±1 sample


@pytest.mark.parametrize("ext", ["wav", pytest.param("mp3", marks=needs_ffmpeg)])
def test_one_file_per_poem_split(tmp_path, ext):
    src = tmp_path / "src" / "onefile"
    truth = {}
    for n in (0, 1, 2, 3):
        kami = ku_reading(3)
        shimo = ku_reading(2, ku_s=(1.1, 1.4))
        pause = 1.0 + 0.2 * n
        x = np.concatenate([sil(0.3), kami, sil(pause), shimo, sil(0.3)])
        truth[n] = (int(0.3 * RATE) + len(kami), int(0.3 * RATE) + len(kami) + int(round(pause * RATE)))
        write(src / f"karuta_{n:03d}.{ext}", x, RATE)
    pack = import_pack(src, reference=False)
    assert pack.meta["layout"] == "one-file"
    for n in (0, 1, 2, 3):
        key = "joka" if n == 0 else str(n)
        kami = pack.samples(SpeechItem(key, "kami"))
        shimo = pack.samples(SpeechItem(key, "shimo"))
        # trimmed halves are the spoken parts: the split sat in the pause
        assert abs(len(kami) - (truth[n][0] - int(0.3 * RATE))) < 0.01 * RATE
        assert abs(len(shimo) - len(ku_reading(2, ku_s=(1.1, 1.4)))) < 0.01 * RATE
    kinds = {p.kind for p in pack.problems()}
    assert kinds == {"partial", "not aligned"}  # 3 poems and the jo-ka: a partial pack
    assert pack.notes() == ["4 files read the 下の句 once: split at the pause after the 上の句"]


def test_find_split_prefers_the_long_middle_pause():
    kami, shimo = ku_reading(3, breath=0.4), ku_reading(2, breath=0.4)
    x = np.concatenate([kami, sil(0.9), shimo])
    a, b = find_split(x, RATE)
    assert abs(a - len(kami)) < 0.011 * RATE and abs(b - (len(kami) + 0.9 * RATE)) < 0.011 * RATE
    assert find_split(tone(3.0), RATE) is None


def test_split_override_in_manifest(tmp_path):
    src = tmp_path / "src" / "p"
    # poem 1 has no pause at all: only the manifest can split it
    write(src / "p_001.wav", np.concatenate([tone(2.0, freq=300), tone(2.0, freq=500)]), RATE)
    write(src / "p_002.wav", np.concatenate([tone(2.0, freq=300), tone(2.0, freq=500)]), RATE)
    (src / "voice.toml").write_text('name = "splitme"\n[clips."1"]\nsplit_ms = 2000\n', encoding="utf-8")
    pack = import_pack(src, reference=False)
    assert pack.name == "splitme"
    assert abs(len(pack.samples(SpeechItem("1", "kami"))) - 2 * RATE) < 200
    assert abs(len(pack.samples(SpeechItem("1", "shimo"))) - 2 * RATE) < 200
    rows = [(p.clip, p.kind) for p in pack.problems()]
    assert ("2", "no split") in rows
    assert not pack.has("2", "kami")
    # the override is kept in the pack's own voice.toml
    assert 'split_ms = 2000' in (pack.folder / "voice.toml").read_text()


@needs_ffmpeg
def test_every_format_depth_and_rate(tmp_path):
    src = tmp_path / "src" / "mixed"
    base = ku_reading(2)
    files = {
        "001_1.wav": (8000, dict(subtype="PCM_U8")),
        "001_2.wav": (96000, dict(subtype="PCM_24")),
        "002_1.wav": (44100, dict(subtype="PCM_32")),
        "002_2.wav": (16000, dict(subtype="FLOAT")),
        "003_1.flac": (44100, dict(subtype="PCM_16")),
        "003_2.ogg": (22050, {}),
        "004_1.opus": (48000, {}),
        "004_2.m4a": (44100, {}),
        "005_1.mp3": (22050, {}),
        "005_2.wav": (11025, dict(subtype="PCM_16")),
    }
    from audio.decode import resample

    for name, (rate, kw) in files.items():
        x = resample(base, RATE, rate)
        if name == "001_2.wav":
            x = np.stack([x, x * 0.5], axis=1)  # stereo
        write(src / name, np.concatenate([sil(0.1, rate), x, sil(0.2, rate)]) if x.ndim == 1 else x, rate, **kw)
    pack = import_pack(src, reference=False)
    assert len(pack.clip_keys()) == 10
    for key in "12345":
        for part in ("kami", "shimo"):
            n = len(pack.samples(SpeechItem(key, part)))
            assert abs(n - len(base)) < 0.03 * RATE, (key, part, n)


# ---- loudness, speed, hold -------------------------------------------------------------------

def test_loudness_matched_across_pack(tmp_path):
    src = tmp_path / "src" / "loud"
    write(src / "001_1.wav", ku_reading(3, amp=0.03), RATE)
    write(src / "001_2.wav", ku_reading(2, amp=0.9), RATE)
    write(src / "002_1.wav", ku_reading(3, amp=0.2), RATE, subtype="PCM_16")
    pack = import_pack(src, reference=False)
    levels = [20 * np.log10(active_rms(pack.samples(SpeechItem(k, p)), RATE))
              for k, p in (("1", "kami"), ("1", "shimo"), ("2", "kami"))]
    assert max(levels) - min(levels) < 1.0
    assert all(np.abs(pack.samples(SpeechItem(k, p))).max() <= 1.0 for k, p in pack.clip_keys())
    # the same loudness as every voice (BS.1770), true peaks under the ceiling
    from audio.loudness import CEILING_DBTP, TARGET_LUFS, integrated_lufs, true_peak_db

    for k, p in pack.clip_keys():
        x = pack.samples(SpeechItem(k, p))
        assert abs(integrated_lufs(x, RATE) - TARGET_LUFS) < 0.5 or true_peak_db(x) > CEILING_DBTP - 0.1
        assert true_peak_db(x) <= CEILING_DBTP + 0.05


def test_speed_stretches_without_pitch_and_hold_is_ignored(tmp_path):
    src = tmp_path / "src" / "sp"
    write(src / "001_1.wav", ku_reading(3), RATE)
    write(src / "001_2.wav", ku_reading(2), RATE)
    pack = import_pack(src, reference=False)
    base = pack.layout(SpeechItem("1", "kami"))
    for speed in (0.7, 0.85, 1.0, 1.2):
        for hold in (0, 3000):
            item = SpeechItem("1", "shimo", speed=speed, hold_ms=hold)
            lay = pack.layout(item)
            x = pack.samples(item)
            assert lay.frames == len(x) == round(pack.layout(SpeechItem("1", "shimo")).frames / speed)
        lay = pack.layout(SpeechItem("1", "kami", speed=speed))
        assert [m.kana for m in lay.morae] == [m.kana for m in base.morae]
        assert abs(lay.morae[5].start - base.morae[5].start / speed) <= 1
    slow = pack.samples(SpeechItem("1", "kami", speed=0.7))
    seg = slow[1000:1000 + RATE // 2]
    f = np.argmax(np.abs(np.fft.rfft(seg * np.hanning(len(seg))))) * RATE / len(seg)
    assert abs(f - 300) < 3  # the first ku's tone keeps its pitch
    assert np.array_equal(pack.samples(SpeechItem("1", "kami", speed=0.7)), slow)  # cached, same


# ---- bad input and the check table ------------------------------------------------------------

def test_bad_input_each_reported_and_pack_usable(tmp_path):
    src = tmp_path / "src" / "bad"
    good = ku_reading(3)
    for n in (1, 2, 3):
        write(src / f"{n:03d}_1.wav", good, RATE)
        write(src / f"{n:03d}_2.wav", ku_reading(2), RATE)
    (src / "004_1.mp3").write_bytes(b"ID3 this is not really an mp3 " * 100)
    (src / "004_2.mp3").write_bytes(b"")
    full = write(tmp_path / "full.wav", good, RATE)
    (src / "005_1.wav").write_bytes(full.read_bytes()[:40])  # header only
    write(src / "005_2.wav", sil(2.0) + 1e-5, RATE, subtype="FLOAT")
    square = np.sign(tone(2.0, amp=1.0)).astype(np.float32)
    write(src / "006_1.wav", square, RATE)
    write(src / "006_2.wav", tone(0.3), RATE)
    write(src / "007_1.wav", tone(25.0, rate=8000), 8000)
    outside = write(tmp_path / "elsewhere" / "secret.wav", good, RATE)
    os.symlink(outside, src / "007_2.wav")
    os.symlink(tmp_path / "elsewhere", src / "linked-folder")
    (src / "voice.toml").write_text(
        'name = 5\nreader = "読手"\n'
        '[clips."1"]\nsplit_ms = "abc"\n'
        '[clips."2.kami"]\ngain_db = true\nexclude = "yes"\n'
        '[clips."3.shimo"]\nexclude = true\n'
        '[clips."150"]\ngain_db = 1\n', encoding="utf-8")
    pack = import_pack(src, reference=False)
    rows = {(p.clip, p.kind) for p in pack.problems()}
    expected = {
        ("4 kami", "unreadable"), ("4 shimo", "unreadable"), ("5 kami", "unreadable"),
        ("5 shimo", "silent"), ("6 kami", "clipped"), ("6 shimo", "too short"), ("7 kami", "too long"),
        ("007_2.wav", "link outside the pack"), ("linked-folder", "link outside the pack"),
        ("3 shimo", "excluded"), ("7 shimo", "missing"),
    }
    assert expected <= rows, expected - rows
    manifest_rows = [p for p in pack.problems() if p.clip == "voice.toml"]
    details = " | ".join(p.detail for p in manifest_rows)
    for bit in ("name must be a string", "split_ms must be a number", "gain_db must be a number",
                "exclude must be true/false", "clips.150: no such clip"):
        assert bit in details
    for p in pack.problems():
        assert "\n" not in p.line()
    table = format_problems(pack.problems())
    assert table.splitlines()[0].split() == ["clip", "problem", "detail"]
    # good clips (and clipped / too short / too long ones) are used; the rest fall back
    voice = voice_of(pack)
    assert pack.name == "bad" and pack.reader == "読手"
    for key in ("1", "2", "3", "6", "7"):
        lay = voice.layout(SpeechItem(key, "kami"))
        assert lay.frames == len(voice.samples(SpeechItem(key, "kami")))
    assert voice.missing == []
    for key, part in (("4", "kami"), ("5", "shimo"), ("3", "shimo"), ("7", "shimo")):
        item = SpeechItem(key, part)
        x = voice.samples(item)
        assert len(x) == voice.layout(item).frames and np.abs(x).max() > 0.1  # never silence
    assert set(voice.missing) == {("4", "kami"), ("5", "shimo"), ("3", "shimo"), ("7", "shimo")}


def test_low_confidence_timeline_reported(tmp_path):
    ref = ToneVoice(mora_ms=100)
    src = tmp_path / "src" / "conf"
    write(src / "001_1.wav", ref.samples(SpeechItem("1", "kami")), RATE)
    write(src / "002_1.wav", np.random.default_rng(0).normal(0, 0.1, 3 * RATE).astype(np.float32), RATE)
    pack = import_pack(src, reference=ref)
    assert pack.timeline("1", "kami").confidence >= 0.5
    assert pack.timeline("2", "kami").confidence < 0.5
    rows = {(p.clip, p.kind) for p in pack.problems()}
    assert ("2 kami", "low confidence") in rows and ("1 kami", "low confidence") not in rows


def test_broken_manifest_still_imports(tmp_path):
    src = tmp_path / "src" / "toml"
    write(src / "001_1.wav", ku_reading(3), RATE)
    (src / "voice.toml").write_text("name = [unclosed\n", encoding="utf-8")
    pack = import_pack(src, reference=False)
    assert pack.has("1", "kami")
    assert [p.kind for p in pack.problems() if p.clip == "voice.toml"] == ["bad manifest"]


def test_manifest_overrides_gain_trim_exclude(tmp_path):
    src = tmp_path / "src" / "ov"
    for n in (1, 2):
        write(src / f"{n:03d}_1.wav", ku_reading(3), RATE)
    (src / "voice.toml").write_text(
        '[clips."1.kami"]\ngain_db = -6.0\ntrim_start_ms = 500\n[clips."2"]\nexclude = true\n', encoding="utf-8")
    pack = import_pack(src, reference=False)
    a = pack.samples(SpeechItem("1", "kami"))
    assert abs(len(a) - (len(ku_reading(3)) - RATE // 2)) < 0.005 * RATE
    assert not pack.has("2", "kami") and not pack.has("2", "shimo")


def test_check_is_fast_on_a_202_clip_pack(tmp_path):
    src = tmp_path / "src" / "full"
    rate = 16000
    clip = ku_reading(2, rate, ku_s=(0.6, 0.6), breath=0.1)
    for n in range(101):
        for half in (1, 2):
            write(src / f"full_{n:03d}_{half}.wav", clip, rate, subtype="PCM_16")
    t0 = time.perf_counter()
    pack = import_pack(src, reference=False)
    import_s = time.perf_counter() - t0
    assert len(pack.clip_keys()) == 202
    from machine_stall import Waited

    with Waited() as waited:
        t0, cpu0 = time.perf_counter(), time.process_time()
        _, problems = check_pack("full")
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    # 5 s of the check's own: its CPU time, and its wall time less what a busy machine kept
    # this process waiting for a CPU (measured); the same figure on a quiet machine
    assert cpu < 5.0 and wall < 5.0 + waited.s, (cpu, wall, str(waited))
    assert [p.kind for p in problems] == ["not aligned"]
    assert import_s < 60


# ---- fallback and resolve_voice ---------------------------------------------------------------

def test_fallback_voice_says_once(tmp_path):
    src = tmp_path / "src" / "fb"
    write(src / "001_1.wav", ku_reading(3), RATE)
    pack = import_pack(src, reference=False)
    with pytest.raises(MissingClip):
        pack.layout(SpeechItem("1", "shimo"))
    with pytest.raises(MissingClip):
        pack.layout(SpeechItem("announce", "whole"))
    calls = []
    made = []

    def factory():
        made.append(1)
        return ToneVoice()

    voice = FallbackVoice(pack, factory, on_missing=calls.append)
    voice.samples(SpeechItem("1", "kami"))
    assert made == [] and voice.notice_once() is None  # nothing missing, fallback never made
    for item in (SpeechItem("1", "shimo"), SpeechItem("announce", "whole"), SpeechItem("1", "shimo", hold_ms=3000)):
        assert len(voice.samples(item)) == voice.layout(item).frames
    assert len(calls) == 1 and "1 下の句" in calls[0]
    msg = voice.notice_once()
    assert msg and "\n" not in msg and "tone" in msg and "announce" in msg
    assert voice.notice_once() is None


def test_clip_deleted_after_import_falls_back_at_same_length(tmp_path):
    src = tmp_path / "src" / "del"
    write(src / "001_1.wav", ku_reading(3), RATE)
    pack = import_pack(src, reference=False)
    voice = voice_of(VoicePack(pack.folder))
    item = SpeechItem("1", "kami")
    frames = voice.layout(item).frames
    (pack.folder / "clips" / "1_kami.flac").unlink()
    x = voice.samples(item)
    assert len(x) == frames and np.abs(x).max() > 0.1
    assert voice.missing == [("1", "kami")]
    assert ("1 kami", "missing") in {(p.clip, p.kind) for p in VoicePack(pack.folder).problems()}


def test_resolve_voice(tmp_path, synth_cache):
    made_ahead(synth_cache, ["1"], ["kami"])  # the reference the import on first use aligns with
    src = tmp_path / "src" / "rv"
    write(src / "rv_001_1.ogg", ku_reading(3), RATE)
    synth = object()
    assert resolve_voice("synth", lambda: synth) is synth
    assert resolve_voice(None, lambda: synth) is synth
    assert isinstance(resolve_voice("tone", lambda: synth), ToneVoice)
    with pytest.raises(KarutaError) as ei:
        resolve_voice("nobody", lambda: synth)
    assert "unknown voice 'nobody'" in str(ei.value) and "\n" not in str(ei.value)
    # a raw folder is imported on first use, then reused while unchanged
    v = resolve_voice(str(src), ToneVoice)
    assert isinstance(v, FallbackVoice) and v.name == "rv" and v.primary.has("1", "kami")
    mtime = (v.primary.folder / "pack.json").stat().st_mtime_ns
    v2 = resolve_voice(str(src), ToneVoice)
    assert (v2.primary.folder / "pack.json").stat().st_mtime_ns == mtime
    assert isinstance(resolve_voice("rv", ToneVoice), FallbackVoice)
    assert isinstance(resolve_voice(str(v.primary.folder), ToneVoice), FallbackVoice)
    set_default_voice("rv")
    assert resolve_voice(None, ToneVoice).name == "rv"
    set_default_voice("gone")
    with pytest.raises(KarutaError):
        resolve_voice(None, ToneVoice)


def test_scan_ignores_unrelated_files(tmp_path):
    src = tmp_path / "src" / "r"
    write(src / "r_001_1.ogg", ku_reading(3), RATE)
    write(src / "r_101_1.ogg", ku_reading(3), RATE)
    (src / "README.txt").write_text("hello")
    s = scan_source(src)
    assert s.layout == "wasuramoti" and list(s.files) == [("1", "kami")]
    assert [(p.clip, p.kind) for p in s.problems] == [("r_101_1.ogg", "ignored")]


def test_not_a_pack(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(KarutaError):
        import_pack(tmp_path / "empty", reference=False)
    with pytest.raises(KarutaError):
        VoicePack(tmp_path / "empty")


def test_fallback_at_another_rate(tmp_path):
    src = tmp_path / "src" / "rate"
    write(src / "001_1.wav", ku_reading(3), RATE)
    voice = FallbackVoice(import_pack(src, reference=False), ToneVoice(sample_rate=22050))
    item = SpeechItem("1", "shimo", speed=0.8)
    lay = voice.layout(item)
    x = voice.samples(item)
    assert lay.sample_rate == RATE and len(x) == lay.frames
    assert abs(lay.frames - ToneVoice().layout(item).frames) <= 50  # its own rounding at 22.05 kHz


def test_clip_cache_is_bounded(tmp_path):
    src = tmp_path / "src" / "many"
    for n in range(1, 31):
        write(src / f"{n:03d}_1.wav", tone(1.2, 16000), 16000, subtype="PCM_16")
    pack = import_pack(src, reference=False)
    for n in range(1, 31):
        pack.samples(SpeechItem(str(n), "kami"))
        pack.samples(SpeechItem(str(n), "kami", speed=0.8))
    assert len(pack._cache) <= pack.CACHE_ITEMS


@needs_ffmpeg
@pytest.mark.skipif(importlib.util.find_spec("pyworld") is None, reason="synthesized voice needs pyworld")
def test_import_aligns_with_the_synthesized_voice(tmp_path, synth_cache):
    """A 'different reader' (slower, lower, in a reader's rhythm) in mp3: 上の句 onsets found
    within 50 ms."""
    from audio.decode import trim_silence
    from audio.synth import SynthVoice

    reader = SynthVoice(mora_ms=(190, 170, 195, 200, 205, 210, 210), ku_end_ms=1300, half_tone=-2,
                        cache_dir=tmp_path / "reader", workers=0)
    src = tmp_path / "src" / "other"
    truth = {}
    for key in ("1", "87"):
        x = reader.samples(SpeechItem(key, "kami"))
        s0, _ = trim_silence(x, RATE)
        truth[key] = np.array([m.start for m in reader.layout(SpeechItem(key, "kami")).morae][1:]) - s0
        write(src / f"{int(key):03d}_1.mp3", np.concatenate([sil(0.3), 0.5 * x, sil(0.3)]), RATE)
    made_ahead(synth_cache, truth, ["kami"])
    pack = import_pack(src)  # default reference: the synthesized voice
    assert pack.meta["reference"] == "synth"
    for key, want in truth.items():
        t = pack.timeline(key, "kami")
        assert t.method == "dtw" and t.confidence >= 0.5
        got = np.array([m.start for m in t.morae][1:])
        err = np.abs(got - want) / RATE * 1000
        assert np.median(err) < 15 and err.max() < 60, err.round()
    assert not [p for p in pack.problems() if p.kind == "low confidence"]


def test_layout_without_stored_timeline_still_has_morae(tmp_path):
    import json

    src = tmp_path / "src" / "nt"
    write(src / "001_1.wav", ku_reading(3), RATE)
    pack = import_pack(src, reference=False)
    meta = json.loads((pack.folder / "pack.json").read_text())
    del meta["clips"]["1.kami"]["timeline"]
    (pack.folder / "pack.json").write_text(json.dumps(meta))
    lay = VoicePack(pack.folder).layout(SpeechItem("1", "kami"))
    assert len(lay.morae) == len(ToneVoice().layout(SpeechItem("1", "kami")).morae)
    assert lay.morae[-1].end == lay.frames


# ---- real packs from outside (issue 21): other voices, uniform ku pauses ----------------------

def _foreign():
    """testbed.foreign_pack: readers nobody here made, with the truth known."""
    import testbed.foreign_pack

    return testbed.foreign_pack


def test_find_split_takes_the_pause_nearest_the_expected_end():
    """Every ku pause alike (the longest is after the fourth ku): with the aligned end of the
    上の句 the split is the pause after the third."""
    kus = [tone(0.8, freq=300 + 60 * i) for i in range(5)]
    pauses = [0.35, 0.3, 0.33, 0.45]
    parts, ends = [], []
    for k, p in zip(kus, pauses + [0]):
        parts += [k, sil(p)]
        ends.append(sum(len(x) for x in parts) - len(parts[-1]))
    x = np.concatenate(parts)
    a, _ = find_split(x, RATE)
    assert abs(a - ends[3]) < 0.02 * RATE  # alone, the longest pause wins: the wrong one
    a, b = find_split(x, RATE, expect=ends[2] + int(0.1 * RATE))
    assert abs(a - ends[2]) < 0.02 * RATE and abs(b - (ends[2] + 0.33 * RATE)) < 0.02 * RATE


@needs_ffmpeg
@pytest.mark.skipif(importlib.util.find_spec("pyworld") is None, reason="needs pyworld")
def test_foreign_one_file_pack_split_and_aligned(tmp_path, synth_cache):
    """Another voice (HTS at a speaking pace, another vocal tract and pitch), stereo 24 kHz
    mp3 with leading silence; two poems with pauses alike between every ku (``uniform``: the
    longest pause is not the one before the 下の句) and two with a long one before the 下の句
    (``human``), in one pack: every poem split after the third ku, every 上の句 aligned with
    confidence, the decisive onsets near the truth."""
    fp = _foreign()
    src = tmp_path / "src" / "neural"
    styles = {"uniform": ["2", "11"], "human": ["5", "87"]}
    truth = {}
    for style, keys in styles.items():
        truth.update(fp.write_pack(src, fp.HtsReader(style=style, seed=4), keys, seed=4))
    for k in styles["uniform"]:  # the hard case: the longest pause alone would split wrong
        spans = truth[k]["ku_spans"]
        pauses = [b[0] - a[1] for a, b in zip(spans, spans[1:])]
        assert max(pauses) > pauses[2], (k, pauses)
    keys = [k for ks in styles.values() for k in ks]
    made_ahead(synth_cache, keys)
    pack = import_pack(src)
    s = fp.score_pack(pack, truth)
    assert sorted(s["split_right"]) == sorted(keys), s
    assert s["low_confidence"] == [], [(k, pack.timeline(k, "kami").confidence) for k in keys]
    d = np.abs(list(s["decisive_errors_ms"].values()))
    assert len(d) >= 3 and np.median(d) < 40 and d.max() < 120, d
    assert not [p for p in pack.problems() if p.kind in ("no split", "low confidence")]
    # the 下の句 are aligned too, not spread in proportion
    for k in keys:
        t = pack.timeline(k, "shimo")
        assert t.method == "dtw" and t.confidence >= LOW_CONFIDENCE, (k, t.method, t.confidence)


@pytest.mark.skipif(importlib.util.find_spec("pyworld") is None, reason="needs pyworld")
def test_a_neighbours_reading_is_low_though_its_cost_ratio_says_confident(tmp_path, synth_cache):
    """Issue 32: another voice (HTS) in a human reader's rhythm (quick morae, each ku's last
    held for half of it); 048 holds poem 49's 上の句, as a misnumbered file would.  Against
    poem 48's text its cost ratio alone gives it 0.70 (a chanting reading fits a wrong text
    about as well as its own morae shuffled; on a human set 4 of 35 recordings did so with a
    neighbour's text); weighed against the neighbouring poems' texts (47, 49: its own among
    them) by fit it is 0, so ``voice check`` says it is low.  049, the same reading under its
    own number, stays confident."""
    fp = _foreign()
    src = tmp_path / "src" / "rhythm"
    r = fp.HtsReader(seed=3).read("49")
    y, _ = fp.in_readers_rhythm(r, quick_s=0.15, hold_share=0.5)
    for n in (48, 49):
        write(src / f"{n:03d}_1.wav", y, r.rate)
    made_ahead(synth_cache, ["47", "48", "49", "50"])
    pack = import_pack(src)
    assert pack.timeline("48", "kami").confidence < LOW_CONFIDENCE, pack.timeline("48", "kami").confidence
    assert pack.timeline("49", "kami").confidence >= LOW_CONFIDENCE, pack.timeline("49", "kami").confidence
    assert "48 kami" in {p.clip for p in pack.problems() if p.kind == "low confidence"}


_ESPEAK: list = []  # (the pack made once in a test process, for both tests that read it)


@pytest.fixture
def espeak_pack(tmp_path_factory, synth_cache):
    """A one-file pack of 2, 5 and 61 read by espeak-ng (its uniform ku pauses), imported,
    and its score against the truth (``foreign_pack.score_pack``); made once a process."""
    if not _ESPEAK:
        _ESPEAK.append(_make_espeak_pack(tmp_path_factory, synth_cache))
    return _ESPEAK[0]


def _make_espeak_pack(tmp_path_factory, synth_cache):
    import json
    import sys

    fp = _foreign()
    keys = ["2", "5", "61"]
    tmp_path = tmp_path_factory.mktemp("espeak")
    # espeak-ng is started in a process of its own: inside a test worker that had run other
    # tests, libespeak-ng's espeak_Initialize was seen to hang (a clean-clone run); the reason
    # is not understood yet (docs/not-done.md)
    folder, truth_file = tmp_path / "src" / "espeak", tmp_path / "truth.json"
    subprocess.run([sys.executable, fp.__file__, str(folder), "--voice", "espeak", "--poems",
                    ",".join(keys), "--seed", "5", "--truth", str(truth_file)], check=True,
                   timeout=300, stdout=subprocess.DEVNULL)
    truth = json.loads(truth_file.read_text())
    made_ahead(synth_cache, keys)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KARUTA_DATA_DIR", str(tmp_path / "data"))
        mp.setenv("KARUTA_CONFIG_DIR", str(tmp_path / "config"))
        mp.setenv("KARUTA_CACHE_DIR", str(synth_cache))
        pack = import_pack(folder)
    return keys, pack, fp.score_pack(pack, truth)


@needs_ffmpeg
@pytest.mark.skipif(not _foreign().EspeakReader.available(), reason="needs espeak-ng (Japanese)")
def test_espeak_one_file_pack_split(espeak_pack):
    """A formant synthesizer's uniform ku pauses: still split after the third ku, its 上の句
    aligned near the onsets espeak-ng itself reports (its phoneme events)."""
    keys, pack, s = espeak_pack
    assert sorted(s["split_right"]) == sorted(keys)
    e = np.abs(s["onset_errors_ms"])
    assert len(e) >= 20 and np.median(e) < 40, e


@needs_ffmpeg
@pytest.mark.skipif(not _foreign().EspeakReader.available(), reason="needs espeak-ng (Japanese)")
def test_espeak_one_file_pack_aligned_with_confidence(espeak_pack):
    """All but at most one of the espeak-ng 上の句 aligned with confidence (as with the former,
    evenly paced built-in voice; failed from the chant's reader rhythm until a timeline's own
    text was weighed against its neighbours' texts, issue 32), and where confident the deciding
    mora within 100 ms of where espeak-ng says it."""
    keys, pack, s = espeak_pack
    assert len(s["low_confidence"]) <= 1, [(k, pack.timeline(k, "kami").confidence) for k in keys]
    # issue 32's bar: nothing wrong by more than 100 ms while confident, at the deciding mora
    # (measured: 4, -1, -31 ms; other morae of these 上の句 are up to ~390 ms off: not-done.md)
    wrong = {k: d for k, d in s["decisive_errors_ms"].items()
             if k not in s["low_confidence"] and abs(d) > 100}
    assert not wrong, wrong


def test_swapped_files_say_which_poem_they_sound_like(tmp_path):
    """Issue 34: two files swapped (003 holds poem 4's 上の句, 004 poem 3's): ``voice check``
    says which poem each sounds like, and names none for the files that are right."""
    ref = ToneVoice(mora_ms=100)
    src = tmp_path / "src" / "swapped"
    for n, said in ((2, 2), (3, 4), (4, 3), (5, 5)):
        write(src / f"{n:03d}_1.wav", ref.samples(SpeechItem(str(said), "kami")), RATE)
    pack = import_pack(src, reference=ref)
    assert pack.timeline("3", "kami").sounds_like == "4"
    assert pack.timeline("4", "kami").sounds_like == "3"
    assert pack.timeline("2", "kami").sounds_like is None and pack.timeline("5", "kami").sounds_like is None
    rows = {p.clip: p.detail for p in pack.problems() if p.kind == "low confidence"}
    assert set(rows) == {"3 kami", "4 kami"}
    assert "sounds like poem 4" in rows["3 kami"] and "sounds like poem 3" in rows["4 kami"]


def _one_file(ref, kami_of, shimo_of):
    """A poem read in one file: a 上の句 (poem ``kami_of``'s), a 1.5 s pause, a 下の句."""
    return np.concatenate([sil(0.3), ref.samples(SpeechItem(str(kami_of), "kami")), sil(1.5),
                           ref.samples(SpeechItem(str(shimo_of), "shimo")), sil(0.3)])


def test_one_file_swap_named_only_when_both_halves_sound_like_that_poem(tmp_path):
    """Issue 32: in a one-file set a half that fits a neighbour's text by chance (17-26 of a
    human reader's 100 下の句 did, their 上の句 their own) names no poem; two files swapped
    (003 holds poem 4 read whole, 004 poem 3) name the other poem on both halves.  Here 005's
    下の句 is poem 6's (its 上の句 its own): the 下の句 alone fits poem 6 better, the file as a
    whole does not."""
    ref = ToneVoice(mora_ms=100)
    src = tmp_path / "src" / "onefile"
    for n, kami, shimo in ((2, 2, 2), (3, 4, 4), (4, 3, 3), (5, 5, 6), (7, 7, 7)):
        write(src / f"{n:03d}.wav", _one_file(ref, kami, shimo), RATE)
    pack = import_pack(src, reference=ref)
    named = {(k, p): pack.timeline(k, p).sounds_like for k in ("2", "3", "4", "5", "7") for p in ("kami", "shimo")}
    assert named == {("2", "kami"): None, ("2", "shimo"): None, ("3", "kami"): "4", ("3", "shimo"): "4",
                     ("4", "kami"): "3", ("4", "shimo"): "3", ("5", "kami"): None, ("5", "shimo"): None,
                     ("7", "kami"): None, ("7", "shimo"): None}, named
    rows = {p.clip: p.detail for p in pack.problems() if p.kind == "low confidence"}
    assert "sounds like" not in rows.get("5 shimo", "")
    assert "sounds like poem 4" in rows["3 kami"] and "sounds like poem 3" in rows["4 shimo"]
