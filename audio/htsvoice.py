"""Label durations from an .htsvoice file's duration model, without synthesizing anything.

``audio.chant`` needs the number of 5 ms frames HTS gives each label of a clip.  HTS's
duration model depends on the label alone: a decision tree (questions on the full-context
label) picks a Gaussian per HMM state, and at speed 1.0 each state lasts its mean rounded
(at least one frame).  Asking the engine for each label alone gave the same numbers at the cost
of a second synthesis of the whole clip (half of the HTS time); this reads the model from the
voice file instead (hts_engine API 1.10 format: the [POSITION] section's DURATION_PDF and
DURATION_TREE byte ranges in [DATA]).  ``tests/test_synth.py`` checks it against the engine
for every label of all 100 poems and both jo-ka.
"""
from __future__ import annotations

import re
import struct
import threading

__all__ = ["DurationModel", "duration_model"]


def _pattern(pats: list[str]):
    """One compiled regex for HTS wildcard patterns (``*`` any run, ``?`` one character)."""
    parts = []
    for p in pats:
        parts.append("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in p))
    return re.compile("(?:" + "|".join(parts) + r")\Z", re.DOTALL)


class DurationModel:
    """The duration trees and PDFs of one voice file."""

    def __init__(self, path: str):
        with open(path, "rb") as f:
            data = f.read()
        head, sep, _ = data.partition(b"[DATA]\n")
        if not sep:
            raise ValueError(f"{path}: no [DATA] section")
        base = len(head) + len(sep)
        fields = {}
        for line in head.decode("utf-8", "replace").splitlines():
            k, s, val = line.partition(":")
            if s:
                fields[k.strip()] = val.strip()
        self.nstate = int(fields["NUM_STATES"])

        def span(name):
            a, b = fields[name].split("-")
            return data[base + int(a):base + int(b) + 1]

        pdf = span("DURATION_PDF")
        npdf = struct.unpack_from("<i", pdf, 0)[0]
        n = 2 * self.nstate  # means then variances, float32
        if len(pdf) != 4 + 4 * n * npdf:
            raise ValueError(f"{path}: duration PDFs of an unknown layout")
        vals = struct.unpack_from(f"<{n * npdf}f", pdf, 4)
        self.means = [vals[i * n:i * n + self.nstate] for i in range(npdf)]  # pdf k is means[k - 1]
        self._questions: dict[str, list[str]] = {}
        self._compiled: dict[str, re.Pattern] = {}
        self._trees: list[tuple[re.Pattern, dict]] = []
        self._parse_trees(span("DURATION_TREE").decode("utf-8"))

    def _parse_trees(self, text: str) -> None:
        for m in re.finditer(r'^QS\s+"?([^\s"]+)"?\s*\{([^}]*)\}', text, re.M):
            self._questions[m.group(1)] = re.findall(r'"([^"]*)"', m.group(2))
        for m in re.finditer(r'^\{([^}]*)\}\[\d+\]\s*\{(.*?)^\}', text, re.M | re.S):
            tree_pats = [p.strip('"') for p in m.group(1).split(",") if p.strip('"')]
            tokens = re.findall(r'"[^"]*"|\S+', m.group(2))
            if len(tokens) % 4:
                raise ValueError("a duration tree of an unknown layout")
            nodes = {}
            for j in range(0, len(tokens), 4):
                idx, q, no, yes = tokens[j:j + 4]
                nodes[int(idx)] = (q.strip('"'), self._child(no), self._child(yes))
            self._trees.append((_pattern(tree_pats), nodes))
        if not self._trees:
            raise ValueError("no duration tree")

    @staticmethod
    def _child(tok: str):
        """A node index (int) or a leaf: ("pdf", number)."""
        if tok.startswith('"'):
            return ("pdf", int(re.search(r"(\d+)\"?\Z", tok).group(1)))
        return int(tok)

    def _match(self, q: str, label: str) -> bool:
        r = self._compiled.get(q)
        if r is None:
            r = self._compiled[q] = _pattern(self._questions[q])
        return r.match(label) is not None

    def frames(self, label: str) -> int:
        """Frames HTS gives ``label`` at speed 1.0: its states' rounded mean durations."""
        for pat, nodes in self._trees:
            if not pat.match(label):
                continue
            node = nodes[0]
            while True:
                q, no, yes = node
                nxt = yes if self._match(q, label) else no
                if isinstance(nxt, tuple):
                    means = self.means[nxt[1] - 1]
                    return sum(max(1, int(m + 0.5)) for m in means)
                node = nodes[nxt]
        raise ValueError(f"no duration tree matches label {label!r}")


_MODELS: dict[str, DurationModel] = {}
_LOCK = threading.Lock()


def duration_model(path: str) -> DurationModel:
    """The (cached) duration model of the voice file ``path``."""
    with _LOCK:
        m = _MODELS.get(path)
        if m is None:
            m = _MODELS[path] = DurationModel(path)
        return m
