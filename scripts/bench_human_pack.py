#!/usr/bin/env python3
"""How a one-file pack (``NNN.mp3``, 000 = jo-ka) is split, measured against where its parts
really are: for a reader's set you have (never committed), or for a synthesized one.

    python scripts/bench_human_pack.py FOLDER [--align] [--png DIR --show 1,2,52]
    python scripts/bench_human_pack.py --synth 12      # 上・下・下 packs made here
    python scripts/bench_human_pack.py FOLDER --make-repeat [--seed 32] [--align]
                                       # a set read once (上・下) made 上・下・下 in a temp folder

Every pack is imported as a user imports it: `karuta voice add` (this environment's entry
point, a process; `--no-align` unless --align), then read back from its pack.json.

--make-repeat (issue 32 part 2 on a human voice): each file of FOLDER (the 上の句, a pause,
the 下の句, read once) gets its 下の句 again after a seeded 0.9-2.6 s pause of the file's own
room tone: a quarter as a digital copy, the rest read again (WSOLA time-stretch to 90-95 % or
105-110 % of the pace, level ±2 dB); the jo-ka's repeat read 5-8 % slower after 0.9-1.2 s, as
readers say it; in some pauses a breath or click taken from the set's own pauses; written as
mp3 (44.1 kHz, as such sets are) in a temp folder (--keep DIR to look at it; never commit it).
The truth is where each part was put; printed: doubled clips, whether the 下の句 kept is the
first copy, the 上の句's end against its voice's end, the jo-ka's repeat, what voice add said.

The truth of each file, found without the importer's code: the sound is the 10 ms frames
louder than -45 dBFS (or 40 dB under the file's loud frames); stretches of sound shorter than
0.5 s that never come within 25 dB of the loud frames (the 95th percentile), and those
shorter than 0.4 s with 0.1 s of quiet on both sides (shorter than any ku), are clicks or
breaths; the parts are the stretches of
sound between pauses of 0.8 s or more (a reader's pause between 上の句 and 下の句, and
between the 下の句 and its repeat, is 0.9-2.6 s; the breaths between ku are shorter); a third
part is the 下の句's repeat when its log-mel cepstra follow the second's (the DTW cost of
the two under 0.7 of the 2nd part's cost against the 1st).  The voice's end: the last 1 ms
block of the first part louder than 48 dB under its peak.

Prints: files whose parts were found (2 or 3), repeats; files with a clip holding more than
one part (doubled: both copies of the 下の句, or a 下の句 inside the 上の句); the 上の句 clip's
end against the voice's end (within 50 ms, median and worst error); what ``voice add`` said.
``--png DIR`` renders the spectrogram and level of the files in ``--show`` with the truth
(green) and the clips (red: 上の句, blue: 下の句) marked, to check the truth by eye.
Issue 32's goals: 0 of 101 doubled, the 上の句's end within 50 ms in at least 95 of 100.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


import numpy as np  # noqa: E402

RATE = 48000


def truth_of(y) -> dict:
    """{"parts": [(start, end) samples], "repeat": bool, "voice_end": sample}."""
    hop = RATE // 100
    n = len(y) // hop
    db = 10 * np.log10(np.mean(y[: n * hop].astype(np.float64).reshape(n, hop) ** 2, axis=1) + 1e-20)
    on = db > min(-45.0, np.percentile(db, 95) - 40)
    runs = []
    m = np.concatenate([[False], on, [False]])
    d = np.flatnonzero(np.diff(m.astype(np.int8)))
    runs = [(int(s), int(e)) for s, e in zip(d[0::2], d[1::2])]
    # a short stretch that stays 25 dB under the loud frames, or a shorter one than any ku
    # with 0.1 s of quiet on both sides: a click or a breath
    top = np.percentile(db, 95)
    keep = []
    for i, (s, e) in enumerate(runs):
        alone = (s - runs[i - 1][1] if i else 10 ** 9) >= 10 and \
            (runs[i + 1][0] - e if i + 1 < len(runs) else 10 ** 9) >= 10
        if not (e - s < 50 and db[s:e].max() < top - 25 or e - s < 40 and alone):
            keep.append((s, e))
    parts = []
    for s, e in keep:
        if parts and s - parts[-1][1] < 80:
            parts[-1] = (parts[-1][0], e)
        else:
            parts.append((s, e))
    parts = [(s * hop, e * hop) for s, e in parts]
    repeat = False
    if len(parts) == 3:
        _features, dtw_cost = _similarity()

        f = [_features(y[s:e], RATE) for s, e in parts]
        allf = np.concatenate(f)
        mu, sd = allf.mean(0), allf.std(0) + 1e-9
        f = [(x - mu) / sd for x in f]
        repeat = dtw_cost(f[1], f[2]) < 0.7 * dtw_cost(f[1], f[0])
    s, e = parts[0] if parts else (0, 0)
    seg = np.abs(y[s:e])
    blocks = seg[: len(seg) // 48 * 48].reshape(-1, 48).max(axis=1) if len(seg) >= 48 else seg
    loud = np.flatnonzero(blocks > blocks.max() * 10 ** (-48 / 20)) if len(blocks) else [0]
    voice_end = s + (int(loud[-1]) + 1) * 48 if len(blocks) else e
    return {"parts": parts, "repeat": repeat, "voice_end": voice_end}


def _similarity():
    """This tree's log-mel cepstra and DTW cost (``audio.pack.split.similarity_features``,
    ``audio.align.dtw_cost`` without a step penalty)."""
    from audio.align import dtw_cost
    from audio.pack.split import similarity_features

    return similarity_features, lambda A, B: dtw_cost(A, B, step_penalty=0.0)


def clip_span(pack, key: str, part: str, y) -> tuple[int, int] | None:
    """Where the pack's clip sits in the decoded source file: stored at import since issue 32,
    found by cross-correlation for a pack imported before."""
    from scipy.signal import fftconvolve

    c = pack.meta["clips"].get(f"{key}.{part}")
    if c is None:
        return None
    if "span" in c:
        return tuple(c["span"])
    import soundfile as sf

    x, _ = sf.read(str(pack.folder / c["file"]), dtype="float64")
    w = x[:4800]
    corr = fftconvolve(y, w[::-1], mode="valid")
    energy = np.sqrt(np.abs(fftconvolve(y.astype(np.float64) ** 2, np.ones(len(w)), mode="valid")))
    r = np.where(energy > 1e-6, corr / (energy * np.linalg.norm(w) + 1e-20), 0)
    s = int(np.argmax(r))
    return s, s + len(x)


def overlap(a, b) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def score(pack, src: Path, keys: list[str]) -> dict:
    from audio.decode import decode

    rows = {}

    def one(key):
        nnn = 0 if key == "joka" else int(key)
        f = next(src.glob(f"*{nnn:03d}.*"))
        y = decode(f, RATE).samples
        t = truth_of(y)
        spans = {p: clip_span(pack, key, p, y) for p in ("kami", "shimo")}
        doubled = [p for p, sp in spans.items() if sp is not None
                   and sum(overlap(sp, q) > 0.3 * RATE for q in t["parts"]) > 1]
        end_err = (spans["kami"][1] - t["voice_end"]) / RATE * 1000 if spans["kami"] else None
        return key, {"truth": t, "spans": spans, "doubled": doubled, "end_err_ms": end_err, "y": y}

    with ThreadPoolExecutor(max_workers=2) as ex:
        for key, r in ex.map(one, keys):
            rows[key] = r
    return rows


def report(rows: dict, pack, took: float) -> None:
    n = len(rows)
    found = sum(1 for r in rows.values() if len(r["truth"]["parts"]) in (2, 3))
    reps = [k for k, r in rows.items() if r["truth"]["repeat"]]
    print(f"files: {n}; truth: {found} of {n} in 2 or 3 parts, {len(reps)} read the 下の句 twice "
          f"(parts: {sorted({len(r['truth']['parts']) for r in rows.values()})}); imported in {took:.0f} s")
    doubled = {k: r["doubled"] for k, r in rows.items() if r["doubled"]}
    print(f"doubled: {len(doubled)} of {n}" + (f" ({', '.join(f'{k} {v}' for k, v in list(doubled.items())[:8])})"
                                               if doubled else ""))
    errs = np.array([r["end_err_ms"] for k, r in rows.items() if k != "joka" and r["end_err_ms"] is not None])
    if len(errs):
        ok = int((np.abs(errs) <= 50).sum())
        worst = sorted(((abs(r["end_err_ms"]), k) for k, r in rows.items()
                        if k != "joka" and r["end_err_ms"] is not None), reverse=True)[:5]
        print(f"上の句 end within 50 ms of the voice's end: {ok} of {len(errs)} poems (median "
              f"{np.median(errs):+.0f} ms, |err| 90% {np.percentile(np.abs(errs), 90):.0f} ms; worst "
              + ", ".join(f"{k} {e:.0f} ms" for e, k in worst) + ")")
    notes = pack.notes() if hasattr(pack, "notes") else []
    print("voice add says: " + ("; ".join(notes) if notes else "(nothing about the split)"))


def render(rows: dict, keys: list[str], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    for key in keys:
        r = rows[key]
        y = r["y"]
        fig, ax = plt.subplots(2, 1, figsize=(18, 7), sharex=True)
        ax[0].specgram(y[::3], NFFT=512, Fs=RATE // 3, noverlap=384, cmap="magma", vmin=-140)
        ax[0].set_ylim(0, 6000)
        hop = RATE // 100
        n = len(y) // hop
        db = 10 * np.log10(np.mean(y[: n * hop].astype(np.float64).reshape(n, hop) ** 2, axis=1) + 1e-20)
        ax[1].plot(np.arange(n) / 100, db)
        ax[1].set_ylim(-100, 0)
        ax[1].grid()
        for s, e in r["truth"]["parts"]:
            ax[1].axvspan(s / RATE, e / RATE, color="g", alpha=0.15)
        ax[1].axvline(r["truth"]["voice_end"] / RATE, color="g")
        for p, c in (("kami", "r"), ("shimo", "b")):
            if r["spans"][p]:
                for v in r["spans"][p]:
                    for a in ax:
                        a.axvline(v / RATE, color=c, lw=1)
        ax[0].set_title(f"{key}: truth (green) {len(r['truth']['parts'])} parts, repeat "
                        f"{r['truth']['repeat']}; kami clip red, shimo clip blue; kami end error "
                        f"{r['end_err_ms']:.0f} ms")
        plt.tight_layout()
        plt.savefig(out / f"{key}.png", dpi=60)
        plt.close(fig)


def synth_pack(folder: Path, n: int, seed: int = 5, tone: bool = False) -> None:
    """``n`` poems (the jo-ka and 1..n-1) read 上・下・下 as testbed/synth_clips.py reads them
    (the synthesized voice, or test tones with ``tone``): other speeds, pauses, breaths and
    clicks, a digital copy every fourth poem."""
    from testbed.synth_clips import write_repeat_pack

    from audio.voice import ToneVoice

    write_repeat_pack(folder, ["joka"] + [str(k) for k in range(1, n)], seed=seed,
                      voice=ToneVoice(RATE) if tone else None)


# ---- --make-repeat: a human-voiced 上・下・下 set from a set read once (上・下) ----------------

#: how the repeat is made, per file (seeded): the pause before it (s), a digital copy or read
#: again (speed, level), and the jo-ka's repeat as readers say it (read again, a little slower)
PAUSE_S = (0.9, 2.6)
JOKA_PAUSE_S = (0.9, 1.2)
COPY_SHARE = 0.25
BURST_SHARE = 0.5


def _frame_db(y, hop: int):
    n = len(y) // hop
    return 10 * np.log10(np.mean(y[: n * hop].astype(np.float64).reshape(n, hop) ** 2, axis=1) + 1e-20)


def _bursts_of(y, t: dict) -> list:
    """Breath- and click-like sounds in a once-read file's pauses (before the 上の句, between
    the parts, after the 下の句), away from the voice by 0.1 s: 10 ms frames 12 dB over the
    pause's own floor, 10-400 ms long, each with 20 ms of the floor around it."""
    hop = RATE // 100
    db = _frame_db(y, hop)
    (k0, _k1), (s0, s1) = t["parts"][:2]
    zones = [(0, k0 // hop - 10), (t["voice_end"] // hop + 10, s0 // hop - 10), (s1 // hop + 10, len(db))]
    out = []
    for a, b in zones:
        if b - a < 20:
            continue
        z = db[a:b]
        floor = np.percentile(z, 20)
        on = np.concatenate([[False], z > floor + 12, [False]])
        d = np.flatnonzero(np.diff(on.astype(np.int8)))
        for s, e in zip(d[0::2], d[1::2]):
            if 1 <= e - s <= 40:
                lo, hi = (a + s - 2) * hop, (a + e + 2) * hop
                if lo >= 0 and hi <= len(y):
                    out.append(np.asarray(y[lo:hi], np.float32))
    return out


def _room(y, t: dict, n: int, rng) -> np.ndarray:
    """``n`` samples of the file's own room tone: the quietest 0.4 s of its pause between the
    parts, tiled with 20 ms crossfades (no digital silence in a pause a microphone recorded)."""
    hop = RATE // 100
    lo, hi = t["voice_end"] + RATE // 5, t["parts"][1][0] - RATE // 10
    w = int(0.4 * RATE)
    if hi - lo < w:
        lo, hi = max(0, t["parts"][1][1] + RATE // 5), len(y)
    seg = np.asarray(y[lo:hi], np.float64)
    if len(seg) < w:
        return np.zeros(n, np.float32)
    db = _frame_db(seg, hop)
    k = w // hop
    c = np.convolve(10 ** (db / 10), np.ones(k), mode="valid")
    s = int(np.argmin(c)) * hop
    piece = seg[s:s + w]
    fade = int(0.02 * RATE)
    out = np.zeros(n + w, np.float64)
    ramp = np.linspace(0, 1, fade)
    at = 0
    while at < n:
        p = piece.copy()
        p[:fade] *= ramp
        p[-fade:] *= ramp[::-1]
        out[at:at + w] += p
        at += w - fade
    return out[:n].astype(np.float32)


def _xfade(a, b, n: int = int(0.01 * RATE)):
    """``a`` then ``b`` with an n-sample crossfade (both at room-tone level there)."""
    n = min(n, len(a), len(b))
    r = np.linspace(0, 1, n, dtype=np.float32)
    mid = a[len(a) - n:] * (1 - r) + b[:n] * r
    return np.concatenate([a[:len(a) - n], mid, b[n:]])


def make_repeat_set(src: Path, dst: Path, seed: int = 32, fmt: str = "mp3",
                    keys: list | None = None) -> dict:
    """A human-voiced 上・下・下 set in ``dst`` from a set read once (``src``: NNN.mp3, 000 the
    jo-ka, each 上の句 · pause · 下の句): after each file's 下の句 the file's own room tone for
    a seeded 0.9-2.6 s pause, then that 下の句 again, a digital copy (a quarter of the files)
    or read again (WSOLA time-stretch to 90-95 % or 105-110 % of its pace, level +-2 dB); the
    jo-ka's repeat read again 5-8 % slower after 0.9-1.2 s, as readers say it.  In half the
    pauses (either) a breath or click taken from the set's own pauses (else a noise burst) 0.3-
    0.8 s after the voice.  Returns the truth per key (samples at 48 kHz of the written file):
    ``kami_end`` (the 上の句's voice end), ``parts`` [上の句, 下の句, repeat] (start, end),
    ``copy``, ``speed``, ``gain_db``, ``pause_s``, ``bursts`` (where they were put)."""
    import soundfile as sf

    from audio.decode import decode
    from audio.stretch import stretch

    rng = np.random.default_rng(seed)
    files = sorted(src.glob("*.mp3")) + sorted(src.glob("*.wav")) + sorted(src.glob("*.flac"))
    keyed = []
    for f in files:
        digits = "".join(ch for ch in f.stem[-3:] if ch.isdigit())
        if len(digits) == 3:
            key = "joka" if int(digits) == 0 else str(int(digits))
            if keys is None or key in keys:
                keyed.append((key, f))
    decoded = {key: decode(f, RATE).samples for key, f in keyed}
    truths = {key: truth_of(y) for key, y in decoded.items()}
    library = [b for key in decoded if len(truths[key]["parts"]) == 2
               for b in _bursts_of(decoded[key], truths[key])]
    library = [b for b in library if np.abs(b).max() < 0.3]  # not a piece of voice
    dst.mkdir(parents=True, exist_ok=True)
    out = {}
    for key, f in keyed:
        y, t = decoded[key], truths[key]
        if len(t["parts"]) != 2:
            out[key] = {"skipped": f"{len(t['parts'])} parts"}
            continue
        joka = key == "joka"
        (k0, k1), (s0, s1) = t["parts"]
        copy = (not joka) and rng.random() < COPY_SHARE
        if joka:
            speed, gain_db = float(rng.uniform(0.92, 0.95)), float(rng.uniform(-1.0, 0.0))
        elif copy:
            speed, gain_db = 1.0, 0.0
        else:
            speed = float(rng.choice([-1, 1]) * rng.uniform(0.05, 0.10) + 1.0)
            gain_db = float(rng.uniform(-2.0, 2.0))
        pause = float(rng.uniform(*(JOKA_PAUSE_S if joka else PAUSE_S)))
        pre, post = int(0.1 * RATE), int(0.1 * RATE)
        cut = min(len(y), s1 + post)
        head = np.asarray(y[:cut], np.float32).copy()
        seg = np.asarray(y[s0 - pre:cut], np.float32)
        again = seg.copy() if copy else stretch(seg, RATE, speed)
        # read louder, but not past the file's own peak (the reader's level did not clip)
        gain_db = min(gain_db, 20 * np.log10(float(np.abs(y).max()) / max(1e-9, float(np.abs(again).max()))))
        again = (again * 10 ** (gain_db / 20)).astype(np.float32)
        gap = _room(y, t, int(pause * RATE) - post - int(round(pre / speed)), rng)
        tailroom = _room(y, t, int(0.3 * RATE), rng)
        bursts = []

        def put(into, offset, room_start, room_len):  # a burst 0.3-0.8 s into a pause
            b = library[int(rng.integers(len(library)))] if library else None
            if b is None:  # no breath in the set: a noise burst, a breath's length and level
                n = int(rng.uniform(0.2, 0.35) * RATE)
                b = (10 ** (-50 / 20) * np.convolve(rng.standard_normal(n), np.hanning(64), "same")
                     / 8 * np.hanning(n)).astype(np.float32)
            at = room_start + int(rng.uniform(0.3, 0.8) * RATE)
            at = min(at, room_start + room_len - len(b) - int(0.15 * RATE))
            if at < room_start + int(0.2 * RATE):
                return
            into[at - offset:at - offset + len(b)] += b
            bursts.append((at, at + len(b)))

        if rng.random() < BURST_SHARE / 2:  # in the 上の句's pause
            put(head, 0, t["voice_end"], s0 - t["voice_end"])
        z = _xfade(_xfade(head, gap), again)
        r0 = len(z) - len(again) + int(round(pre / speed))
        r1 = len(z) - int(round(post / speed))
        if rng.random() < BURST_SHARE:  # in the repeat's pause
            room_at = s1
            zz = z.copy()
            put(zz, 0, room_at, r0 - room_at)
            z = zz
        z = _xfade(z, np.concatenate([tailroom, np.asarray(y[cut:], np.float32)]))
        out[key] = {"kami_end": int(t["voice_end"]), "parts": [(k0, k1), (s0, s1), (r0, r1)],
                    "copy": bool(copy), "speed": round(speed, 3), "gain_db": round(gain_db, 2),
                    "pause_s": round((r0 - s1) / RATE, 2), "bursts": bursts, "file": f.stem}
        name = f"{f.stem}.{fmt}"
        if fmt == "mp3":  # as the reader's files are: 44.1 kHz mono mp3 (ffmpeg, LAME)
            import subprocess

            wav = dst / f"{f.stem}.tmp.wav"
            sf.write(str(wav), z, RATE, subtype="FLOAT")
            subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(wav), "-ar", "44100", "-ac", "1",
                            "-b:a", "128k", str(dst / name)], check=True)
            wav.unlink()
            # where the encoder put it: the decoded file against what was written (the lag)
            back = decode(dst / name, RATE).samples
            lag = _lag(z, back)
            if lag:
                out[key]["kami_end"] += lag
                out[key]["parts"] = [(a + lag, b + lag) for a, b in out[key]["parts"]]
                out[key]["bursts"] = [(a + lag, b + lag) for a, b in bursts]
        else:
            sf.write(str(dst / name), z, RATE, subtype="PCM_24")
    out["_library"] = len(library)
    return out


def _lag(a, b) -> int:
    """Samples by which ``b`` is later than ``a`` (their first 5 s)."""
    from scipy.signal import fftconvolve

    n = min(len(a), len(b), 5 * RATE)
    c = fftconvolve(np.asarray(b[:n], np.float64), np.asarray(a[:n], np.float64)[::-1], mode="full")
    return int(np.argmax(c)) - (n - 1)


def score_made(pack, made: dict) -> dict:
    """Each clip against where the made set's parts really are (``make_repeat_set``'s truth)."""
    rows = {}
    for key, t in made.items():
        if key.startswith("_") or "skipped" in t:
            continue
        spans = {p: clip_span(pack, key, p, None) for p in ("kami", "shimo")}
        again = (pack.meta.get("again") or {}).get(f"{key}.shimo")
        doubled = [p for p, sp in spans.items() if sp is not None
                   and sum(overlap(sp, q) > 0.3 * RATE for q in t["parts"]) > 1]
        end_err = (spans["kami"][1] - t["kami_end"]) / RATE * 1000 if spans["kami"] else None
        first = spans["shimo"] is not None and overlap(spans["shimo"], t["parts"][1]) > 0.5 * (
            t["parts"][1][1] - t["parts"][1][0])
        rows[key] = {"truth": t, "spans": spans, "doubled": doubled, "end_err_ms": end_err,
                     "first_kept": first, "again": tuple(again["span"]) if again else None}
    return rows


def report_made(rows: dict, made: dict, said: str, took: float) -> None:
    n = len(rows)
    copies = [k for k, r in rows.items() if r["truth"]["copy"]]
    bursts = sum(len(r["truth"]["bursts"]) for r in rows.values())
    print(f"made: {n} files read 上・下・下 ({len(copies)} repeats a digital copy, {n - len(copies)} read "
          f"again; {bursts} breaths/clicks put in pauses, from {made['_library']} found in the set's "
          f"own pauses); imported by `karuta voice add` in {took:.0f} s")
    doubled = {k: r["doubled"] for k, r in rows.items() if r["doubled"]}
    print(f"doubled: {len(doubled)} of {n}" + (f" ({', '.join(f'{k} {v}' for k, v in list(doubled.items())[:8])})"
                                               if doubled else ""))
    notfirst = [k for k, r in rows.items() if not r["first_kept"]]
    print(f"the 下の句 clip is the first copy: {n - len(notfirst)} of {n}"
          + (f" (not: {', '.join(notfirst[:10])})" if notfirst else ""))
    errs = {k: r["end_err_ms"] for k, r in rows.items() if k != "joka" and r["end_err_ms"] is not None}
    if errs:
        e = np.array(list(errs.values()))
        worst = sorted(((abs(v), k) for k, v in errs.items()), reverse=True)[:5]
        print(f"上の句 end within 50 ms of the voice's end: {int((np.abs(e) <= 50).sum())} of {len(e)} poems "
              f"(median {np.median(e):+.0f} ms, |err| 90% {np.percentile(np.abs(e), 90):.0f} ms; worst "
              + ", ".join(f"{k} {v:.0f} ms" for v, k in worst) + ")")
    j = rows.get("joka")
    if j:
        rep = j["truth"]["parts"][2]
        ok = j["again"] is not None and overlap(j["again"], rep) > 0.8 * (rep[1] - rep[0])
        print(f"jo-ka: its repeat kept as the reader said it (again clip on the repeat): {'yes' if ok else 'no'}"
              + (f" ({(j['again'][1] - j['again'][0]) / RATE:.1f} s; the reader's {(rep[1] - rep[0]) / RATE:.1f} s)"
                 if j["again"] else ""))
    print("voice add says: " + (said.strip().replace("\n", " | ") or "(nothing)"))
    print(check_summary(said))


def check_summary(said: str) -> str:
    """voice add's check table in one line: the clips it flags low and the swaps it names."""
    low = [ln for ln in said.splitlines() if "low confidence" in ln]
    kami = [ln for ln in low if ln.split()[1:2] == ["kami"]]
    swaps = [ln for ln in low if "sounds like poem" in ln]
    return (f"voice add's check: {len(low)} clips low confidence ({len(kami)} 上の句), "
            f"{len(swaps)} named 'sounds like poem N'")


def voice_add(src: Path, name: str, align: bool, env: dict) -> tuple[str, float]:
    """``karuta voice add`` as a user runs it: this environment's entry point, a process."""
    import subprocess

    exe = Path(sys.executable).parent / "karuta"
    cmd = [str(exe)] if exe.exists() else [shutil.which("karuta") or "karuta"]
    cmd += ["voice", "add", str(src), "--name", name] + ([] if align else ["--no-align"])
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    took = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"voice add failed ({res.returncode}): {res.stdout[-2000:]} {res.stderr[-2000:]}")
    return res.stdout, took



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", type=Path, help="a one-file pack (NNN.mp3 ...)")
    ap.add_argument("--synth", type=int, default=0, help="instead: make an N-poem 上・下・下 pack here")
    ap.add_argument("--tone", action="store_true", help="with --synth: test tones, not the synthesized voice")
    ap.add_argument("--make-repeat", action="store_true",
                    help="FOLDER is a set read once (上・下): make it 上・下・下 in a temp folder "
                         "(the 下の句 again, pauses, breaths) and measure against where each part was put")
    ap.add_argument("--seed", type=int, default=32, help="with --make-repeat: the seed of pauses, speeds, copies")
    ap.add_argument("--format", default="mp3", choices=("mp3", "flac"), help="with --make-repeat: the files' format")
    ap.add_argument("--only", help="with --make-repeat: these files only (e.g. joka,1,2)")
    ap.add_argument("--keep", type=Path, help="with --make-repeat: also copy the made set here (never commit it)")
    ap.add_argument("--align", action="store_true", help="import with the alignment (as voice add does; slower)")
    ap.add_argument("--png", type=Path, help="render the files of --show here")
    ap.add_argument("--show", default="1,2,52", help="which files --png renders")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="karuta-bench-human-"))
    env = dict(os.environ, KARUTA_DATA_DIR=str(work / "data"), KARUTA_CONFIG_DIR=str(work / "config"))
    os.environ.update({k: env[k] for k in ("KARUTA_DATA_DIR", "KARUTA_CONFIG_DIR")})
    try:
        src = args.folder
        if args.synth:
            src = work / "src" / "synth"
            synth_pack(src, args.synth, tone=args.tone)
        if src is None:
            ap.error("give a folder or --synth N")
        from audio.pack import VoicePack, scan_source

        if args.make_repeat:
            made_dir = work / "src" / "repeat"
            t0 = time.perf_counter()
            made = make_repeat_set(src, made_dir, seed=args.seed, fmt=args.format,
                                   keys=args.only.split(",") if args.only else None)
            print(f"made the 上・下・下 set in {time.perf_counter() - t0:.0f} s (seed {args.seed}, {args.format})")
            skipped = {k: v["skipped"] for k, v in made.items() if not k.startswith("_") and "skipped" in v}
            if skipped:
                print(f"skipped (not 2 parts in the source): {skipped}")
            if args.keep:
                shutil.copytree(made_dir, args.keep, dirs_exist_ok=True)
            said, took = voice_add(made_dir, "bench-repeat", args.align, env)
            pack = VoicePack(work / "data" / "voices" / "bench-repeat")
            report_made(score_made(pack, made), made, said, took)
            return 0
        keys = sorted({k for k, _ in scan_source(src).files}, key=lambda k: -1 if k == "joka" else int(k))
        said, took = voice_add(src, "bench-human", args.align, env)
        pack = VoicePack(work / "data" / "voices" / "bench-human")
        rows = score(pack, src, keys)
        report(rows, pack, took)
        print(check_summary(said))
        if args.png:
            render(rows, [k for k in args.show.split(",") if k in rows], args.png)
            print(f"pictures in {args.png}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
