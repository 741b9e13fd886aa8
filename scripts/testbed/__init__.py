"""What the tests and the benchmarks both start and measure with: one copy each.

    testbed.apps          a tool found or one clear error; app processes started in a group
                          of their own and ended (SIGTERM/SIGKILL, or SIGINT as a user's
                          Ctrl-C); a practice log's reads
    testbed.sound         a private PulseAudio daemon with null sinks (the one start-up)
    testbed.xserver       a private X server (Xvfb); XTest presses at realtime priority
    testbed.x_driver      an app's visible window, screenshots
    testbed.relay         a TCP relay that delays, loses (resends) and cuts, as a link would
    testbed.onsets        when sounds begin on a sink's monitor; which onset a segment is
    testbed.board         where the practice window draws a card
    testbed.web           ``karuta ... --web`` and a headless Chromium on a LAN-like origin;
                          waiting on a page; an ear's onset of a page's frame; two pages' skew
    testbed.synth_clips   voice clips made ahead; a 上・下・下 pack with the truth known
    testbed.foreign_pack  packs by other readers (HTS, espeak-ng) with the truth known

How it is found (the one mechanism; no ``sys.path`` edits in any file):

- ``python scripts/bench_x.py``: Python puts the script's folder, ``scripts/``, first on
  ``sys.path``, so ``import testbed`` finds this package.
- pytest: ``pythonpath = ["scripts"]`` in pyproject.toml's ``[tool.pytest.ini_options]``
  (the tests' own helpers in ``tests/`` are found as pytest's rootdir conftest finds them).
- ``reader``, ``audio`` and ``poems`` come from the project installed into ``.venv`` by
  ``scripts/setup`` (``pip install -e``): run the benchmarks with ``.venv/bin/python``.

tests/test_layers.py checks the direction: a benchmark imports no other benchmark, tests and
benchmarks meet only in this package, this package imports neither (nor pytest: a benchmark
runs without it), nothing here is part of a cycle, and no file edits ``sys.path``.  What
could not be had (a tool missing, a server that did not start) raises
``testbed.apps.Unavailable`` saying what to do: a test's fixture turns it into a one-line
failure, a benchmark stops with it.
"""
