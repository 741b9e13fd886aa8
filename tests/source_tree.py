"""The project's Python files, each parsed once per test process: the source checks
(tests/test_layers.py, test_conventions.py, test_statefiles.py) walk the same tree many
times.  A file that changed since (its size or time) is read again, and ``walk`` lists a
tree's nodes once (``ast.walk`` itself is most of a check's time)."""
from __future__ import annotations

import ast
import functools
from pathlib import Path


def parsed(path: Path) -> ast.Module:
    """``ast.parse`` of the file at ``path`` (shared: do not change the tree)."""
    st = path.stat()
    return _parse(str(path), st.st_mtime_ns, st.st_size)


def source(path: Path) -> str:
    st = path.stat()
    return _read(str(path), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=None)
def _read(path: str, mtime_ns: int, size: int) -> str:
    return Path(path).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=None)
def _parse(path: str, mtime_ns: int, size: int) -> ast.Module:
    return ast.parse(_read(path, mtime_ns, size))


_walked: dict[int, tuple[ast.AST, list[ast.AST]]] = {}


def walk(tree: ast.AST) -> list[ast.AST]:
    """``list(ast.walk(tree))``, kept for the tree (held here, so its id is not reused)."""
    got = _walked.get(id(tree))
    if got is None or got[0] is not tree:
        got = _walked[id(tree)] = (tree, list(ast.walk(tree)))
    return got[1]
