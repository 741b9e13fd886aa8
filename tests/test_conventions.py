"""Conventions that grew back once (issue 23) and are kept here, like statefiles' JSON rule
(``tests/test_statefiles.py``; the clock's in ``tests/test_clock_places.py``): one way from a
seed to random numbers, one 上の句 "as heard", one place a game's name is written; one place
each is written.  Each test reads the
source (AST), so a new module cannot forget the rule."""
from __future__ import annotations

import ast

from audio_fixtures import REPO
from source_tree import parsed, walk

APP = ("reader", "audio", "poems")


def _sources(folders=APP):
    for folder in folders:
        for path in sorted((REPO / folder).rglob("*.py")):
            yield path.relative_to(REPO).as_posix(), parsed(path)


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


# ---------------------------------------------------------------------------- games' names
#: where a game's name may be written: its object (reader.match.rules.games) and the rules
RULES_HOME = "reader/match/rules/"


def test_no_games_name_outside_the_rules():
    """A game's name (``"kyogi"``, ``"goshiki"``) is written only in ``reader/match/rules/``:
    everywhere else asks the game's object (``reader.match.rules.games``: ``game.territories``,
    ``game.reading``, ``game.parse_entry`` ...), and the command line lists its ``--rules``
    choices from ``GAMES``, so a third game is one object, not a hunt for string compares."""
    found = _games_names(_sources(("reader", "audio")))  # (poems/ keys its data file by them)
    assert not found, "ask the game's object (reader.match.rules.games): " + "; ".join(found)


def _games_names(sources) -> list[str]:
    from reader.match.rules.games import NAMES

    found = []
    for rel, tree in sources:
        if rel.startswith(RULES_HOME):
            continue
        for node in walk(tree):
            if isinstance(node, ast.Constant) and node.value in NAMES:
                found.append(f"{rel}:{node.lineno}: {node.value!r}")
    return found


def test_the_conventions_catch_what_they_are_for():
    """Each scan above finds what it forbids in a module that does it (so none of them
    passes by finding nothing), and lets the allowed module be."""
    bad = [("reader/drills/x.py", ast.parse(
        "import random, secrets\n"
        "r = random.Random(1)\n"
        "random.shuffle([])\n"
        "s = secrets.randbelow(9)\n"
        "t = str.maketrans('を', 'お')\n"
        "d = {'を': 'お'}\n"
        "k = sound_morae(p.kami_reading)\n"))]
    assert len(_random_uses(bad)) == 4  # Random, shuffle, randbelow, the import of secrets
    assert len(_heard_elsewhere(bad)) == 3
    names = ast.parse("if s.rules == 'kyogi':\n    x = {'goshiki': 1}\n"
                      "y = f'goshiki{n}'\nz = 'kyogi: the 間'\n")
    assert len(_games_names([("reader/cli/x.py", names)])) == 3  # (a sentence may name it)
    assert not _games_names([("reader/match/rules/games.py", names)])
    assert not _random_uses([("reader/base/seeds.py", bad[0][1])])
