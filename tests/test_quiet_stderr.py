"""``audio.quiet``: the native stderr filter of the ``karuta`` command drops C libraries' noise,
keeps every line of karuta's own in order, and does not hold the process at its end while a
child it started still has descriptor 2 open (``multiprocessing``'s resource tracker, which
every command that plays sound starts, ends only after the command: the exit used to wait
2 s for it)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time

from cli_run import REPO

PROGRAM = textwrap.dedent('''
    import os, subprocess, sys, time
    import audio.quiet as q
    q.ENABLED = True
    assert q.filter_native_stderr()
    # a child that outlives this process's end, holding descriptor 2 (the filter's pipe)
    child = subprocess.Popen(["sleep", "20"], stdout=subprocess.DEVNULL, start_new_session=True)
    print(child.pid, flush=True)
    os.write(2, b"ALSA lib pcm.c:8570:(snd_pcm_recover) underrun occurred\\n")
    os.write(2, b"karuta: first\\n")
    sys.stderr.write("a prompt without a newline ")
    sys.stderr.write(f"karuta: last at {time.monotonic()!r}\\n")
''')


def test_the_filter_keeps_karutas_lines_and_ends_with_the_process(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", PROGRAM], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    child = None
    try:
        child = int(proc.stdout.readline())
        out, err = proc.communicate(timeout=30)
        ended = time.monotonic()
    finally:
        if child is not None:
            subprocess.run(["kill", str(child)], check=False)
        proc.kill()
    lines = err.splitlines()
    assert lines[:1] == ["karuta: first"] and lines[1].startswith(
        "a prompt without a newline karuta: last at "), err
    assert len(lines) == 2 and "ALSA" not in err, err
    last = float(lines[1].rsplit(" ", 1)[1])
    # the drain ends at the filter's own end mark, not when the child lets go of the pipe
    # (before: 2 s, the drain's timeout)
    assert ended - last < 1.5, ended - last
