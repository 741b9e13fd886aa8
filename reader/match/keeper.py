"""``karuta match keep``: a scorekeeper for a referee sitting beside a real match.

Plain line-based terminal I/O (works on any terminal, over ssh, and with piped input): the
screen shows the counts (kyogi: cards left on each side; goshiki: cards taken and the ba),
the read count and the last reads; the referee types one line per read.

Entry lines (case-insensitive, words separated by spaces)::

    kyogi:    POEM [TAKER] [TOUCH ...] [s CARD,CARD]
              TAKER  a | b | = (simultaneous: the card goes to its territory's owner) | - (nobody)
              TOUCH  ao / ap = A touched own / opp territory (bo, bp for B), besides the
                     taking touch, which is added by itself; "a:own", "b:opp" work too
              s 12,40  the cards sent (default: the sender's lowest-numbered cards)
    goshiki:  POEM [TAKER] [fX ...] [lX]
              TAKER  a | b | c | -      fa, fb, fab  faults      la  A touched the right card
              first, then a wrong one (a fault; the card is not A's)
    u  undo the last read     q  quit (the log is already saved)     ?  help

Examples: ``37 a`` (A took 37), ``12 b ao`` (B took 12 while A touched own side),
``5 ao bp`` (karafuda 5: A touched own, B touched A's side → 共お手).

The log (``reader.match.log`` format) is rewritten atomically after every read and every undo
(temp file + fsync + ``os.replace``), so a crash or Ctrl-C loses nothing; ``--resume``
continues it.

Hook for the reading engine: ``Keeper(announcer=...)`` takes an object with
``next_poem(state) -> int | None`` (see ``Announcer``).  When given, the keeper asks it which
poem to read next (a future ``--read`` option will read it aloud there) and the entry line may
leave out the poem number.  No audio is done here.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Callable, Protocol

from reader.match import log as matchlog
from reader.base.errors import KarutaError, LogError
from reader.match.rules import EntryError, IllegalEvent
from reader.match.rules import goshiki, kyogi
from reader.match.rules.games import GAMES, named

#: each game's entry help, by name (the games hold it: ``reader.match.rules.games``)
HELP = {name: g.keeper_help for name, g in GAMES.items()}


class Announcer(Protocol):
    """Hook for the reading engine (a later ``--read`` option): chooses and reads the poems.

    ``next_poem(state)`` returns the poem about to be read (and may read it aloud), or ``None``
    to let the referee type it.  Called once per read (the keeper remembers the answer, so a
    typo, help or an undo back to that read does not read it again).
    """

    def next_poem(self, state) -> int | None: ...


def parse_entry(rules: str, line: str, poem: int | None = None):
    """One entry line -> a rules event.  ``poem`` is the announced poem, if any."""
    words = line.replace(",", " ").lower().split()
    if words and words[0].isdigit():
        poem = int(words.pop(0))
    if poem is None:
        raise EntryError("start with the poem number read (1-100)")
    return named(rules).parse_entry(poem, words)


def describe(state) -> str:
    """One line about the last read, for the screen."""
    from poems import poem as get_poem
    if not state.results:
        return ""
    r = state.results[-1]
    head = f"read {len(state.results)}: poem {r.poem} ({get_poem(r.poem).kimariji})"
    if isinstance(state, kyogi.KyogiState):
        parts = [f"on {r.where}'s side" if r.where else "karafuda"]
        if r.took == "both":
            parts.append(f"both touched: {r.taker} takes it")
        elif r.took:
            parts.append(f"{r.took} took it")
        elif r.taker:
            parts.append(f"nobody took it: {r.taker} removes it")
        for p in kyogi.PLAYERS:
            if r.fault_count(p):
                parts.append(f"{p} faulted" + (" twice" if r.fault_count(p) == 2 else ""))
        if r.sent:
            parts.append(f"{r.sender} sends {', '.join(map(str, r.sent))} to "
                         f"{kyogi.other(r.sender)}")
        if r.cases:
            parts.append(" ".join(r.cases))
        parts.append(f"A {r.counts[0]}, B {r.counts[1]}")
    else:
        parts = [f"{r.took} took it" if r.took else "nobody took it"]
        if r.from_ba is not None:
            parts.append(f"{r.took} gets {r.from_ba} from the ba")
        for p in r.faults:
            parts.append(f"{p} faulted" + (" after the right card" if r.lost == p else ""))
        parts += [f"{p} puts {c} into the ba" for p, c in r.into_ba]
        parts += [f"{p} sits out the next read" for p in r.sit_out]
        parts.append(", ".join(f"{p} {c}" for p, c in zip(state.players, r.counts))
                     + f", ba {r.ba}")
    return head + " — " + "; ".join(parts)


class Keeper:
    """The keeper loop, separate from option handling so tests can drive it directly."""

    def __init__(self, loaded: matchlog.LoadedLog, log_file: Path, *, last: int = 5,
                 readline: Callable[[], str] | None = None,
                 echo: Callable[..., None],
                 announcer: Announcer | None = None, clear: Callable[[], None] | None = None):
        self.rules = loaded.rules
        self.match = loaded.match
        self.extra = loaded.extra
        self.log_file = log_file
        self.last = last
        self.readline = readline or sys.stdin.readline
        self.echo = echo
        self.announcer = announcer
        self.clear = clear
        #: read index -> the poem the announcer chose for it
        self._announced: dict[int, int | None] = {}

    def save(self) -> None:
        matchlog.save(self.log_file, self.match, self.extra)
        self.saved_reads = len(self.match.state.results)
        self.save_error = None

    #: reads in the log on disk (None: not saved yet); the last save's failure, if any
    saved_reads: int | None = None
    save_error: str | None = None

    def try_save(self) -> str:
        """Save; on a full or failing disk keep going (the reads stay in memory, the next
        entry saves again) and return a note saying what is on disk."""
        from reader.base.errors import OutputError

        try:
            self.save()
            return ""
        except OutputError as e:
            self.save_error = str(e)
            n = len(self.match.state.results)
            return (f"! NOT SAVED: {e}. The log on disk has {self.saved_reads or 0} of {n} reads; "
                    f"free some space: the next entry (or q) saves again")

    def check_saved_on_exit(self) -> None:
        """Quitting with reads not on disk: print them and end with one line (exit 1)."""
        from reader.base.errors import OutputError

        if self.save_error is None or not self.try_save():
            return
        events = self.match.events[self.saved_reads or 0:]
        self.echo("reads not saved (enter them again after --resume):")
        for ev in events:
            self.echo("  " + json.dumps(ev.to_json(), ensure_ascii=False))
        raise OutputError(f"{self.save_error}: {self.log_file} has {self.saved_reads or 0} reads, "
                          f"the {len(events)} after them are printed above; free some space, then "
                          f"karuta match keep --log {self.log_file} --resume")

    def status(self) -> str:
        st = self.match.state
        n = len(st.results)
        counts = named(self.rules).counts_line(st)
        return f"[{n} read{'s' if n != 1 else ''}] {counts}"

    def screen(self, note: str = "") -> None:
        """On a terminal: clear and redraw everything.  Piped: just the news and the counts."""
        if self.clear is not None:
            self.clear()
            self.echo(matchlog.report(self.match, last=self.last))
            if note:
                self.echo(note)
        else:
            if note:
                self.echo(note)
            self.echo(self.status())

    def resume_hint(self) -> str:
        return f"log saved to {self.log_file}; continue with: karuta match keep --log " \
               f"{self.log_file} --resume"

    def run(self) -> None:
        self.save()
        note = HELP[self.rules]
        while True:
            self.screen(note)
            note = ""
            st = self.match.state
            over = st.outcome()
            announced = None
            if over is not None:
                prompt = "match over — u undo, q quit: "
            else:
                if self.announcer is not None:
                    n_read = len(st.results)
                    if n_read not in self._announced:   # once per read, not per prompt
                        self._announced[n_read] = self.announcer.next_poem(st)
                    announced = self._announced[n_read]
                n = len(st.results) + 1
                prompt = (f"read {n}" + (f" (poem {announced})" if announced else "")
                          + " — poem, who took, faults (? help, u undo, q quit): ")
            self.echo(prompt, nl=False)
            line = self.readline()
            if line == "":  # end of input
                self.echo("")
                self.check_saved_on_exit()
                self.echo(self.resume_hint())
                return
            cmd = line.strip().lower()
            if cmd in ("q", "quit", "exit"):
                self.check_saved_on_exit()
                self.echo(self.resume_hint())
                return
            if cmd in ("?", "h", "help"):
                note = HELP[self.rules]
                continue
            if cmd in ("u", "undo"):
                try:
                    ev = self.match.pop()
                except IllegalEvent as e:
                    note = f"! {e}"
                    continue
                note = f"undone: read {len(self.match.state.results) + 1} (poem {ev.poem})"
                note = self.try_save() or note
                continue
            if not cmd:
                continue
            try:
                ev = parse_entry(self.rules, cmd, announced)
                ev = named(self.rules).complete_entry(self.match.state, ev)
                self.match.push(ev)  # recorded with the cards actually sent (rules.kyogi.settle)
            except KarutaError as e:
                note = f"! {e}"
                continue
            saved = self.try_save()
            note = describe(self.match.state)
            done = self.match.state.outcome()
            if done is not None:
                note += f"\nmatch over: {done.reason}"
            if saved:
                note += "\n" + saved


# --- option handling ------------------------------------------------------------------------

def read_deal(path: str, rules: str, color: str | None, settings: goshiki.Settings):
    from reader.base.statefiles import check, decode_json, read_text

    try:
        text = read_text(path, "deal file")
    except FileNotFoundError:
        raise LogError(f"{path}: no such file") from None
    try:
        obj = decode_json(text)
    except ValueError:
        first = text.strip().splitlines()[0] if text.strip() else ""
        try:
            obj = decode_json(first)
        except ValueError:
            raise LogError(f"{path}: the deal must be a JSON object like "
                           "{\"A\": [...], \"B\": [...]}") from None
    if not isinstance(obj, dict):
        raise LogError(f"{path}: the deal must be a JSON object like {{\"A\": [...], \"B\": [...]}}")
    check(obj, "deal", "deal file", str(path))
    if obj.get("rules", rules) != rules:
        raise LogError(f"{path}: a {obj.get('rules')} deal, but --rules {rules}")
    try:
        header = named(rules).deal_header(obj, color, settings)
    except KarutaError as e:
        raise LogError(f"{path}: {e}") from None
    try:
        return matchlog.parse_header(header)
    except KarutaError as e:
        raise LogError(f"{path}: {e}") from None
