"""Benchmark the synthesized voice: cold synthesis of all 100 poems (kami + shimo) into an empty
temporary cache with the prefetch pool, then a warm load of every clip from that cache.

    python scripts/bench_synth.py [--workers 2] [--speed 1.0] [--hold-ms 0]
"""
from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--speed", type=float, default=1.0)
    ap.add_argument("--hold-ms", type=int, default=0)
    args = ap.parse_args()

    from audio.synth import SynthVoice
    from audio.voice import SpeechItem

    items = [SpeechItem(str(n), part, speed=args.speed, hold_ms=args.hold_ms if part == "shimo" else 0)
             for n in range(1, 101) for part in ("kami", "shimo")]
    with tempfile.TemporaryDirectory(prefix="karuta-bench-") as cache:
        voice = SynthVoice(cache_dir=cache, workers=args.workers)
        voice.check()
        t = time.perf_counter()
        audio_frames = sum(voice.layout(i).frames for i in items)
        t_layout = time.perf_counter() - t
        audio_s = audio_frames / voice.sample_rate

        t = time.perf_counter()
        futures = voice.prefetch(items)
        first = futures[0].result()
        t_first = time.perf_counter() - t
        for f in futures:
            f.result()
        wall = time.perf_counter() - t
        voice.close()

        size = sum(os.path.getsize(os.path.join(cache, f)) for f in os.listdir(cache))
        t = time.perf_counter()
        warm_frames = sum(len(voice.samples(i)) for i in items)
        warm = time.perf_counter() - t
        assert warm_frames == audio_frames and first.is_file()

    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"clips               {len(items)} (100 poems, kami + shimo, speed {args.speed}, "
          f"shimo hold {args.hold_ms} ms)")
    print(f"layout (all)        {t_layout:.3f} s")
    print(f"audio               {audio_s:.1f} s")
    print(f"cold synthesis      {wall:.1f} s wall with {args.workers} workers "
          f"(first clip ready after {t_first:.2f} s)")
    print(f"ratio wall/audio    {wall / audio_s:.4f}")
    print(f"cache size          {size / 1e6:.1f} MB")
    print(f"warm cache load     {warm:.2f} s ({warm / len(items) * 1000:.1f} ms a clip)")
    cru = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = cru.ru_utime + cru.ru_stime
    print(f"CPU in the workers  {cpu:.1f} s = {cpu / audio_s:.4f} CPU-s per audio second "
          f"(wall on {args.workers} idle cores would be ~{cpu / args.workers / audio_s:.4f}x); "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"peak memory         {peak_kb / 1024:.0f} MB (python), {child_kb / 1024:.0f} MB (largest worker process)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
