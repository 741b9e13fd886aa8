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
