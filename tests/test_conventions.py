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


# ---------------------------------------------------------------------------- the practice seam
def test_a_practice_front_end_never_writes_into_the_session_nor_subclasses_the_board():
    """Issue 35: the practice session's state is written by the session alone (its own
    methods: ``notice``, ``shown``, ``closed_read`` ...), never by a front end, an online side
    or a CLI (``x.session.status = ...``, ``s._picked = []``, ``s._judged(...)``); and the
    board window is never subclassed: a new kind of match is a table
    (``reader.practice.table``), not a window that overrides the board's methods."""
    practice = [(rel, tree) for rel, tree in _sources(("reader",))
                if (rel.startswith("reader/practice/") and rel != "reader/practice/session.py")
                or rel == "reader/cli/practice.py"]
    found = _session_writes(practice)
    assert not found, "write through the session's own methods: " + "; ".join(found)
    found = _board_subclasses(_sources())
    assert not found, "give the window a table instead: " + "; ".join(found)


def _session_writes(sources) -> list[str]:
    """Attribute (or item) assignments into a practice session, and its private attributes
    read or called: through ``<x>.session`` or a name bound to it (``s = w.session``,
    ``s = PracticeSession(...)``, a parameter named ``session``)."""
    found = []
    for rel, tree in sources:
        names = {a.arg for node in walk(tree)
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                 for a in node.args.args if a.arg == "session"}
        for node in walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                    isinstance(node.targets[0], ast.Name) and _is_session(node.value, set()):
                names.add(node.targets[0].id)
        for node in walk(tree):
            targets = []
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for part in ast.walk(t):
                    if isinstance(part, (ast.Attribute, ast.Subscript)) and \
                            _is_session(part.value, names):
                        found.append(f"{rel}:{node.lineno}: assigns into the session")
                        break
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and \
                    not node.attr.startswith("__") and _is_session(node.value, names):
                found.append(f"{rel}:{node.lineno}: the session's private {node.attr}")
    return found


def _is_session(node, names) -> bool:
    if isinstance(node, ast.Attribute) and node.attr == "session":
        return True
    if isinstance(node, ast.Name) and node.id in names:
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id == "PracticeSession"


def _board_subclasses(sources) -> list[str]:
    found = []
    for rel, tree in sources:
        for node in walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                    (isinstance(b, ast.Name) and b.id == "BoardWindow")
                    or (isinstance(b, ast.Attribute) and b.attr == "BoardWindow")
                    for b in node.bases):
                found.append(f"{rel}:{node.lineno}: class {node.name} subclasses BoardWindow")
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
    seam = [("reader/practice/netwindow.py", ast.parse(
        "from reader.practice.window import BoardWindow\n"
        "class OnlineWindow(BoardWindow):\n"
        "    def show(self, session):\n"
        "        self.session.status = 'waiting'\n"
        "        s = self.session\n"
        "        s.marks[3] = 'take'\n"
        "        s._picked = []\n"
        "        self.session._judged(j)\n"
        "        session.dim = frozenset()\n"
        "        self.session.notice('fine')\n"
        "        self.session = other\n"))]
    # status, marks[3], _picked (assigned, and private), _judged, dim; not notice, not the
    # window's own attribute
    assert len(_session_writes(seam)) == 6
    assert len(_board_subclasses(seam)) == 1
