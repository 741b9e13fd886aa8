"""The architecture, checked: imports flow one way (poems <- audio <- reader), only the CLI
knows click, and no two modules import each other (directly or round a loop).

Layers inside reader/ (a module may import its own layer and the ones before it):
    reader.base  <  reader.ui, reader.reading, reader.input, reader.memory  <  reader.match,
    reader.drills, reader.club, reader.voices, reader.practice, reader.table,
    reader.tournament  <  reader.cli
The rooms of one floor stand apart where a test below says so: practice does not import the
drills (input and its timing, and the memory deck, are on the floor below both).
audio/ may import poems and reader.base only; poems/ imports neither.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

from source_tree import parsed, source, walk

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("poems", "audio", "reader")


def modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for f in (REPO / pkg).rglob("*.py"):
            parts = f.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = f
    return out


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Project modules ``name`` imports anywhere in its file (lazy imports included)."""
    tree = parsed(path)
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(pkg.split(".")[: len(pkg.split(".")) - node.level + 1] + ([base] if base else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


@functools.cache
def graph() -> dict[str, set[str]]:
    """Each project module's project imports (computed once per test process: do not change
    it)."""
    mods = modules()
    known = set(mods)
    return {n: imports_of(n, p, known) for n, p in mods.items()}


def layer(name: str) -> int:
    if name.startswith("poems"):
        return 0
    if name.startswith("reader.base"):
        return 1
    if name.startswith("audio"):
        return 2
    if name == "reader" or name.startswith(("reader.ui", "reader.reading", "reader.input",
                                            "reader.memory")):
        return 3
    if name.startswith("reader.cli"):
        return 5
    return 4


def test_imports_flow_one_way():
    wrong = []
    for mod, deps in graph().items():
        for d in deps:
            if d.startswith("reader.base") and mod.startswith("audio"):
                continue
            if layer(d) > layer(mod):
                wrong.append(f"{mod} imports {d}")
    assert not wrong, "wrong-way imports:\n" + "\n".join(sorted(wrong))


def test_practice_does_not_import_the_drills():
    """Input and its timing (``reader.input``) and the memory deck (``reader.memory``) are
    shared from the floor below: practice takes nothing from the drills' room."""
    wrong = sorted(f"{mod} imports {d}" for mod, deps in graph().items()
                   if mod.startswith("reader.practice") for d in deps
                   if d.startswith("reader.drills"))
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles():
    g = graph()
    # a package's __init__ may gather its own modules; a cycle through the parent package
    # alone is how Python imports submodules, not a design cycle
    def edges(m):
        return {d for d in g[m] if not m.startswith(d + ".")}

    index, low, stack, on, cycles, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_every_project_import_names_a_module_that_exists():
    """A lazy import of a moved module (``from reader.stats import ...`` after the move to
    ``reader.drills.stats``) fails only when that line runs: catch it here."""
    mods = modules()
    missing = []
    users = list(mods.values()) + sorted((REPO / "tests").glob("*.py")) + \
        sorted((REPO / "scripts").glob("*.py"))
    for path in users:
        tree = parsed(path)
        for node in walk(tree):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                wanted = [node.module]
            elif isinstance(node, ast.Import):
                wanted = [a.name for a in node.names]
            else:
                continue
            for w in wanted:
                if w.split(".")[0] in PACKAGES and w not in mods:
                    missing.append(f"{path.relative_to(REPO)}:{node.lineno}: {w}")
    assert not missing, "imports of modules that do not exist:\n" + "\n".join(missing)


def test_only_the_cli_knows_click():
    users = sorted(m for m, p in modules().items()
                   if not m.startswith("reader.cli") and "click" in _top_imports(p))
    assert not users, f"click imported outside reader/cli: {users}"


def _top_imports(path: Path) -> set[str]:
    tree = parsed(path)
    out = set()
    for node in walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module.split(".")[0])
    return out


def test_the_checker_sees_a_wrong_way_import(tmp_path):
    """The walk itself works: a wrong-way import in a file is found."""
    f = tmp_path / "x.py"
    f.write_text("from reader.cli import main\nimport audio.render\n")
    assert imports_of("audio.fake", f, {"reader.cli", "audio.render"}) == {"reader.cli", "audio.render"}
    assert layer("reader.cli") > layer("audio.fake")


#: modules that hold rules, not devices: they take clocks and frames as values (issue 23)
PURE = ("reader.practice.session", "reader.practice.games", "reader.practice.match",
        "reader.practice.report", "reader.practice.table", "reader.practice.view",
        "reader.practice.boardstate")
DEVICES = {"pygame", "sounddevice", "Xlib", "subprocess", "threading"}
CLOCKS = {"time", "datetime"}


def _closure(start: str, g: dict[str, set[str]]) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo += g.get(n, ())
    return seen


def test_the_practice_session_is_pure():
    """The practice session and the rules under it import no window or sound library,
    anywhere below them, and read no clock of their own (the window passes its clock in)."""
    mods, g = modules(), graph()
    for name in PURE:
        below = _closure(name, g)
        devices = {m: _top_imports(mods[m]) & DEVICES for m in below if m in mods}
        assert not any(devices.values()), (name, {m: d for m, d in devices.items() if d})
        own = _top_imports(mods[name])
        assert not own & CLOCKS, (name, own & CLOCKS)
        text = source(mods[name])
        for call in ("perf_counter", "monotonic", "time.time", "sleep("):
            assert call not in text, (name, call)
    assert "reader.practice.session" in _closure("reader.practice.window", g)
    assert "reader.practice.table" in _closure("reader.practice.window", g)


def test_the_purity_check_sees_a_clock(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("def f():\n    import time\n    from pygame import display\n")
    assert _top_imports(f) & CLOCKS == {"time"} and _top_imports(f) & DEVICES == {"pygame"}
