#!/usr/bin/env python3
"""Benchmark: what a listener hears in a whole 100-card kyogi reading by the synthesized voice.

    nice python scripts/bench_acoustic.py [--seed 1] [--cards N] [--classes] [--calibrate]
                                          [--wav reading.wav --plan plan.json]

Renders the reading with `karuta render --out X.wav --plan-out X.json --seed N` (this
environment's karuta, the voice cache of $KARUTA_CACHE_DIR or the per-user one), then measures
the file against its plan, segment by segment (audio.acoustics.reading_figures), and prints
every figure of issue 11's targets with the target beside it:

  余韻: loop similarity (normalised autocorrelation at the best 15-60 ms lag), 20-60 Hz level
  ripple, loudness against its 下の句; 上の句 loudness spread; true peak and samples >= 0.99;
  double endings at ku ends; vowel-onset interval spread; heard 間 against the set 間; the
  plan's decisive onset against the acoustic onset (``sharp_rise``) and against an independent
  one (the first log-mel flux rise >= 6 dB, ``mel_flux_onset``: issue 21), with the cards that
  show no rise; and the melody of issue 21, measured as issue 21 measured a human reader
  (WORLD Harvest, 10 ms): how each ku opens (the first 150 ms of voice against the reciting
  tone 0.45-1.2 s on: depth, how many open low, how long low, the glide up) and the pitch after
  the glide (its range, the share of voiced frames on the reciting tone); and the timing of
  issue 21's human reader (``audio.acoustics.READER_TIMING``): each ku's pace (first to last
  vowel onset over the morae between), its length and the breaths between ku as heard, and the
  jo-ka's parts and pauses as heard, each beside the reader's figure; and the rhythm inside the
  ku of issue 32's reader (``audio.acoustics.READER_RHYTHM``, measured by
  ``scripts/measure_reader.py``): each mora's length by its position in the ku, the last mora's
  hold and its share of the ku, the held sounds' level and pitch (last third against first)
  and their per-period flutter (20-60 Hz, the worst named), each beside the reader's; then the
  first ``--ku`` ku's mora onsets (vowel onsets as heard) against the reader's pattern.

--classes prints, per consonant class, where its morae are heard by both onset measures against
the layout; --calibrate also proposes ``chant.HEARD_MS`` from them (``calibration``).

With --wav/--plan an existing rendering is measured instead (no render).  --cards N reads only
N cards (for iterating; the figures of issue 11 are for the whole reading).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def class_offsets(wav_path, plan: dict, voice) -> dict:
    """Per consonant: where the first sharp rise is heard, against the design's consonant onset
    (the beat minus ``chant.LEAD_MS``) and against the layout's mora onset, in ms; where the
    independent measure (``mel_flux_onset``) hears it against the layout's onset; and the
    vowel onset against the beat.  Lists per class, for every mora after the first of every
    numbered poem's clip (how ``chant.HEARD_MS`` is measured: ``calibration``)."""
    import numpy as np
    import soundfile as sf

    from audio.acoustics import mel_flux_onset, sharp_rise, vowel_onset
    from audio.voice import SpeechItem

    rate = int(plan["sample_rate"])
    ms = rate // 1000
    yoin = int(plan.get("settings", {}).get("yoin_ms", 0))
    speed = float(plan.get("settings", {}).get("speed", 1.0))
    out: dict = {}
    with sf.SoundFile(str(wav_path)) as f:
        for s in plan["segments"]:
            if s["kind"] not in ("kami", "shimo") or not str(s["poem"]).isdigit():
                continue
            f.seek(s["start_frame"])
            x = f.read(s["end_frame"] - s["start_frame"], dtype="float64", always_2d=True)[:, 0]
            item = SpeechItem(str(s["poem"]), s["kind"], speed=speed, hold_ms=yoin if s["kind"] == "shimo" else 0)
            des = voice._time(item).design
            lay = voice.layout(item)
            for n, (m, mp) in enumerate(zip(lay.morae, des.morae)):
                if n == 0 or not mp.cons:
                    continue
                c0 = mp.onset * 240
                rise = sharp_rise(x, rate, c0)
                row = out.setdefault(mp.cons, {"vs_consonant": [], "vs_layout": [], "flux_vs_layout": [],
                                               "vowel_vs_beat": [], "after_breath": []})
                row["vs_consonant"].append((rise - c0) / ms)
                row["vs_layout"].append((sharp_rise(x, rate, m.start) - m.start) / ms)
                # the independent measure, as the decisive onsets are measured with it
                fx = mel_flux_onset(x, rate, m.start)
                row["flux_vs_layout"].append(np.nan if fx is None else (fx - m.start) / ms)
                row["vowel_vs_beat"].append((vowel_onset(x, rate, mp.beat * 240) - mp.beat * 240) / ms)
                row["after_breath"].append(des.morae[n - 1].ku_end)
    return out


def calibration(offsets: dict, speed: float = 1.0, min_gain_ms: float = 3.0) -> dict:
    """``chant.HEARD_MS`` re-measured from ``class_offsets`` (morae within a ku: after a breath
    the layout takes the consonant's whole lead anyway).  Per class with at least 10 such
    morae: the shift of the layout onset that makes the worse of the two measures' 90th
    percentile |error| smallest (the sharp rise and the log-mel flux rise against the layout;
    a shift moves every error by itself, except that the flux measure looks only 10 ms before
    the onset: a rise left further before it is passed over for the next one, taken to be
    the one the sharp rise finds; a mora with no rise is a miss); kept at 0 unless it gains
    ``min_gain_ms``.  Offsets at other speeds are scaled back
    to speed 1.0 (as the design scales leads).  Returns {class: (current, proposed, n, p90
    before, p90 after)} in ms."""
    import numpy as np

    from audio.chant import HEARD_MS, LEAD_MS

    shrink = 1.0 / max(1.0, speed)

    def cost(sr, fx, d):
        f = np.where(np.isfinite(fx), np.abs(np.where(fx - d >= -10.0, fx, sr) - d), np.inf)
        return max(float(np.percentile(np.abs(sr - d), 90)), float(np.percentile(f, 90, method="higher")))

    out = {}
    for c, row in offsets.items():
        inner = ~np.asarray(row["after_breath"], dtype=bool)
        sr = np.asarray(row["vs_layout"], dtype=float)[inner]
        fx = np.asarray(row["flux_vs_layout"], dtype=float)[inner]
        if len(sr) < 10:
            continue
        shifts = np.arange(-60, 61)
        costs = np.array([cost(sr, fx, d) for d in shifts])
        best = int(shifts[np.lexsort((np.abs(shifts), costs))[0]])
        if not costs[shifts == best][0] <= costs[shifts == 0][0] - min_gain_ms:
            best = 0
        cur = HEARD_MS.get(c, LEAD_MS.get(c, 50))
        out[c] = (cur, int(round(cur - best / shrink)), int(len(sr)), float(costs[shifts == 0][0]),
                  float(costs[shifts == best][0]))
    return out


# ---- an outside checker's flutter measure (issue 32 part 1): nothing of audio/ used ---------

def _decode_any(path: Path):
    """Mono float64 samples and rate of a rendered file (wav/flac/ogg by soundfile, mp3 too
    where libsndfile reads it, else ffmpeg at 48 kHz)."""
    import numpy as np
    import soundfile as sf

    try:
        x, rate = sf.read(str(path), dtype="float64", always_2d=True)
        return x.mean(axis=1), rate
    except Exception:
        raw = subprocess.run(["ffmpeg", "-v", "quiet", "-i", str(path), "-f", "f32le", "-ac", "1",
                              "-ar", "48000", "-"], capture_output=True, check=True).stdout
        return np.frombuffer(raw, np.float32).astype(np.float64), 48000


def ac_pitch(x, rate: int, hop_s: float = 0.005, fmin: float = 60.0, fmax: float = 500.0):
    """A plain autocorrelation pitch tracker (16 kHz, 40 ms Hann windows every ``hop_s``): per
    frame the f0 in Hz (NaN where the normalised autocorrelation peak is under 0.6 or the
    frame is 45 dB under the loudest), its level in dB and 13 real cepstra (the spectrum's
    shape).  The lag is the shortest whose peak is within 10 % of the best (no octave-down
    errors), refined by a parabola."""
    import numpy as np
    from scipy.signal import resample_poly

    r = 16000
    y0 = resample_poly(x, r, rate) if rate != r else np.asarray(x, np.float64)
    hop, win, nfft = int(hop_s * r), int(0.04 * r), 2048
    n = len(y0) // hop
    y = np.concatenate([y0, np.zeros(win)])
    fr = y[np.arange(win)[None, :] + hop * np.arange(n)[:, None]]
    fr = fr - fr.mean(axis=1, keepdims=True)
    w = np.hanning(win)
    spec = np.fft.rfft(fr * w, nfft, axis=1)
    ac = np.fft.irfft(np.abs(spec) ** 2, nfft, axis=1)[:, :win]
    wac = np.fft.irfft(np.abs(np.fft.rfft(w, nfft)) ** 2, nfft)[:win]
    lo, hi = int(r / fmax), int(r / fmin)
    rr = ac[:, lo:hi] / (ac[:, :1] + 1e-20) / (wac[lo:hi] / wac[0])[None, :]
    best = rr.max(axis=1)
    peak = (rr[:, 1:-1] >= rr[:, :-2]) & (rr[:, 1:-1] >= rr[:, 2:]) & (rr[:, 1:-1] >= 0.9 * best[:, None])
    k = np.clip(np.where(peak.any(axis=1), peak.argmax(axis=1) + 1, rr.argmax(axis=1)), 1, rr.shape[1] - 2)
    i = np.arange(n)
    a, b, c = rr[i, k - 1], rr[i, k], rr[i, k + 1]
    f0 = r / (lo + k + np.clip(0.5 * (a - c) / (a - 2 * b + c - 1e-12), -1, 1))
    db = 10 * np.log10((fr ** 2).mean(axis=1) + 1e-20)
    f0[(best < 0.6) | (db < db.max() - 45)] = np.nan
    cep = np.fft.irfft(np.log(np.abs(spec[:, :800]) ** 2 + 1e-10), axis=1)[:, 1:14]
    return f0, db, cep


def held_last_sounds(f0, db, cep, hop_s: float = 0.005) -> list:
    """(start, end) frames of each ku's held last sound, found by its pitch: before every pause
    (frames 40 dB under the loud ones for 100 ms or more), from 50 ms before the last voiced
    frame back while the pitch stays within 1 st of that stretch's and the cepstra near its
    mean, then on to where the level falls 10 dB under the held sound's median (its fade is
    not the held sound: the stretch ends where the level falls 6 dB under its median; a third
    frame, where it is 30 dB under: the held sound with its release)."""
    import numpy as np
    from scipy.ndimage import median_filter

    st = 12 * np.log2(f0 / 100.0)
    on = np.concatenate([[False], db > np.percentile(db, 95) - 40, [False]])
    d = np.flatnonzero(np.diff(on.astype(np.int8)))
    runs = list(zip(d[0::2].tolist(), d[1::2].tolist()))
    gap = int(round(0.1 / hop_s))
    out = []
    for k, (s, e) in enumerate(runs):
        if (runs[k + 1][0] if k + 1 < len(runs) else len(db)) - e < gap:
            continue
        vv = np.flatnonzero(np.isfinite(st[s:e]))
        if len(vv) < 20:
            continue
        e2 = s + int(vv[-1]) + 1 - 10
        tail = slice(max(s, e2 - 30), e2)
        med, mean = np.nanmedian(st[tail]), np.nanmean(cep[tail], axis=0)
        dist = median_filter(np.sqrt(((cep - mean) ** 2).sum(axis=1)), 7)
        thr = max(0.6, 2.5 * float(np.median(dist[tail])))
        j = e2
        while j > s and np.isfinite(st[j - 1]) and abs(st[j - 1] - med) < 1.0 and dist[j - 1] < thr:
            j -= 1
        if (e2 - j) * hop_s < 0.3:
            continue
        lvl = np.median(db[j:e2])
        e3 = e2
        while e3 < e and np.isfinite(st[e3]) and abs(st[e3] - med) < 1.0 and db[e3] > lvl - 6:
            e3 += 1
        e4 = e3  # and with its release: on to 30 dB under it
        while e4 < e and db[e4] > lvl - 30:
            e4 += 1
        out.append((j, e3, e4))
    return out


def period_flutter(x, rate: int, f0, t0: float, t1: float, hop_s: float = 0.005) -> dict | None:
    """The per-period loudness of ``x`` between ``t0`` and ``t1`` s: period marks from the
    tracked pitch (its phase integrated: one mark a period), the RMS of each period in dB,
    put on a 1 kHz grid, band-passed 20-60 Hz (4th-order Butterworth, both ways), 50 ms left
    off each edge (a period's level no lower than 40 dB under the loudest, so a wav's digital
    silence after a release reads as an mp3's floor does): ``p2p_db`` its peak-to-peak (max - min), ``sine_db`` 2√2 × its RMS (what a
    sine of that power swings: ``audio.acoustics``' way of saying it)."""
    import numpy as np
    from scipy.signal import butter, sosfiltfilt

    from scipy.ndimage import median_filter

    ts = np.arange(len(f0)) * hop_s + 0.02  # frame centres (40 ms windows)
    i0, i1 = max(0, int((t0 - 0.02) / hop_s)), min(len(f0), int((t1 - 0.02) / hop_s) + 1)
    seg = np.asarray(f0[i0:i1], np.float64)
    ok = np.isfinite(seg)
    if ok.sum() < 10:
        return None
    seg = np.interp(np.arange(len(seg)), np.flatnonzero(ok), seg[ok])  # unvoiced frames bridged
    med = median_filter(seg, 9, mode="nearest")  # a lone octave error is no period
    seg = np.where(np.abs(12 * np.log2(seg / med)) > 1.0, med, seg)
    t = np.arange(t0, t1, 1.0 / rate)
    ph = np.cumsum(np.interp(t, ts[i0:i1], seg)) / rate
    marks = t[np.flatnonzero(np.diff(np.floor(ph)) > 0) + 1]
    if len(marks) < 40:
        return None
    idx = np.round(marks * rate).astype(int)
    p = np.concatenate([[0.0], np.cumsum(np.asarray(x, np.float64) ** 2)])
    e = 10 * np.log10((p[idx[1:]] - p[idx[:-1]]) / np.diff(idx) + 1e-20)
    e = np.maximum(e, e.max() - 40)  # a period of digital silence (a wav's) no deeper than a codec's floor
    tc = 0.5 * (marks[1:] + marks[:-1])
    g = np.arange(tc[0], tc[-1], 0.001)
    if len(g) < 200:
        return None
    sos = butter(4, [20, 60], btype="bandpass", fs=1000, output="sos")
    b = sosfiltfilt(sos, np.interp(g, tc, e) - e.mean())[50:-50]
    return {"p2p_db": float(b.max() - b.min()), "sine_db": float(2 * np.sqrt(2) * np.sqrt(np.mean(b * b))),
            "f0": float(np.median(seg))}


def independent_flutter(path: Path, plan: dict | None = None) -> list:
    """Every held last sound of a rendered file and its flutter: [(t0 s, t1 s, where, figures)],
    ``where`` the plan's segment it lies in (e.g. "joka shimo 2") when a plan is given;
    figures["release_p2p_db"]: the same measure run on to 30 dB under the held sound (what a
    checker whose window takes in the voice's stop reads)."""
    x, rate = _decode_any(path)
    f0, db, cep = ac_pitch(x, rate)
    rows = []
    for j, e, e4 in held_last_sounds(f0, db, cep):
        t0, t1 = j * 0.005 + 0.02, e * 0.005 + 0.02
        fig = period_flutter(x, rate, f0, t0, t1)
        if fig is None:
            continue
        rel = period_flutter(x, rate, f0, t0, e4 * 0.005 + 0.02)
        fig["release_p2p_db"] = rel["p2p_db"] if rel else float("nan")
        where = ""
        if plan:
            seen: dict = {}
            for seg in plan["segments"]:
                key = (seg["poem"], seg["kind"])
                seen[key] = seen.get(key, 0) + 1
                if seg["start_ms"] <= t1 * 1000 <= seg["end_ms"] + 50 and seg["kind"] in ("kami", "shimo"):
                    where = f"{seg['poem']} {seg['kind']}" + (f" {seen[key]}" if seen[key] > 1 else "")
        rows.append((t0, t1, where, fig))
    return rows


def print_independent(label: str, rows: list) -> None:
    import numpy as np

    if not rows:
        print(f"    {label}: no held sound found")
        return
    pp = np.array([r[3]["p2p_db"] for r in rows])
    worst = max(rows, key=lambda r: r[3]["p2p_db"])
    over = [r for r in rows if r[3]["p2p_db"] > 1.5]
    print(f"    {label}: {len(rows)} held sounds, 20-60 Hz peak-to-peak median {np.median(pp):.2f}, "
          f"90 % {np.percentile(pp, 90):.2f}, worst {worst[3]['p2p_db']:.2f} dB ({worst[2] or 'at'} "
          f"{worst[0]:.2f}-{worst[1]:.2f} s); over 1.5 dB: {len(over)}"
          + (" (" + ", ".join(f"{r[2]} {r[3]['p2p_db']:.2f}" for r in over[:6]) + ")" if over else ""))
    rel = np.array([r[3]["release_p2p_db"] for r in rows])
    print(f"      with the release (on to 30 dB under the held sound): median {np.nanmedian(rel):.2f}, "
          f"worst {np.nanmax(rel):.2f} dB")
    joka = [r for r in rows if r[2].startswith("joka")]
    if joka:
        print("      jo-ka: " + "; ".join(f"{r[2]} {r[0]:.2f}-{r[1]:.2f} s {r[3]['p2p_db']:.2f} dB "
                                          f"(with release {r[3]['release_p2p_db']:.1f})" for r in joka))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--wav")
    ap.add_argument("--plan")
    ap.add_argument("--cards", type=int, help="read only this many cards (default: all 100)")
    ap.add_argument("--ku", type=int, default=8,
                    help="print this many ku's mora onsets against the human reader's pattern (default 8)")
    ap.add_argument("--classes", action="store_true",
                    help="also print, per consonant, where its mora is heard (sharp rise) against "
                         "the design and the layout, and its vowel onset against the beat")
    ap.add_argument("--calibrate", action="store_true",
                    help="also print chant.HEARD_MS re-measured per consonant class (implies --classes)")
    ap.add_argument("--formats", default="",
                    help="also render the reading as these (e.g. mp3,ogg) and measure their flutter independently")
    ap.add_argument("--goshiki", action="store_true",
                    help="also render a goshiki reading with its announcement (--joka) and measure its flutter")
    a = ap.parse_args()
    import numpy as np

    from audio.acoustics import reading_figures, summary_lines

    tmp = None
    if a.wav and a.plan:
        wav, plan_path = Path(a.wav), Path(a.plan)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="karuta-acoustic-")
        wav, plan_path = Path(tmp.name) / "reading.wav", Path(tmp.name) / "plan.json"
        cmd = [sys.executable, "-m", "reader.cli", "render", "--out", str(wav), "--plan-out", str(plan_path),
               "--seed", str(a.seed)] + (["--cards", str(a.cards)] if a.cards else [])
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        cards = f" --cards {a.cards}" if a.cards else ""
        print(f"$ karuta render --out reading.wav --plan-out plan.json --seed {a.seed}{cards}: "
              f"{time.perf_counter() - t:.1f} s wall, {ru.ru_utime + ru.ru_stime:.1f} s CPU "
              f"(load average {os.getloadavg()[0]:.1f})")
    plan = json.loads(plan_path.read_text(encoding="utf-8"))
    t = time.perf_counter()
    from audio.synth import SynthVoice

    voice = SynthVoice(workers=0)
    fig = reading_figures(wav, plan, voice)
    n_cards = sum(1 for s in plan["segments"] if s["kind"] == "kami" and str(s["poem"]).isdigit())
    print(f"{n_cards}-card kyogi reading, seed {plan.get('seed')}, {plan['duration_ms'] / 1000:.1f} s of audio "
          f"(analysed in {time.perf_counter() - t:.0f} s)")
    for line in summary_lines(fig):
        print("  " + line)
    if a.ku:
        from audio.acoustics import READER_RHYTHM

        pos = READER_RHYTHM["mora_ms"]
        print(f"  mora onsets (vowel onsets as heard, ms from the ku's first) | the reader's pattern "
              f"(median mora by position) | the last mora's share (the reader's):")
        for (where, ons, end), last in list(zip(fig["ku_onsets"], fig["ku_last"]))[:a.ku]:
            n = len(ons)
            ref = [0] + list(np.cumsum([pos[min(j, len(pos) - 1)] for j in range(n - 1)]))
            share = (end - ons[-1]) / end
            rs = None if last["part_end"] else READER_RHYTHM["last_share"].get(n)
            print(f"    {where:10s} {'/'.join(f'{v:.0f}' for v in ons)} | {'/'.join(str(int(v)) for v in ref)} | "
                  f"{100 * share:.0f} %" + (f" ({100 * rs:.0f} %)" if rs else " (a part's end)" if last["part_end"] else ""))
    # issue 32: the held sounds' flutter as an outside checker measures it, on the file alone
    print("  held sounds' flutter, measured independently (own autocorrelation pitch, period marks, "
          "per-period RMS dB, 20-60 Hz, peak-to-peak; goal <= 1.5 dB):")
    print_independent(wav.suffix.lstrip("."), independent_flutter(wav, plan))
    extra = [(f, ["--seed", str(a.seed)] + (["--cards", str(a.cards)] if a.cards else []))
             for f in a.formats.split(",") if f]
    if a.goshiki:
        extra.append(("wav", ["--rules", "goshiki", "--color", "blue", "--joka", "--seed", str(a.seed)]
                      + (["--cards", str(a.cards)] if a.cards else [])))
    for fmt, opts in extra:
        with tempfile.TemporaryDirectory(prefix="karuta-acoustic-") as d:
            out, plan_out = Path(d) / f"reading.{fmt}", Path(d) / "plan.json"
            subprocess.run([sys.executable, "-m", "reader.cli", "render", "--out", str(out), "--plan-out",
                            str(plan_out)] + opts, check=True, capture_output=True)
            label = f"{fmt} ({' '.join(opts)})"
            print_independent(label, independent_flutter(out, json.loads(plan_out.read_text(encoding="utf-8"))))
    if a.classes or a.calibrate:
        offsets = class_offsets(wav, plan, voice)
        print("  per consonant (ms; median [25 %, 75 %]): sharp rise - consonant onset | - layout onset | "
              "log-mel flux rise - layout onset | vowel onset - beat")
        print("  (a class's morae within a ku, then as c/b those right after a breath)")
        for c, row in sorted(offsets.items(), key=lambda kv: -len(kv[1]["vs_layout"])):
            after = np.asarray(row["after_breath"], dtype=bool)
            for name, sel in ((c, ~after), (c + "/b", after)):
                if not sel.any():
                    continue
                q = {k: np.nanpercentile(np.asarray(v, dtype=float)[sel], [50, 25, 75])
                     for k, v in row.items() if k != "after_breath"}
                print(f"    {name:5s} n={int(sel.sum()):4d}  "
                      + " | ".join(f"{q[k][0]:+6.1f} [{q[k][1]:+5.1f}, {q[k][2]:+5.1f}]"
                                   for k in ("vs_consonant", "vs_layout", "flux_vs_layout", "vowel_vs_beat")))
    if a.calibrate:
        cal = calibration(offsets, float(plan.get("settings", {}).get("speed", 1.0)))
        print("  HEARD_MS re-measured (morae within a ku; current -> proposed ms, n, the worse measure's "
              "|error| 90 % now -> then):")
        for c, (cur, new, n, before, after) in sorted(cal.items()):
            print(f"    {c:3s} {cur:4d} -> {new:4d}   n={n:4d}  {before:5.1f} -> {after:5.1f} ms")
        from audio.chant import HEARD_MS, LEAD_MS

        proposed = dict(HEARD_MS, **{c: new for c, (_cur, new, *_r) in cal.items()})
        print("  HEARD_MS = dict(LEAD_MS, " + ", ".join(f"{c}={v}" for c, v in proposed.items() if v != LEAD_MS.get(c))
              + ")")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
