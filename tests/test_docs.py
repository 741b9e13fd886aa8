"""The documentation a user follows: the README stays short and keeps its two commands, every
link in it and in docs/ leads somewhere, and every docs/ page or rules section the code cites
exists (a reader of a docstring who follows ``docs/rules.md §3`` finds §3)."""
from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
README = REPO / "README.md"
#: where code and its own notes live (docs/ and the README are checked by the link tests)
CODE_DIRS = ("reader", "audio", "poems", "tests", "scripts", ".ci")

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def markdown_files() -> list[Path]:
    """README.md, everything in docs/, and the Markdown notes kept beside the code."""
    found = [README, *sorted(DOCS.glob("*.md"))]
    for d in CODE_DIRS:
        found += sorted((REPO / d).rglob("*.md"))
    return found


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation and symbols dropped
    (letters of any script, marks, digits, ``_`` and ``-`` kept), spaces made ``-``."""
    text = re.sub(r"`|\*\*|\*", "", heading).lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LMN")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file (repeats get -1, -2 as on GitHub); headings
    inside fenced code blocks are code, not headings."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        m = HEADING.match(line)
        if fenced or not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of every Markdown link outside code blocks."""
    out, fenced = [], False
    for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out += [(no, t) for t in LINK.findall(line)]
    return out


def test_readme_is_short_and_keeps_the_two_commands():
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines: move detail into docs/"
    assert "## Fresh machine (Debian/Ubuntu, Python ≥ 3.11): two commands" in lines
    fence = text.split("## Fresh machine", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in fence.splitlines() if line.strip()]
    assert commands == ["scripts/karuta read", "scripts/test"]
    for script in ("scripts/karuta", "scripts/test"):
        assert os.access(REPO / script, os.X_OK), f"{script} is not executable"
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^\s.*\bscripts/test\b", ci, re.M), ".ci/run must run the README's test command"


def test_every_docs_page_is_reachable_from_the_readme():
    linked = {(README.parent / t.split("#")[0]).resolve() for _, t in links(README)
              if not re.match(r"[a-z]+:", t)}
    orphans = [p.name for p in DOCS.glob("*.md") if p.resolve() not in linked]
    assert not orphans, f"docs/ pages the README does not link: {orphans}"


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_leads_somewhere(path: Path):
    broken = []
    for no, target in links(path):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: — not checked here
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            broken.append(f"line {no}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"line {no}: {target} (no heading with that anchor)")
    assert not broken, f"{path.relative_to(REPO)}:\n" + "\n".join(broken)


def cited() -> tuple[list[str], list[tuple[str, int]]]:
    """The docs/ pages and the rules.md sections that code and code notes cite."""
    pages, sections = [], []
    for d in CODE_DIRS:
        for f in (REPO / d).rglob("*"):
            if f.suffix not in {".py", ".md", ".html", ".toml", ""} or not f.is_file() \
                    or f.name == Path(__file__).name or "__pycache__" in f.parts:
                continue
            text = f.read_text(encoding="utf-8", errors="replace")
            where = str(f.relative_to(REPO))
            pages += [(where, m) for m in re.findall(r"\bdocs/([\w.-]+\.md)", text)]
            for m in re.finditer(r"rules\.md`{0,2}\s*§\s*(\d+)(?:\s*[-–]\s*§?(\d+))?", text):
                lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
                sections += [(where, n) for n in range(lo, hi + 1)]
    return pages, sections


def test_cited_docs_pages_and_rules_sections_exist():
    pages, sections = cited()
    assert sections, "no rules.md citation found: the pattern no longer matches the code"
    missing = [f"{where}: docs/{name}" for where, name in pages if not (DOCS / name).exists()]
    headings = [m.group(2) for line in (DOCS / "rules.md").read_text(encoding="utf-8").splitlines()
                if (m := HEADING.match(line))]
    have = {int(m.group(1)) for h in headings if (m := re.match(r"§(\d+)\b", h))}
    missing += [f"{where}: rules.md §{n}" for where, n in sections if n not in have]
    assert not missing, "cited but not there:\n" + "\n".join(sorted(set(missing)))


def test_the_tours_goshiki_line_says_how_many_cards_are_read():
    """Issue 34: the tour said "classroom reading of the blue 20" and 17 are read: the count
    the README and reading.md give is the plan's (``karuta plan``)."""
    import json

    from cli_run import run_inproc

    plan = json.loads(run_inproc("plan", "--rules", "goshiki", "--color", "blue", "--seed", "1",
                                 "--json").stdout)
    read = len(plan["order"])
    for page in (README, DOCS / "reading.md"):
        line = next(ln for ln in page.read_text(encoding="utf-8").splitlines()
                    if "--rules goshiki --color blue " in ln and ln.startswith("karuta read"))
        assert f"{read} of the blue 20 read" in line, (page.name, line)


def _design_map() -> dict[str, str]:
    """docs/design.md's module map: each package folder named at the start of a line of the
    fenced block (``audio/output/``) -> the text of its entry (its lines up to the next
    folder)."""
    text = (DOCS / "design.md").read_text(encoding="utf-8")
    block = text.split("```", 2)[1]
    entries: dict[str, str] = {}
    name = None
    for line in block.splitlines():
        head = re.match(r"^(\S+/)\s", line + " ")
        if head:
            name = head.group(1)
            entries[name] = line[len(name):]
        elif name is not None:
            entries[name] += " " + line
    return entries


def test_the_design_page_names_every_module_as_it_is():
    """A newcomer reads docs/design.md to find where things are: every module of poems/,
    audio/, reader/ and scripts/testbed/ is named in its package's entry, and every package has an entry
    (issue 35).  A module added, renamed or moved without the map following fails here."""
    entries = _design_map()
    missing = []
    for top in ("poems", "audio", "reader", "scripts/testbed"):
        for init in sorted((REPO / top).rglob("__init__.py")):
            pkg = init.parent.relative_to(REPO).as_posix() + "/"
            if pkg == "reader/":
                continue  # (the map lists reader's packages one by one)
            entry = entries.get(pkg)
            if entry is None:
                missing.append(f"{pkg} (no entry)")
                continue
            for mod in sorted(init.parent.glob("*.py")):
                if mod.stem in ("__init__", "__main__"):
                    continue
                if not re.search(rf"(?<![\w/]){re.escape(mod.stem)}(?![\w])", entry):
                    missing.append(pkg + mod.name)
    assert not missing, "docs/design.md does not name: " + ", ".join(missing)
