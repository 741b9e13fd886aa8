"""The shared table store: an undoable history of actions, the save file and the GM's log.

A table is its system ("genkan" or "cards"), its settings, its seed and the list of actions
taken.  The states are rebuilt by replaying the actions (each with its own seeded generator,
``reader.table.rng_for``), so a save file is small, readable and checked on load: a corrupt or
edited save that the rules refuse is one ``LogError`` naming the action.

Save file (JSON, rewritten atomically after every action and every undo)::

    {"karuta_table": 1, "system": "cards", "seed": 7, "settings": {...}, "rules": 2,
     "actions": [{"do": "player", "name": "alice", "mode": "♠"}, ...]}

``rules`` is the version of the rules the actions were taken under.  A save from before it
existed (no ``rules``) was played under rules 1: its actions replay under rules 1 (so they deal
the same cards and are accepted as they were), and the actions added after it under the current
rules; such a save records how many actions are old (``"rules_1_actions": N``).  The rules
modules read the version of the action at hand as ``settings["rules"]``.

Beside it, ``<save>.log.txt``: one numbered line (or block) per action, as a GM reads it after
the session.  ``Table.log_text()`` gives the same text.  Both are staged before either is
replaced (``reader.base.files.atomic_write_texts``): a log that cannot be written stops the
action before the save has it, so trying again does not apply it twice.

Two commands on one save take turns: every change runs under the save's lock
(``locked``), re-reads the save there (``Table.is_current``, ``load``) and applies the action
to what is on disk, so an action another ``karuta table … do`` (or another prompt) saved
meanwhile is kept.
"""
from __future__ import annotations

import copy
import importlib
import json
import marshal
from pathlib import Path
from typing import Any

from reader.base.errors import KarutaError, LogError
from reader.base.files import atomic_write_texts, locked as _locked
from reader.table import ActionError, rng_for
from reader.base.statefiles import decode_json

__all__ = ["Table", "load", "locked", "log_path", "SYSTEMS", "FORMAT"]

FORMAT = 1
#: the rules version of new actions (1: before the seed-faithfulness fixes of issue 24)
RULES = 2
SYSTEMS = {"genkan": "reader.table.genkan", "cards": "reader.table.cards"}


def system_module(system: str):
    if system not in SYSTEMS:
        raise KarutaError(f"unknown table system {system!r}: use genkan or cards")
    return importlib.import_module(SYSTEMS[system])


def locked(save: Path | str):
    """The save's lock, held while a command reads, changes and writes it."""
    return _locked(save, "the table save")


def log_path(save: Path | str) -> Path:
    save = Path(save)
    return save.with_name(save.name + ".log.txt")


class Table:
    """An undoable table: ``push(action) -> result``, ``pop() -> action`` (undo)."""

    def __init__(self, system: str, settings: dict | None, seed: int):
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise KarutaError(f"the seed must be a whole number, not {seed!r}")
        self.system = system
        self.mod = system_module(system)
        if settings is not None and not isinstance(settings, dict):
            raise KarutaError(f"the settings must be an object of NAME: value, not {settings!r}")
        self.settings = self.mod.check_settings(dict(settings or {}))
        self.seed = seed
        first = self.mod.new_state(self.settings, rng_for(seed, 0))
        #: every state, serialized (for undo): compact, immutable, and quick to load back
        self._frozen: list[bytes] = [_freeze(first)]
        self._state: dict = first
        self._actions: list[dict] = []
        self._results: list[dict] = []
        #: the save file's text as this table last read or wrote it (None: not yet)
        self.disk_text: str | None = None
        #: the first ``rules_1_actions`` actions replay under rules 1 (a save from before rules 2)
        self.rules_1_actions = 0

    @property
    def state(self) -> dict:
        """The table now (read it; do not change it: the next action starts from it)."""
        return self._state

    @property
    def actions(self) -> tuple[dict, ...]:
        return tuple(self._actions)

    @property
    def results(self) -> tuple[dict, ...]:
        return tuple(self._results)

    def push(self, action: dict) -> dict:
        """Apply one action; ``ActionError`` (nothing changed) if the rules refuse it."""
        if not isinstance(action, dict) or not isinstance(action.get("do"), str):
            raise ActionError("an action is an object with a \"do\" name")
        action = copy.deepcopy(action)
        rng = rng_for(self.seed, len(self._actions) + 1)
        rules = 1 if len(self._actions) < self.rules_1_actions else RULES
        try:
            new, result = self.mod.apply(self._state, action, rng,
                                         dict(self.settings, rules=rules))  # apply copies
        except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e:
            # an action of the wrong shape (a hand-edited save): refused like any other
            raise ActionError(f"a malformed {action.get('do')!r} action ({type(e).__name__}: {e})") from None
        self._frozen.append(_freeze(new))
        self._state = new
        self._actions.append(action)
        self._results.append(result)
        return result

    def pop(self) -> dict:
        if not self._actions:
            raise ActionError("nothing to undo")
        self._frozen.pop()
        self._state = marshal.loads(self._frozen[-1])
        self._results.pop()
        action = self._actions.pop()
        self.rules_1_actions = min(self.rules_1_actions, len(self._actions))
        return action

    def to_dict(self) -> dict[str, Any]:
        d = {"karuta_table": FORMAT, "system": self.system, "seed": self.seed,
             "settings": self.settings, "rules": RULES, "actions": list(self._actions)}
        if self.rules_1_actions:
            d["rules_1_actions"] = self.rules_1_actions
        return d

    def log_text(self) -> str:
        lines = [f"karuta table {self.system}, seed {self.seed}, settings "
                 + json.dumps(self.settings, ensure_ascii=False)]
        for n, r in enumerate(self._results, 1):
            text = r.get("text", "")
            head, *rest = text.split("\n") or [""]
            lines.append(f"#{n} {head}")
            lines += [f"    {x}" for x in rest]
        summary = getattr(self.mod, "summary", None)
        if summary is not None and self._results:
            lines.append(summary(self.state))
        return "\n".join(lines) + "\n"

    def save(self, path: Path | str) -> None:
        """Write the save and the GM's log (both staged first: neither, or the save then the
        log; a failure says which was written)."""
        text = json.dumps(self.to_dict(), ensure_ascii=False, indent=1) + "\n"
        atomic_write_texts([(path, text), (log_path(path), self.log_text())])
        self.disk_text = text

    def is_current(self, path: Path | str) -> bool:
        """Whether the save on disk is still what this table last read or wrote (a missing
        save counts as current: writing this table brings it back)."""
        try:
            return Path(path).read_text(encoding="utf-8") == self.disk_text
        except FileNotFoundError:
            return True
        except (OSError, UnicodeDecodeError):
            return False


def _freeze(state: dict) -> bytes:
    return marshal.dumps(state)  # plain data only; in memory, never written to disk


def load(path: Path | str, system: str | None = None) -> Table:
    """A table from its save file; one ``LogError`` line for anything wrong with it."""
    path = Path(path)
    try:
        from reader.base.files import read_bounded

        text = read_bounded(path).decode("utf-8")
    except FileNotFoundError:
        raise LogError(f"{path}: no such save file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise LogError(f"{path}: cannot read it ({getattr(e, 'strerror', None) or e})") from None
    try:
        d = decode_json(text)
    except ValueError as e:
        at = f"at line {e.lineno}: " if getattr(e, "lineno", None) else ""
        raise LogError(f"{path}: not a table save (bad JSON {at}{getattr(e, 'msg', e)})") from None
    if not isinstance(d, dict) or d.get("karuta_table") != FORMAT:
        raise LogError(f"{path}: not a karuta table save (format {FORMAT})")
    if system is not None and d.get("system") != system:
        raise LogError(f"{path}: a {d.get('system')!r} table, not {system}")
    actions = d.get("actions")
    if not isinstance(actions, list):
        raise LogError(f"{path}: \"actions\" must be a list")
    try:
        table = Table(d.get("system"), d.get("settings"), d.get("seed"))
    except KarutaError as e:
        raise LogError(f"{path}: {e}") from None
    rules = d.get("rules", 1)
    old = len(actions) if rules == 1 else d.get("rules_1_actions", 0)
    if isinstance(rules, bool) or rules not in (1, RULES) or isinstance(old, bool) or not isinstance(old, int) \
            or not 0 <= old <= len(actions):
        raise LogError(f"{path}: \"rules\" must be 1 or {RULES} (with \"rules_1_actions\" "
                       f"0-{len(actions)}), not {rules!r}")
    table.rules_1_actions = old
    for n, a in enumerate(actions, 1):
        try:
            table.push(a)
        except KarutaError as e:
            raise LogError(f"{path}: action {n}: {e}") from None
    table.disk_text = text
    return table
