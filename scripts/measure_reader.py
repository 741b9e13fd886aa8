#!/usr/bin/env python3
"""Measure a human reader's rhythm inside the ku, in a folder of their recordings.

    nice python scripts/measure_reader.py FOLDER [--poems 1-30] [--show 52] [--json out.json]

FOLDER holds one file a poem, named by its number (``001.mp3`` ... ``100.mp3``; ``000`` the
jo-ka), each the 上の句, a pause, the 下の句 (and maybe a pause and the 下の句 again, as a
kyogi reading gives it: only the first 上の句 and 下の句 are measured).  The text is known
(``poems``), so each part's mora count is too.  Per file:

* **parts**: the sound (5 ms windows above the file's loud level less 35 dB, gaps under
  0.8 s bridged, blips under 0.3 s ignored) split at pauses of 0.8 s or more: the first stretch
  is the 上の句, the second the 下の句;
* **mora onsets** inside a part: the first sound, every return of sound after a silence of 40 ms
  or more, every return from a dip of the level of 6 dB or more, and the peaks of the log-mel
  flux (``audio.acoustics``' measure: 40 bands, 20 ms apart, positive differences) are the
  candidates, scored by their size (log); the path through them with exactly as many morae a
  ku as the text has scores best under a weak prior on durations (a mora within a ku 70-400
  ms, a ku's last at least 300 ms: only the impossible is penalised);
* **the held last mora** of each ku: from its onset to the last sound before the next ku's first
  onset (or the part's end); its share of the ku (from the ku's first onset to that end);
* **the held sound's level and pitch**: from 100 ms after the last mora's onset to 150 ms
  before its end (where at least 300 ms are left): the 50 ms RMS level's last third against
  its first third (median of each, dB), and WORLD Harvest pitch (10 ms) likewise in
  semitones, with its 5-95 % range.

Prints the mora durations by position in the ku (from the start and from the end), the held
share, the held sound's level and pitch, part lengths, part-end holds and the pauses, each as
median [10 %, 90 %] over the files measured, then the numbers ``audio.chant.READER_RHYTHM``
holds.  ``--show N`` prints poem N's onsets ku by ku.  The method is a heuristic: where the
flux misses a weak onset (a vowel after a vowel) it takes a spurious one elsewhere; the medians
over many ku are what it is for.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np


RATE = 16000
HOP = 80  # 5 ms


def _parse_poems(spec: str | None) -> list[int]:
    if not spec:
        return list(range(0, 101))
    out = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def ku_morae(key: str) -> list[int]:
    """Morae per ku of poem ``key`` ("joka" or "1".."100"), as the reading is written."""
    from audio.synth import reading_morae
    from audio.voice import text_for

    return [len(reading_morae(r)) for r in text_for(key).reading]


def level_db(x):
    from audio.acoustics import window_db

    return window_db(x, RATE, win_ms=10.0, hop_ms=HOP * 1000 / RATE)


def runs(mask):
    """(start, end) index pairs of the True runs of ``mask``."""
    m = np.concatenate([[False], mask, [False]]).astype(np.int8)
    d = np.diff(m)
    return list(zip(np.nonzero(d == 1)[0], np.nonzero(d == -1)[0]))


def parts(x):
    """The stretches of sound (window indices) separated by pauses of 0.8 s or more."""
    e = level_db(x)
    loud = np.percentile(e, 95)
    on = e > loud - 35
    segs = [(a, b) for a, b in runs(on)]
    merged = []
    for a, b in segs:
        if merged and a - merged[-1][1] < 160:  # 0.8 s
            merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
    return [(a, b) for a, b in merged if b - a >= 60], e, loud


def flux(x):
    """Positive log-mel flux per 5 ms window (20 ms lag), and the windows' times."""
    from audio.acoustics import _mel_filters

    win, n_fft, lag = 400, 512, 4
    idx = np.arange(0, len(x) - win + 1, HOP)[:, None] + np.arange(win)[None, :]
    spec = np.abs(np.fft.rfft(x[idx] * np.hanning(win)[None, :], n=n_fft, axis=1)) ** 2
    mel = 10 * np.log10(spec @ _mel_filters(n_fft, RATE, 40, 60.0, 7500.0).T + 1e-12)
    mel = np.maximum(mel, mel.max() - 60.0)
    f = np.zeros(len(mel))
    f[lag:] = np.maximum(0.0, mel[lag:] - mel[:-lag]).mean(axis=1)
    # a window's flux is heard at its later window's start + the ramp: place it at the
    # later window's centre less half the lag
    return f, win // 2 // HOP - lag // 2


def _prior(d, ku_end: bool):
    """Log-prior of a mora lasting ``d`` windows (5 ms): weak, only against the impossible.
    A mora within a ku lasts 70-400 ms; a ku's last mora at least 300 ms."""
    d = d * 5.0
    if ku_end:
        return -np.square(np.maximum(0.0, 300.0 - d) / 100.0)
    return -np.square(np.maximum(0.0, d - 400.0) / 100.0) - np.square(np.maximum(0.0, 70.0 - d) / 20.0)


def onsets_in(a, b, e, loud, fl, shift, ku_n):
    """Mora onsets (window indices) in part [a, b) of ``ku_n`` morae a ku: the candidates (the
    part's start, returns of sound after 40 ms of silence, log-mel flux peaks) scored by the
    flux (log), the best path through them with exactly that many morae under a weak prior on
    durations (``_prior``)."""
    on = e[a:b] > loud - 35
    cand = {a: 4.0}
    for s, t in runs(~on):
        if t - s >= 8 and a + t < b:  # 40 ms of silence, then sound
            cand[a + t] = 4.0
    # a dip of the level of 6 dB or more (a flap, a nasal, a vowel re-articulated): its return
    lv = e[a:b]
    for i in range(4, len(lv) - 4):
        if lv[i] <= lv[i - 1] and lv[i] < lv[i + 1]:
            back = min(lv[max(0, i - 10):i].max(), lv[i + 1:i + 11].max())
            if back - lv[i] >= 6.0 and a + i + 2 not in cand:
                cand[a + i + 2] = float(np.log((back - lv[i]) / 2))
    f = fl[a:b]
    for i in range(1, len(f) - 1):
        if f[i] >= f[i - 1] and f[i] > f[i + 1] and f[i] > 1.0:
            t = a + i - shift
            if a < t < b and t not in (a,):
                cand[t] = max(cand.get(t, -np.inf), float(np.log(f[i])))
    ts = np.array(sorted(cand))
    sc = np.array([cand[t] for t in ts])
    ends = set(np.cumsum(ku_n) - 1)
    n = sum(ku_n)
    C = len(ts)
    if C < n:
        return []
    gap = ts[None, :] - ts[:, None]  # [from, to]
    valid = gap > 0
    best = np.full(C, -np.inf)
    best[0] = sc[0]
    back = np.zeros((n, C), dtype=int)
    for i in range(1, n):
        tr = best[:, None] + np.where(valid, _prior(np.where(valid, gap, 1), (i - 1) in ends), -np.inf)
        back[i] = np.argmax(tr, axis=0)
        best = tr[back[i], np.arange(C)] + sc
    best = best + _prior(b - ts, True)
    c = int(np.argmax(best))
    if not np.isfinite(best[c]):
        return []
    path = [c]
    for i in range(n - 1, 0, -1):
        c = int(back[i, c])
        path.append(c)
    return [int(ts[c]) for c in reversed(path)]


def measure(path: Path, key: str, with_pitch: bool = True) -> dict | None:
    from audio.acoustics import held_drift
    from audio.decode import decode

    x = np.asarray(decode(path, rate=RATE).samples, dtype=np.float64)
    ps, e, loud = parts(x)
    if len(ps) < 2:
        return None
    counts = ku_morae(key)
    out = {"key": key, "parts": [], "pauses_s": [(ps[i + 1][0] - ps[i][1]) * HOP / RATE for i in range(len(ps) - 1)]}
    fl, shift = flux(x)
    for part, (a, b), ku_n in (("kami", ps[0], counts[:3]), ("shimo", ps[1], counts[3:])):
        on = onsets_in(a, b, e, loud, fl, shift, ku_n)
        if len(on) < sum(ku_n):
            return None
        kus = []
        i = 0
        for k, n in enumerate(ku_n):
            ons = on[i:i + n]
            nxt = on[i + n] if i + n < len(on) else b
            # the held end: the last sound before the next ku's first onset
            seg = e[ons[-1]:nxt] > loud - 35
            hit = np.nonzero(seg)[0]
            end = ons[-1] + int(hit[-1]) + 1 if len(hit) else nxt
            ku = {"onsets_ms": [int(t - ons[0]) * HOP * 1000 // RATE for t in ons],
                  "end_ms": int(end - ons[0]) * HOP * 1000 // RATE,
                  "start_s": ons[0] * HOP / RATE}
            h0, h1 = ons[-1] + 20, end - 30  # 100 ms in, 150 ms before the end
            hd = held_drift(x[h0 * HOP:max(h0, h1) * HOP], RATE, pitch=with_pitch)
            if hd is not None:
                ku["held_level_db"] = hd["level_db"]
                if hd["pitch_st"] is not None:
                    ku["held_pitch_st"] = hd["pitch_st"]
                    ku["held_pitch_range_st"] = hd["pitch_range_st"]
            kus.append(ku)
            i += n
        out["parts"].append({"part": part, "len_s": (b - a) * HOP / RATE, "kus": kus})
    return out


def figures(rows: list[dict]) -> dict:
    """The figures over measured files (see the module docstring)."""
    first: dict[int, list[float]] = {}
    from_end: dict[int, list[float]] = {}
    inner, share, share_inner, share_end, lvl, pitch, prange, hold_end, hold_inner = ([] for _ in range(9))
    ku_len = []
    for r in rows:
        for p in r["parts"]:
            for k, ku in enumerate(p["kus"]):
                o = ku["onsets_ms"] + [ku["end_ms"]]
                d = np.diff(o)
                for j, v in enumerate(d[:-1]):
                    first.setdefault(j, []).append(float(v))
                    from_end.setdefault(len(d) - 1 - j, []).append(float(v))
                    inner.append(float(v))
                s = d[-1] / o[-1]
                share.append(float(s))
                ku_len.append(o[-1] / 1000)
                if k == len(p["kus"]) - 1:
                    share_end.append(float(s))
                    hold_end.append(d[-1] / 1000)
                else:
                    share_inner.append(float(s))
                    hold_inner.append(d[-1] / 1000)
                if "held_level_db" in ku:
                    lvl.append(ku["held_level_db"])
                if "held_pitch_st" in ku:
                    pitch.append(ku["held_pitch_st"])
                    prange.append(ku["held_pitch_range_st"])
    kami = [r["parts"][0]["len_s"] for r in rows]
    shimo = [r["parts"][1]["len_s"] for r in rows]
    pause = [r["pauses_s"][0] for r in rows]
    return {"by_position_ms": {j: v for j, v in sorted(first.items())},
            "from_end_ms": {j: v for j, v in sorted(from_end.items())},
            "inner_ms": inner, "last_share": share, "last_share_inner": share_inner,
            "last_share_part_end": share_end, "hold_inner_s": hold_inner, "hold_part_end_s": hold_end,
            "held_level_db": lvl, "held_pitch_st": pitch, "held_pitch_range_st": prange,
            "ku_s": ku_len, "kami_s": kami, "shimo_s": shimo, "pause_s": pause}


def q(v, scale=1.0, fmt="{:.0f}"):
    v = np.asarray(v, dtype=float) * scale
    if not len(v):
        return "-"
    m, lo, hi = np.percentile(v, [50, 10, 90])
    return f"{fmt.format(m)} [{fmt.format(lo)}, {fmt.format(hi)}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--poems", help="e.g. 1-30,52 (default: every file 000-100 found)")
    ap.add_argument("--show", type=int, action="append", default=[], help="print poem N's onsets")
    ap.add_argument("--no-pitch", action="store_true", help="skip Harvest (faster)")
    ap.add_argument("--json", help="write the per-file measurements here")
    a = ap.parse_args()
    folder = Path(a.folder)
    if not folder.is_dir():
        sys.exit(f"karuta: not a folder: {folder}")
    rows, skipped = [], []
    for n in _parse_poems(a.poems):
        files = sorted(p for p in folder.glob(f"{n:03d}.*") if p.is_file())
        if not files:
            continue
        key = "joka" if n == 0 else str(n)
        try:
            r = measure(files[0], key, with_pitch=not a.no_pitch)
        except Exception as e:  # one bad file: say so, measure the rest
            print(f"  {files[0].name}: not measured ({e.__class__.__name__}: {e})")
            r = None
        if r is None:
            skipped.append(files[0].name)
            continue
        rows.append(r)
        if n in a.show:
            for p in r["parts"]:
                for ku in p["kus"]:
                    print(f"  {n:03d} {p['part']:5s} onsets {ku['onsets_ms']} end {ku['end_ms']} ms")
    if not rows:
        sys.exit("karuta: nothing measured (no NNN.* files with two parts)")
    f = figures(rows)
    print(f"{len(rows)} files measured in {folder}" + (f"; not measured: {', '.join(skipped)}" if skipped else ""))
    print("  (median [10 %, 90 %])")
    print("  mora duration by position in the ku, ms (the last mora excluded):")
    print("    from the start: " + "; ".join(f"{j + 1}: {q(v)}" for j, v in f["by_position_ms"].items() if len(v) >= 5))
    print("    from the end:   " + "; ".join(f"last-{j + 1}: {q(v)}" for j, v in f["from_end_ms"].items() if len(v) >= 5))
    print(f"    every such mora: {q(f['inner_ms'])} ms")
    print(f"  the last mora's share of its ku: {q(f['last_share'], 100)} %; within a part {q(f['last_share_inner'], 100)} %; "
          f"at a part's end {q(f['last_share_part_end'], 100)} %")
    print(f"  the last mora held: within a part {q(f['hold_inner_s'], 1, '{:.2f}')} s; at a part's end "
          f"{q(f['hold_part_end_s'], 1, '{:.2f}')} s")
    print(f"  held sound, last third - first third: level {q(f['held_level_db'], 1, '{:+.1f}')} dB; pitch "
          f"{q(f['held_pitch_st'], 1, '{:+.2f}')} st (range 5-95 % {q(f['held_pitch_range_st'], 1, '{:.2f}')} st)")
    print(f"  ku {q(f['ku_s'], 1, '{:.2f}')} s; 上の句 {q(f['kami_s'], 1, '{:.2f}')} s; 下の句 {q(f['shimo_s'], 1, '{:.2f}')} s; "
          f"pause between them {q(f['pause_s'], 1, '{:.2f}')} s")
    pos = {j + 1: round(float(np.median(v))) for j, v in f["by_position_ms"].items() if len(v) >= 5}
    print(f"  READER_RHYTHM: mora_ms by position {pos}, last share "
          f"{float(np.median(f['last_share_inner'])):.3f} (within a part) / "
          f"{float(np.median(f['last_share_part_end'])):.3f} (part end)")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
