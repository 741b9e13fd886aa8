"""The architecture, checked: imports flow one way (poems <- audio <- reader), only the CLI
knows click, and no two modules import each other (directly or round a loop).

Layers inside reader/ (a module may import its own layer and the ones before it):
    reader.base  <  reader.ui, reader.reading, reader.input, reader.memory,
    reader.match.rules  <  reader.match,
    reader.drills, reader.club, reader.voices, reader.practice, reader.table,
    reader.tournament  <  reader.cli
The rooms of one floor stand apart where a test below says so: practice does not import the
drills (input and its timing, and the memory deck, are on the floor below both).
audio/ may import poems and reader.base only; poems/ imports neither.

Around the app: the benchmarks (scripts/*.py) and the tests (tests/*.py) share one support
package, scripts/testbed (sound server, X server, app processes, relay, onsets), found without
any ``sys.path`` edit (pyproject.toml's pytest ``pythonpath``; a script's own folder).  A
benchmark imports no other benchmark and nothing of tests/; a test imports nothing of scripts/
but testbed; testbed imports neither (nor pytest); the app imports none of them; no cycle.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

from source_tree import parsed, source, walk

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("poems", "audio", "reader")
SUPPORT = "testbed"  # scripts/testbed


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
                                            "reader.memory", "reader.match.rules")):
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


def test_the_rules_import_only_the_poems_and_the_base():
    """The games (``reader.match.rules``) sit on the reading's floor so the reading engine can
    ask a game's reading preset: they stay pure rules, importing nothing of reader but
    ``reader.base`` (and ``poems``)."""
    wrong = sorted(f"{mod} imports {d}" for mod, deps in graph().items()
                   if mod.startswith("reader.match.rules") for d in deps
                   if d.startswith("reader") and not d.startswith(("reader.base",
                                                                  "reader.match.rules")))
    assert not wrong, "\n".join(wrong)


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
    cycles = _cycles({m: {d for d in deps if not m.startswith(d + ".")} for m, deps in g.items()})
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def _cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of graph ``g`` (module -> modules it imports), each sorted: its
    strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, cycles, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
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
    return cycles


def test_every_project_import_names_a_module_that_exists():
    """A lazy import of a moved module (``from reader.stats import ...`` after the move to
    ``reader.drills.stats``) fails only when that line runs: catch it here."""
    mods = modules()
    missing = []
    tools = tool_modules()
    users = list(mods.values()) + list(tools.values())
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
                if (w.split(".")[0] in PACKAGES and w not in mods) or \
                        (w.split(".")[0] == SUPPORT and w not in tools):
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


# ---- scripts/ and tests/: one support package between them (issue 35) ----------------------

def tool_modules() -> dict[str, Path]:
    """The modules of scripts/ and tests/ by the name they are imported as: a benchmark
    (``bench_online``), a test or a test helper (``cli_run``), the support package
    (``testbed``, ``testbed.relay``)."""
    out = {}
    for where in ("scripts", "tests"):
        for f in sorted((REPO / where).glob("*.py")):
            assert f.stem not in out, f"{f.stem}.py is in both scripts/ and tests/"
            out[f.stem] = f
    for f in sorted((REPO / "scripts" / SUPPORT).rglob("*.py")):
        parts = f.relative_to(REPO / "scripts").with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def kind(name: str, path: Path) -> str:
    """"support", "script" (scripts/*.py: benchmarks and tools) or "test" (tests/*.py)."""
    if name == SUPPORT or name.startswith(SUPPORT + "."):
        return "support"
    return "script" if path.parent.name == "scripts" else "test"


@functools.cache
def tool_graph() -> dict[str, set[str]]:
    """Each module of scripts/ and tests/: the modules of scripts/ and tests/ it imports
    (lazy imports included; imports in strings a child process runs are not seen)."""
    tools = tool_modules()
    return {n: imports_of(n, p, set(tools)) for n, p in tools.items()}


def tool_import_errors(graph: dict[str, set[str]], kinds: dict[str, str]) -> list[str]:
    wrong = []
    for mod, deps in graph.items():
        for d in deps:
            if mod.startswith(d + "."):  # (a package's module and its __init__)
                continue
            k, dk = kinds[mod], kinds[d]
            if k == "script" and dk != "support":
                wrong.append(f"{mod} (scripts/) imports {d}: a benchmark imports only testbed, "
                             "reader, audio, poems")
            elif k == "test" and dk == "script":
                wrong.append(f"{mod} (tests/) imports {d} (scripts/): move what both need "
                             "into testbed")
            elif k == "support" and dk != "support":
                wrong.append(f"{mod} imports {d}: testbed stands below the tests and the "
                             "benchmarks")
    return sorted(wrong)


def test_benchmarks_and_tests_meet_only_in_the_support_package():
    tools = tool_modules()
    kinds = {n: kind(n, p) for n, p in tools.items()}
    assert not (wrong := tool_import_errors(tool_graph(), kinds)), "\n".join(wrong)


def test_the_support_package_runs_without_pytest_and_the_app_imports_none_of_it():
    tools = tool_modules()
    pytest_users = sorted(n for n, p in tools.items()
                          if kind(n, p) == "support" and "pytest" in _top_imports(p))
    assert not pytest_users, f"testbed modules that import pytest: {pytest_users}"
    names = {n.split(".")[0] for n in tools}
    wrong = sorted(f"{m} imports {t}" for m, p in modules().items()
                   for t in _top_imports(p) & names)
    assert not wrong, "\n".join(wrong)


def test_no_import_cycle_among_scripts_and_tests():
    g = tool_graph()
    cycles = _cycles({m: {d for d in deps if not m.startswith(d + ".")} for m, deps in g.items()})
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def _sys_path_edits(path: Path) -> list[int]:
    """Lines of ``path`` that change where imports are found: ``sys.path`` changed (insert,
    append, assigned), ``site.addsitedir``.  (A module of the app loaded by its file path on
    purpose, as bench_human_pack loads this tree's split.py, is not one.)"""
    found = []
    for node in walk(parsed(path)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            f = node.func
            if isinstance(f.value, ast.Attribute) and f.value.attr == "path" and \
                    isinstance(f.value.value, ast.Name) and f.value.value.id == "sys" and \
                    f.attr in ("insert", "append", "extend", "remove"):
                found.append(node.lineno)
            elif f.attr == "addsitedir":
                found.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(ast.unparse(t).startswith("sys.path") for t in targets):
                found.append(node.lineno)
    return sorted(found)


def test_no_sys_path_games_in_scripts_or_tests():
    """The one way imports are found is documented in scripts/testbed/__init__.py."""
    wrong = [f"{p.relative_to(REPO)}:{line}" for p in tool_modules().values()
             for line in _sys_path_edits(p)]
    assert not wrong, "sys.path edited in:\n" + "\n".join(wrong)


def test_the_tools_check_sees_a_tangle(tmp_path):
    """The checks themselves work: a benchmark importing another, a test importing a
    benchmark, testbed importing a test, a cycle, a sys.path edit."""
    g = {"bench_a": {"bench_b", "testbed.x"}, "bench_b": {"test_c"}, "test_c": {"bench_a"},
         "testbed.x": {"cli_run"}, "cli_run": set(), "testbed": set()}
    kinds = {"bench_a": "script", "bench_b": "script", "test_c": "test", "testbed.x": "support",
             "cli_run": "test", "testbed": "support"}
    wrong = tool_import_errors(g, kinds)
    assert [w.split(" (")[0].split(" imports")[0] for w in wrong] == \
        ["bench_a", "bench_b", "test_c", "testbed.x"], wrong
    assert _cycles(g) == [["bench_a", "bench_b", "test_c"]]
    f = tmp_path / "x.py"
    f.write_text("import site, sys\nsys.path.insert(0, 'tests')\nsys.path = []\n"
                 "def f():\n    sys.path.append('scripts')\n    site.addsitedir('x')\n")
    assert _sys_path_edits(f) == [2, 3, 5, 6]


def _top_level_names(path: Path) -> set[str]:
    names = set()
    for node in parsed(path).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                names |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def test_every_name_taken_from_testbed_is_there():
    """A lazy ``from testbed.onsets import onset_number`` of a name that moved or was renamed
    fails only when its line runs (a benchmark's rarely used mode): catch it here."""
    tools = tool_modules()
    missing = []
    for path in tools.values():
        for node in walk(parsed(path)):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module and \
                    node.module.split(".")[0] == SUPPORT and node.module in tools:
                have = _top_level_names(tools[node.module])
                missing += [f"{path.relative_to(REPO)}:{node.lineno}: {node.module}.{a.name}"
                            for a in node.names
                            if a.name not in have and f"{node.module}.{a.name}" not in tools]
    assert not missing, "names testbed does not have:\n" + "\n".join(missing)


#: what only the one start-up of each server says: a PulseAudio daemon its clients reach
#: loads the unix protocol module; an Xvfb is given its screen
SERVER_START_UPS = {"module-native-protocol-unix": "scripts/testbed/sound.py",
                    "-screen": "scripts/testbed/xserver.py"}


def _words(path: Path) -> set[str]:
    """The whitespace-separated words of every string in ``path``'s code."""
    return {w for n in walk(parsed(path)) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            for w in n.value.split()}


def test_each_server_is_started_in_one_place():
    """The sound server and the X server are started by testbed alone (PulseAudio's start-up
    was written three times: audio_fixtures, bench_startup, bench_grab; Xvfb's three times)."""
    wrong = [f"{path.relative_to(REPO)} starts a server as {home} does ({word})"
             for path in tool_modules().values() if path != Path(__file__).resolve()
             for word, home in SERVER_START_UPS.items()
             if word in _words(path) and path.relative_to(REPO).as_posix() != home]
    assert not wrong, "\n".join(wrong)
