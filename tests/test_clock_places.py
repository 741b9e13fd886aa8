"""Where the app may read the real time (issue 23, item 3): one ``Clock`` (reader/base/clock.py),
passed in, and one fake (tests/fakes.py's ``FakeClock``).

Every other read of the time — ``time.perf_counter``/``monotonic``/``time`` (and their ``_ns``),
``datetime.now``/``utcnow``/``today``, ``date.today``, ``time.strftime``/``localtime``/... with no
time given — is named below, function by function, with the reason the real thing must be read
there: a device's own clock (PortAudio's stream clock paired with ``perf_counter``, the null and
SDL devices' pace) or a process that runs apart and cannot be handed a clock (the stamping
processes, the audio process).  A read anywhere else fails the first test; a named place that
no longer reads the time fails the second (the list stays as narrow as the code).  Waits that
sleep for real (a timeout around ``time.sleep``) read ``SYSTEM_CLOCK``, never ``time``.
"""
from __future__ import annotations

import ast

from audio_fixtures import REPO
from source_tree import parsed, walk

APP = ("reader", "audio", "poems")

#: (module, function) -> why that function reads the real time itself
CLOCK_PLACES = {
    ("reader/base/clock.py", f"SystemClock.{m}"): "the one clock"
    for m in ("now", "ns", "seconds", "ms")
} | {
    ("reader/input/tty_stamper.py", "main"):
        "the terminal's stamping process: a process of its own, standard library only",
    ("reader/input/x_stamper.py", "main"):
        "the X stamping process: a process of its own, stamps presses as X delivers them",
    ("audio/output/audio_process.py", "narrowest_pair"):
        "the audio process (numpy and sounddevice only): PortAudio's stream clock paired with "
        "perf_counter",
    ("audio/output/audio_process.py", "keep_paired"):
        "the audio process (and the online sound process): when to pair again",
    ("audio/output/audio_process.py", "main.callback"):
        "the audio process: when the device's first buffer was asked for",
    ("audio/output/audio_process.py", "main"):
        "the audio process: when a stream opened again was paired with perf_counter",
    ("audio/output/audio_process.py", "main.clockless"):
        "the audio process: a device that plays faster than real time has no clock",
    ("audio/output/base.py", "Output.now"):
        "a backend's own clock where it has no stream clock: perf_counter",
    ("audio/output/null.py", "NullOutput._run"): "the null device's pace: real time",
    ("audio/output/sdl.py", "PygameOutput._run"):
        "SDL's device: when a chunk was seen to start playing",
    ("audio/output/portaudio.py", "_PortAudio.timing_dump"):
        "PortAudio's stream clock (the wall clock here) paired with perf_counter, for a bench",
    ("audio/output/portaudio.py", "SounddeviceOutput._callback"):
        "when the device's first buffer was asked for",
    ("audio/output/portaudio.py", "SounddeviceOutput._clockless"):
        "a device that plays faster than real time has no clock",
    ("audio/output/portaudio.py", "SounddeviceOutput.now"): "PortAudio's stream clock",
    ("audio/output/portaudio.py", "SounddeviceOutput.perf_to_now"):
        "perf_counter to PortAudio's stream clock",
    ("audio/output/portaudio.py", "SounddeviceOutput._clock_offset"):
        "PortAudio's stream clock paired with perf_counter",
    ("audio/output/audio_process.py", "TimelineFill._place"):
        "the audio process playing a timeline (the online sound): the age of the pairing "
        "that placed a sound (KARUTA_NETSOUND_TRACE, the benchmark's)",
    ("audio/output/portaudio.py", "AudioProcessOutput.now"): "PortAudio's stream clock",
    ("audio/output/portaudio.py", "AudioProcessOutput.perf_to_now"):
        "perf_counter to PortAudio's stream clock",
}

#: reading these is reading the clock
READS = {f"time.{n}" for n in ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns",
                               "time", "time_ns")} | \
    {"datetime.now", "datetime.utcnow", "datetime.today", "date.today"}
#: these read the clock when no time is given (``time.strftime(fmt)``, ``time.localtime()``)
READS_WITHOUT_A_TIME = {"time.strftime": 1, "time.localtime": 0, "time.gmtime": 0,
                        "time.ctime": 0, "time.asctime": 0}
CLOCK_METHODS = {"now", "ns", "seconds", "ms"}


def _dotted(node: ast.AST) -> str:
    """``datetime.now`` of ``datetime.now`` and of ``dt.datetime.now`` (the last two names)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts[:2]))


def clock_reads(rel: str, tree: ast.AST) -> list[tuple[str, str, int]]:
    """``(function, what, line)`` of each read of the time in a module (``function``: the
    dotted name of the function or class it is in, ``<module>`` at the top)."""
    found = []

    def visit(node, where):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, f"{where}.{child.name}" if where else child.name)
                continue
            here = where or "<module>"
            if isinstance(child, ast.Attribute) and _dotted(child) in READS:
                found.append((here, _dotted(child), child.lineno))
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and \
                    READS_WITHOUT_A_TIME.get(_dotted(child.func), -1) == len(child.args):
                found.append((here, _dotted(child.func) + "()", child.lineno))
            if isinstance(child, ast.ImportFrom) and child.module in ("time", "datetime"):
                for a in child.names:
                    if f"{child.module}.{a.name}" in READS or \
                            f"{child.module}.{a.name}" in READS_WITHOUT_A_TIME:
                        found.append((here, f"from {child.module} import {a.name}",
                                      child.lineno))
            visit(child, where)

    visit(tree, "")
    return found


def _app() -> tuple[tuple[str, ast.AST], ...]:
    """The app's modules, parsed once per test process (tests/source_tree.py: shared with the
    other source checks)."""
    return tuple((p.relative_to(REPO).as_posix(), parsed(p))
                 for folder in APP for p in sorted((REPO / folder).rglob("*.py")))


def _stray(sources) -> list[str]:
    return [f"{rel}:{line}: {what} in {fn}" for rel, tree in sources
            for fn, what, line in clock_reads(rel, tree) if (rel, fn) not in CLOCK_PLACES]


def test_the_time_is_read_only_in_the_named_places():
    stray = _stray(_app())
    assert not stray, ("take a reader.base.clock.Clock (SYSTEM_CLOCK by default; a command's "
                       "is reader.cli.command_clock()) instead: " + "; ".join(stray))


def test_each_named_place_still_reads_the_time():
    reading = {(rel, fn) for rel, tree in _app() for fn, _, _ in clock_reads(rel, tree)}
    stale = sorted(set(CLOCK_PLACES) - reading)
    assert not stale, f"no longer reads the time: take it off CLOCK_PLACES: {stale}"


def _clock_like(rel: str, tree: ast.AST) -> list[str]:
    """Classes that are a clock by name (``...Clock``) or by shape (two or more of ``Clock``'s
    methods taking no argument: ``Plan.ms(frame)`` converts, it reads no clock), an object
    made with two or more of them (``SimpleNamespace(now=..., seconds=...)``) and a function
    passed as a ``clock``."""
    out = []
    for n in walk(tree):
        if isinstance(n, ast.Call) and len({k.arg for k in n.keywords} & CLOCK_METHODS) >= 2:
            out.append(f"{rel}:{n.lineno}: {ast.unparse(n.func)}(...)")
        if isinstance(n, ast.keyword) and n.arg == "clock" and isinstance(n.value, ast.Lambda):
            out.append(f"{rel}:{n.value.lineno}: clock=lambda")
        if isinstance(n, ast.ClassDef):
            methods = {f.name for f in n.body if isinstance(f, (ast.FunctionDef,
                                                                ast.AsyncFunctionDef))
                       and len(f.args.args) == 1 and not f.decorator_list}
            if n.name.endswith("Clock") or len(methods & CLOCK_METHODS) >= 2:
                out.append(f"{rel}:{n.lineno}: {n.name}")
    return out


def test_one_clock_in_the_app_and_one_fake_in_the_tests():
    app = [c for rel, tree in _app() if rel != "reader/base/clock.py"
           for c in _clock_like(rel, tree)]
    assert not app, "a clock outside reader/base/clock.py: " + "; ".join(app)
    fakes = [c for p in sorted((REPO / "tests").glob("*.py")) if p.name != "fakes.py"
             for c in _clock_like(f"tests/{p.name}", parsed(p))]
    assert not fakes, "use tests/fakes.py's FakeClock: " + "; ".join(fakes)


def test_the_scan_finds_what_it_forbids():
    """Each kind of read is found in a module that does it (so the tests above cannot pass by
    finding nothing), a named place is let be, and a time given to strftime is no read."""
    src = ast.parse(
        "import time, datetime as dt\n"
        "from datetime import datetime, date\n"
        "from time import monotonic_ns\n"
        "def f(clock=time.perf_counter):\n"
        "    return time.time(), datetime.now(), dt.datetime.utcnow(), date.today()\n"
        "class A:\n"
        "    def g(self):\n"
        "        return time.strftime('%H'), time.strftime('%H', t), time.localtime(t)\n"
        "class FakerClock: pass\n"
        "class ClockSync: pass\n"
        "class Ticker:\n"
        "    def seconds(self): pass\n"
        "    def ns(self): pass\n"
        "c = SimpleNamespace(now=lambda: t0, seconds=lambda: 0.0)\n"
        "g = SettleGate(o, c, clock=lambda: 3.0)\n")
    reads = clock_reads("reader/x.py", src)
    assert sorted((fn, what) for fn, what, _ in reads) == [
        ("<module>", "from time import monotonic_ns"), ("A.g", "time.strftime()"),
        ("f", "date.today"), ("f", "datetime.now"), ("f", "datetime.utcnow"),
        ("f", "time.perf_counter"), ("f", "time.time")]
    assert len(_stray([("reader/x.py", src)])) == 7
    named = ast.parse("import time\nclass SystemClock:\n    def ns(self):\n"
                      "        return time.perf_counter_ns()\n")
    assert clock_reads("reader/base/clock.py", named) == [
        ("SystemClock.ns", "time.perf_counter_ns", 4)]
    assert not _stray([("reader/base/clock.py", named)])
    assert len(_stray([("reader/input/taps.py", named)])) == 1  # a module, not a place, is named
    assert sorted(c.split(": ")[1] for c in _clock_like("tests/x.py", src)) == [
        "FakerClock", "SimpleNamespace(...)", "Ticker", "clock=lambda"]
