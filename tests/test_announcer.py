"""`karuta match keep --read`: the app reads the poems while the referee keeps score."""
import json
import os
import subprocess
import sys

import numpy as np

from audio.voice import ToneVoice
from audio_fixtures import ASOUNDRC, read_wav_capture
from cli_run import run_karuta
from reader.reading.engine import build_plan
from reader.reading.settings import preset


def test_keep_with_read_reads_the_seeded_order_and_logs_it(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    cap = home / "capture.wav"
    (home / ".asoundrc").write_text(ASOUNDRC.format(rate=48000, wav=cap))
    log = tmp_path / "m.jsonl"
    # three reads entered without a poem number: "-" nobody took it; the announced poem is logged
    res = run_karuta("match", "keep", "--rules", "kyogi", "--seed", "4", "--log", str(log),
                     "--read", "--voice", "tone", input="-\n-\n-\nq\n", home=home)
    assert res.returncode == 0, res.stderr
    reads = [json.loads(line)["read"] for line in log.read_text().splitlines()[1:]]
    expected = build_plan(preset("kyogi"), 4, ToneVoice()).order[:3]
    assert reads == list(expected)
    heard = read_wav_capture(cap)
    assert np.abs(heard).max() > 1000, "nothing was read aloud"
