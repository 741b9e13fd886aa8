"""Conventions that grew back once (issue 23) and are kept here, like statefiles' JSON rule
(``tests/test_statefiles.py``): one clock shape and one fake, one way from a seed to random
numbers, one 上の句 "as heard", one place each is written.  Each test reads the source (AST),
so a new module cannot forget the rule."""
from __future__ import annotations

import ast
from pathlib import Path

from audio_fixtures import REPO
from source_tree import parsed, walk

APP = ("reader", "audio", "poems")


def _sources(folders=APP):
    for folder in folders:
        for path in sorted((REPO / folder).rglob("*.py")):
            yield path.relative_to(REPO).as_posix(), parsed(path)


def _attr_uses(tree: ast.AST):
    """``(name, attr), line`` of every ``name.attr`` (called or passed: a default argument
    ``clock=time.perf_counter`` reads the clock as much as a call does)."""
    for node in walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            yield (node.value.id, node.attr), node.lineno


def _imported_names(tree: ast.AST, module: str) -> set[str]:
    """Names imported ``from module import ...`` (``from time import perf_counter``)."""
    return {a.asname or a.name for node in walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == module for a in node.names}


# ---------------------------------------------------------------------------- clocks
#: modules that read the monotonic clock themselves, and why
CLOCK_READERS = {
    "reader/base/clock.py": "the one clock",
    "reader/input/taps.py": "input events stamped the moment they are taken in",
    "reader/input/tty_stamper.py": "the terminal's stamping process (standard library only)",
    "reader/input/x_stamper.py": "the X stamping process",
    "reader/ui/keys.py": "keys stamped the moment they are read",
    "audio/record.py": "the microphone's timeline: how long to wait for input still in flight",
    "audio/output/": "the device timeline: DAC times paired with perf_counter in the callback "
                     "and the audio process (audio/ imports reader.base only)",
}
CLOCK_CALLS = {("time", n) for n in ("perf_counter", "perf_counter_ns", "monotonic",
                                     "monotonic_ns")}


def _allowed(rel: str, table: dict) -> bool:
    return any(rel == k or (k.endswith("/") and rel.startswith(k)) for k in table)


def _clock_reads(sources) -> list[str]:
    found = []
    for rel, tree in sources:
        if _allowed(rel, CLOCK_READERS):
            continue
        for use, line in _attr_uses(tree):
            if use in CLOCK_CALLS:
                found.append(f"{rel}:{line}: {'.'.join(use)}")
        for name in _imported_names(tree, "time") & {n for _, n in CLOCK_CALLS}:
            found.append(f"{rel}: from time import {name}")
    return found


def test_only_the_clock_and_the_input_floor_read_the_monotonic_clock():
    found = _clock_reads(_sources())
    assert not found, ("take a reader.base.clock.Clock (SYSTEM_CLOCK by default) instead: "
                       + "; ".join(found))


def _clock_classes(sources) -> list[str]:
    return [f"{rel}:{n.lineno}: {n.name}" for rel, tree in sources for n in walk(tree)
            if isinstance(n, ast.ClassDef) and n.name.endswith("Clock")
            and rel != "reader/base/clock.py"]


def test_one_clock_protocol_and_one_fake():
    """Only reader/base/clock.py defines a clock class in the app, and only tests/fakes.py a
    fake one in the tests."""
    app = _clock_classes(_sources())
    assert not app, "a clock class outside reader/base/clock.py: " + "; ".join(app)
    tests = []
    for path in sorted((REPO / "tests").glob("*.py")):
        if path.name == "fakes.py":
            continue
        tree = parsed(path)
        tests += [f"tests/{path.name}:{n.lineno}: {n.name}" for n in walk(tree)
                  if isinstance(n, ast.ClassDef) and "Clock" in n.name]
    assert not tests, "use tests/fakes.py's FakeClock: " + "; ".join(tests)


# ---------------------------------------------------------------------------- seeds
def test_every_random_stream_comes_from_base_seeds():
    """``random.Random(...)``, the module's global generator (``random.shuffle`` ...) and
    ``secrets`` only in reader/base/seeds.py: a seed picked or turned into numbers anywhere
    else would not be the one the user can give back with --seed."""
    found = _random_uses(_sources())
    assert not found, "use reader.base.seeds (pick_seed, rng): " + "; ".join(found)


def _random_uses(sources) -> list[str]:
    found = []
    for rel, tree in sources:
        if rel == "reader/base/seeds.py":
            continue
        for node in walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    isinstance(node.func.value, ast.Name) and \
                    node.func.value.id in ("random", "secrets"):
                found.append(f"{rel}:{node.lineno}: {node.func.value.id}.{node.func.attr}()")
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) \
                    else [node.module or ""]
                if "secrets" in names:
                    found.append(f"{rel}:{node.lineno}: imports secrets")
                if isinstance(node, ast.ImportFrom) and node.module == "random":
                    found.append(f"{rel}:{node.lineno}: from random import ...")
    return found


# ---------------------------------------------------------------------------- 上の句 as heard
def test_no_other_kami_as_heard():
    """``poems.kimariji`` is the one place a 上の句 becomes its sounds: nobody else folds kana
    (を→お ...) or turns a poem's ``kami_reading`` into morae (use ``kami_heard``)."""
    found = _heard_elsewhere(_sources())
    assert not found, "fold sounds through poems.kimariji: " + "; ".join(found)


def _heard_elsewhere(sources) -> list[str]:
    found = []
    for rel, tree in sources:
        if rel == "poems/kimariji.py":
            continue
        for node in walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
                name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
                if name not in ("maketrans", "sound_morae"):
                    continue
                text = ast.unparse(node)
                if name == "maketrans" and "を" in text:
                    found.append(f"{rel}:{node.lineno}: a kana folding table")
                if name == "sound_morae" and "kami_reading" in text:
                    found.append(f"{rel}:{node.lineno}: {text} (use kami_heard)")
            if isinstance(node, ast.Dict) and any(
                    isinstance(k, ast.Constant) and k.value == "を" and
                    isinstance(v, ast.Constant) and v.value == "お"
                    for k, v in zip(node.keys, node.values)):
                found.append(f"{rel}:{node.lineno}: a kana folding table")
    return found


def test_the_conventions_catch_what_they_are_for():
    """Each scan above finds what it forbids in a module that does it (so none of them
    passes by finding nothing), and lets the allowed module be."""
    bad = [("reader/drills/x.py", ast.parse(
        "import random, secrets, time\n"
        "from time import monotonic\n"
        "class WallClock: pass\n"
        "def f(clock=time.perf_counter): pass\n"
        "r = random.Random(1)\n"
        "random.shuffle([])\n"
        "s = secrets.randbelow(9)\n"
        "t = str.maketrans('を', 'お')\n"
        "d = {'を': 'お'}\n"
        "k = sound_morae(p.kami_reading)\n"))]
    assert len(_clock_reads(bad)) == 2 and len(_clock_classes(bad)) == 1
    assert len(_random_uses(bad)) == 4  # Random, shuffle, randbelow, the import of secrets
    assert len(_heard_elsewhere(bad)) == 3
    assert not _clock_reads([("audio/output/x.py", bad[0][1])])
    assert not _random_uses([("reader/base/seeds.py", bad[0][1])])
