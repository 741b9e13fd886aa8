"""``karuta table``: bookkeeping for the two card-driven role-playing systems.

``karuta table genkan …`` (現幻, the Hyakunin Isshu deck) and ``karuta table cards …`` (the
playing-card judgement rules).  Each has the same subcommands:

  play   the interactive prompt (one line per action, ``?`` help, ``u`` undo, ``q`` quit);
         a new table from the options, or ``--resume`` an existing save
  new    create a save file without the prompt (for tools and scripts)
  do     apply one action line to a save (``u`` undoes the last one)
  show   the table now;  log: the GM's log;  (genkan) recite: a composed poem aloud or to a file

The save is rewritten atomically after every action and every undo (``reader.table.store``),
beside it ``<save>.log.txt``, the GM's log.  ``--json`` on every command that changes the table
prints ``{"action", "result", "state"}`` (``new``: ``{"state", "save"}``).  A state printed
(``--json``) never holds the order of the face-down piles, only their counts (``view``);
``show --as NAME`` is one player's view (their own hand; the others' counted).

Import-light: the rules, the store and audio are imported inside the commands.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from reader.base.errors import KarutaError
from reader.cli.bounds import UTF8
from reader.cli.options import replace_option
from reader.base.statefiles import decode_json

CTX = {"help_option_names": ["-h", "--help"]}


@click.group(context_settings=CTX)
def table():
    """Keep the bookkeeping of a card-driven role-playing table.

    \b
    現幻 (played with the Hyakunin Isshu deck):
      karuta table genkan play --save t.json --player 在五:3 --player 小町:4 --key 17,61
      karuta table genkan do t.json "act 在五 男 5 2 12 sp=1" --json
      karuta table genkan recite t.json 1 --out poem1.wav
    Playing-card judgements (two packs and jokers):
      karuta table cards play --save c.json --player tenjo:♠
      karuta table cards do c.json "judge tenjo 思考 2 12 3 5 t=20"
    Resume after a crash or a quit: karuta table genkan play --save t.json --resume
    """


def _parse_setting(text: str) -> tuple[str, object]:
    if "=" not in text:
        raise KarutaError(f"--set {text!r}: write NAME=VALUE")
    k, v = text.split("=", 1)
    low = v.strip().lower()
    if low in ("true", "yes", "on"):
        return k.strip(), True
    if low in ("false", "no", "off"):
        return k.strip(), False
    try:
        return k.strip(), int(v)
    except ValueError:
        return k.strip(), v.strip()


def _keys(spec: str | None) -> list[int]:
    if not spec:
        return []
    try:
        return [int(x) for x in spec.replace(" ", "").split(",") if x]
    except ValueError:
        raise KarutaError(f"--key {spec!r}: poem numbers separated by commas, e.g. 17,61") from None


def _categories(path: str | None) -> dict:
    if not path:
        return {}
    try:
        from reader.base.files import read_bounded

        d = decode_json(read_bounded(path).decode("utf-8"))
    except OSError as e:
        raise KarutaError(f"--categories {path}: {e.strerror}") from None
    except ValueError:
        raise KarutaError(f"--categories {path}: not JSON (expected {{\"10\": \"男\", …}})") from None
    if isinstance(d, dict) and isinstance(d.get("poets"), list):   # the shipped file's shape
        return {str(p.get("no")): ([p["category"], p["also"]] if p.get("also") else p.get("category"))
                for p in d["poets"] if isinstance(p, dict)}
    return d


def _setup(system: str, players: tuple[str, ...], npcs: tuple[str, ...]) -> list[dict]:
    from reader.table.commands import parse

    actions = []
    for p in players:
        name, _, extra = p.partition(":")
        if system == "genkan":
            actions.append(parse("genkan", f"player {name} {extra or 3}"))
        else:
            actions.append(parse("cards", f"player {name} {extra}".strip()))
    for p in npcs:
        name, _, mode = p.partition(":")
        actions.append(parse("cards", f"npc {name} {mode}".strip()))
    return actions


def _new_table(system, save, seed, settings, players, npcs):
    from reader.base.seeds import pick_seed
    from reader.base.statefiles import check_output
    from reader.table.store import Table, log_path

    def refuse_existing():  # a save there (or another file) is never started over
        check_output(save, "the save file", same_kind="a table save", resume="--resume (play)")

    refuse_existing()  # before the lock too: taking it leaves its file beside the save
    if Path(save).name:  # (no name at all is said when the save is written)
        check_output(log_path(save), "the save's log", same_kind="a table save's log",
                     replace=None)
    from reader.table.store import locked

    if seed is None:
        seed = pick_seed()
    t = Table(system, settings, seed)
    for a in _setup(system, players, npcs):
        t.push(a)
    with locked(save):  # two `new` on one name: the second finds the first's save
        refuse_existing()
        t.save(save)
    return t


def _json_out(obj) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False))


class Prompt:
    """The interactive loop, separate from click so tests can drive it with any input."""

    def __init__(self, table, save: Path, *, readline=None, echo=None, voice_spec=None,
                 device=None, auto_recite: bool = False):
        from reader.table import commands

        self.table = table
        self.save = save
        self.readline = readline or sys.stdin.readline
        self.echo = echo or click.echo
        self.commands = commands
        self.voice_spec = voice_spec
        self.device = device
        self.auto_recite = auto_recite

    def describe(self) -> str:
        return self.table.mod.describe(self.table.state)

    def hint(self) -> str:
        return (f"saved to {self.save}; continue with: karuta table {self.table.system} play "
                f"--save {self.save} --resume")

    def change(self, apply, undo):
        """``apply(table)`` to the save as it is on disk now, under its lock, and save; the
        result of ``apply``.  An action another karuta saved since this prompt last read or
        wrote the save is kept: the table is read again first (and the prompt says so).  If
        the save cannot be written, ``undo(table, result)`` takes the change back, so the
        prompt's table stays the one on disk."""
        from reader.table.store import load, locked

        with locked(self.save):
            if not self.table.is_current(self.save):
                self.table = load(self.save, self.table.system)
                self.echo(f"(the save was changed by another karuta: read again, "
                          f"{len(self.table.actions)} actions)")
            result = apply(self.table)
            try:
                self.table.save(self.save)
            except KarutaError:
                undo(self.table, result)
                raise
        return result

    def run(self) -> None:
        if self.table.disk_text is None:
            self.change(lambda t: None, lambda t, r: None)
        self.echo(self.commands.HELP[self.table.system])
        self.echo(self.describe())
        while True:
            self.echo(f"[{len(self.table.actions)}] {self.table.system}> ", nl=False)
            line = self.readline()
            if line == "":
                self.echo("")
                self.echo(self.hint())
                return
            try:
                parsed = self.commands.parse(self.table.system, line)
                if parsed is None:
                    continue
                if isinstance(parsed, self.commands.Command):
                    if parsed.name == "quit":
                        self.echo(self.hint())
                        return
                    self.echo(self.command(parsed))
                    continue
                result = self.change(lambda t: t.push(parsed), lambda t, r: t.pop())
            except KarutaError as e:
                self.echo(f"! {e}")
                continue
            self.echo(result["text"])
            self.echo(self.describe().split("\n", 1)[0])   # the piles, one line
            if self.auto_recite and "poem" in result:
                try:
                    self.echo(recite(result["poem"], None, self.voice_spec, self.device)
                              .rsplit("\n", 1)[-1])
                except KarutaError as e:
                    self.echo(f"! {e}")

    def command(self, c) -> str:
        from reader.table.store import log_path

        if c.name == "help":
            return self.commands.HELP[self.table.system]
        if c.name == "show":
            if c.args.get("who"):
                return self.table.mod.describe(self.table.state, c.args["who"])
            return self.describe()
        if c.name == "log":
            return self.table.log_text().rstrip("\n") + f"\n(the log is also in {log_path(self.save)})"
        if c.name == "poems":
            return self.table.mod.poems_text(self.table.state)
        if c.name == "undo":
            action = self.change(lambda t: t.pop(), lambda t, a: t.push(a))
            return f"undone: {action['do']} (action {len(self.table.actions) + 1})"
        if c.name == "recite":
            from reader.base.errors import OutputError

            entry = _poem_entry(self.table, c.args.get("poem"))
            try:
                return recite(entry, c.args.get("out"), self.voice_spec, self.device,
                              c.args.get("replace", False))
            except OutputError as e:  # said in the prompt's words: out=FILE, replace
                raise OutputError(str(e).replace("--out ", "out=").replace(
                    "add --replace", "add the word replace")) from None
        raise KarutaError(f"unknown command {c.name}")


def _poem_entry(t, no):
    poems = t.state.get("poems") or []
    if not poems:
        raise KarutaError("no poem composed yet (compose …, then place …)")
    if no is None:
        return poems[-1]
    if not 1 <= no <= len(poems):
        raise KarutaError(f"no composed poem #{no} (1-{len(poems)})")
    return poems[no - 1]


def recite(entry: dict, out: str | None, voice_spec: str | None, device,
           replace: bool = False) -> str:
    """Recite a composed poem live, or render it to ``out``; returns the line to print."""
    from reader.reading.voices import make_voice
    from reader.table import genkan
    from reader.table.recite import play_poem, render_poem

    voice = make_voice(voice_spec)
    text = genkan.vertical(entry)
    def say_synthesis():  # ~12 s of synthesis with nothing on the screen read as a hang
        note = synthesis_note(entry, voice)
        if note:
            click.echo(note, err=True)

    if out:
        from pathlib import Path

        from audio.render import _check_target, _format_for

        _check_target(Path(out), replace)  # a refused --out is its one line, before the note
        _format_for(Path(out), None)
        say_synthesis()
        path = render_poem(entry, voice, out, replace=replace)
        return f"{text}\nrecited poem #{entry['id']} to {path}"
    from reader.base.errors import DeviceError
    from reader.reading.player import open_output

    try:
        output = open_output("sounddevice", device, voice.sample_rate)
        say_synthesis()  # (once the device is there: a missing one is the one line)
        play_poem(entry, voice, output)
    except DeviceError as e:
        msg = str(e)
        if "karuta render" in msg:   # the reading's hint; a poem is rendered with --out
            msg = msg.split(":")[0] + ": recite to a file instead, with --out poem.wav"
        raise DeviceError(msg) from None
    return f"{text}\nrecited poem #{entry['id']}"


def synthesis_note(entry: dict, voice) -> str | None:
    """The line said before a composed poem is synthesized (about 12 s for five ku on this
    machine), or None when its clip is cached already (or the voice says nothing of a cache)."""
    from reader.table.recite import poem_plan

    cached = getattr(voice, "is_cached", None)
    if not callable(cached):
        return None
    item = poem_plan(entry, voice).segments[0].speech
    if cached(item):
        return None
    return (f"synthesizing poem #{entry['id']} ({len(entry['ku'])} ku; about 2-3 s a ku the "
            "first time, then it is cached) …")


def _system_group(system: str, title: str):
    @click.group(system, context_settings=CTX, help=title)
    def group():
        pass

    setup_opts = [
        click.option("--seed", type=int, default=None, help="Shuffle seed (printed when not given)."),
        click.option("--player", "players", type=UTF8, multiple=True, metavar="NAME:" + ("KAGAKU" if system == "genkan" else "MODE"),
                     help=("A player and the number of 歌学 specialities (hand limit; default 3). "
                           if system == "genkan" else "A PC and the 表出モード suit (♠ ♥ ♦ ♣ or s h d c). ")
                     + "Repeatable."),
        click.option("--set", "sets", type=UTF8, multiple=True, metavar="NAME=VALUE",
                     help=("GM settings: start_hand=3, scene_cards=3, refill=true, reshuffle=true "
                           "(山札 out: reshuffle the discards), scene_match=all|hand (which cards of a "
                           "judgement match the 歌枕札), contest_floor=declared|success (対決判定: at "
                           "least the previous declaration, as the seed says, or the last "
                           "successful one)." if system == "genkan" else
                           "GM settings: jokers_per_pack=2, packs=2, start_hand=5, npc_hand=5, "
                           "enemy_draw=5 (GM cards per enemy in combat).")),
    ]
    if system == "genkan":
        setup_opts += [
            click.option("--key", "keys", default=None, metavar="N,N",
                         help="The scenario's key cards (torifuda kept out of the 歌枕 pile)."),
            click.option("--categories", "categories", default=None, metavar="FILE",
                         help="Override poet categories for a deck whose art differs: JSON "
                              "{\"10\": \"男\", \"89\": [\"女\", \"官\"]}."),
        ]
    else:
        setup_opts += [
            click.option("--npc", "npcs", type=UTF8, multiple=True, metavar="NAME[:MODE]",
                         help="An NPC (a mode only counts in combat if told at its start)."),
            click.option("--jokers", type=click.IntRange(0, 4), default=None,
                         help="Jokers per pack (default 2)."),
        ]

    def settings_from(kw) -> dict:
        s = dict(_parse_setting(x) for x in kw.pop("sets", ()))
        if system == "genkan":
            keys = _keys(kw.pop("keys", None))
            if keys:
                s["keys"] = keys
            cats = _categories(kw.pop("categories", None))
            if cats:
                s["categories"] = cats
        else:
            j = kw.pop("jokers", None)
            if j is not None:
                s["jokers_per_pack"] = j
        return s

    def with_setup(f):
        for opt in reversed(setup_opts):
            f = opt(f)
        return f

    @group.command("play")
    @click.option("--save", required=True, type=click.Path(dir_okay=False),
                  help="The save file (JSON; the GM's log goes beside it as SAVE.log.txt).")
    @click.option("--resume", is_flag=True, help="Continue the table in --save.")
    @click.option("--voice", "voice_spec", default=None, metavar="NAME|PATH",
                  help="The voice that recites composed poems (default: the configured one).")
    @click.option("--device", default=None, help="The sound device for recitation.")
    @click.option("--recite/--no-recite", "auto_recite", default=False,
                  help="(genkan) Recite each poem aloud as soon as it is placed.")
    @with_setup
    def play(save, resume, voice_spec, device, auto_recite, seed, players, **kw):
        """The interactive table: one line per action, '?' for the keys, 'u' undoes."""
        from reader.table.store import load

        npcs = kw.pop("npcs", ())
        settings = settings_from(kw)
        if resume:
            if seed is not None or players or npcs or settings:
                raise KarutaError("--resume continues the table in --save: leave out the set-up options")
            t = load(save, system)
        else:
            t = _new_table(system, save, seed, settings, players, npcs)
            click.echo(f"{system} table, seed {t.seed}, saved to {save}")
            for r in t.results:
                click.echo(r["text"])
        p = Prompt(t, Path(save), voice_spec=voice_spec, device=device,
                   auto_recite=auto_recite and system == "genkan")
        try:
            p.run()
        except KeyboardInterrupt:
            click.echo("")
            click.echo(p.hint(), err=True)
            raise click.exceptions.Abort() from None

    @group.command("new")
    @click.argument("save", type=click.Path(dir_okay=False))
    @click.option("--json", "as_json", is_flag=True, help="Print the new table as JSON.")
    @with_setup
    def new(save, as_json, seed, players, **kw):
        """Create a table save without the prompt."""
        npcs = kw.pop("npcs", ())
        t = _new_table(system, save, seed, settings_from(kw), players, npcs)
        if as_json:
            _json_out({"save": save, "seed": t.seed, "settings": t.settings,
                       "state": t.mod.view(t.state)})
        else:
            click.echo(f"{system} table, seed {t.seed}, saved to {save}")
            click.echo(t.mod.describe(t.state))

    @group.command("do")
    @click.argument("save", type=click.Path(dir_okay=False))
    @click.argument("line", type=UTF8, nargs=-1, required=True)
    @click.option("--json", "as_json", is_flag=True,
                  help='Print {"action", "result", "state"} as JSON.')
    def do(save, line, as_json):
        """Apply one action line to SAVE (as typed at the prompt; 'u' undoes the last)."""
        from reader.table import commands
        from reader.table.store import load, locked

        parsed = commands.parse(system, " ".join(line))
        if parsed is None:
            raise KarutaError("no action given")
        if isinstance(parsed, commands.Command) and parsed.name != "undo":
            raise KarutaError(f"'{parsed.name}' is a prompt command: use karuta table {system} "
                              f"show/log" + ("/recite" if system == "genkan" else ""))
        t = load(save, system)  # a missing or damaged save: one line, before any lock
        with locked(save):  # read, apply and write as one step: a concurrent one waits
            if not t.is_current(save):
                t = load(save, system)
            if isinstance(parsed, commands.Command):
                action = t.pop()
            else:
                result = t.push(parsed)
            t.save(save)
        if isinstance(parsed, commands.Command):
            if as_json:
                _json_out({"action": {"do": "undo"}, "result": {"undone": action},
                           "state": t.mod.view(t.state)})
            else:
                click.echo(f"undone: {action['do']}")
            return
        if as_json:
            _json_out({"action": parsed, "result": result, "state": t.mod.view(t.state)})
        else:
            click.echo(result["text"])

    @group.command("show")
    @click.argument("save", type=click.Path(dir_okay=False))
    @click.option("--json", "as_json", is_flag=True, help="Print the state as JSON.")
    @click.option("--as", "viewer", type=UTF8, default=None, metavar="NAME",
                  help="Only what NAME may see: their own hand (and sheet), the others' hands "
                       "as counts, no seed.")
    def show(save, as_json, viewer):
        """The table now (the GM's view: every hand; the piles' order is never shown)."""
        from reader.table.store import load

        t = load(save, system)
        view = t.mod.view(t.state, viewer)      # checks NAME
        if as_json:
            if viewer is None:
                _json_out({"seed": t.seed, "settings": t.settings, "actions": len(t.actions),
                           "state": view})
            else:
                _json_out({"viewer": viewer, "actions": len(t.actions), "state": view})
        else:
            click.echo(t.mod.describe(t.state, viewer))
            if system == "genkan" and t.state["poems"]:
                click.echo(t.mod.poems_text(t.state))

    @group.command("log")
    @click.argument("save", type=click.Path(dir_okay=False))
    @click.option("--json", "as_json", is_flag=True,
                  help='Print {"system", "seed", "settings", "entries": [{"n", "action", '
                       '"result"}], "summary"} as JSON.')
    def log(save, as_json):
        """The GM's log: every action and judgement, numbered."""
        from reader.table.store import load

        t = load(save, system)
        if as_json:
            summary = getattr(t.mod, "summary", None)
            _json_out({"system": system, "seed": t.seed, "settings": t.settings,
                       "entries": [{"n": n, "action": a, "result": r}
                                   for n, (a, r) in enumerate(zip(t.actions, t.results), 1)],
                       "summary": summary(t.state) if summary and t.results else None})
        else:
            click.echo(t.log_text(), nl=False)

    if system == "genkan":
        @group.command("recite")
        @click.argument("save", type=click.Path(dir_okay=False))
        @click.argument("poem", type=int, required=False)
        @click.option("--out", default=None, type=click.Path(dir_okay=False),
                      help="Render to this file (.wav, .flac; .mp3/.ogg need ffmpeg) instead of playing.")
        @click.option("--voice", "voice_spec", default=None, metavar="NAME|PATH",
                      help="synth (built-in), tone, or a voice pack (composed poems fall back to synth).")
        @click.option("--device", default=None, help="The sound device.")
        @replace_option()
        def recite_cmd(save, poem, out, voice_spec, device, replace):
            """Recite composed poem POEM (default: the last) with the reading voice."""
            from reader.table.store import load

            t = load(save, system)
            click.echo(recite(_poem_entry(t, poem), out, voice_spec, device, replace))

    return group


GENKAN_HELP = """現幻: the Hyakunin Isshu deck as the dice (yomifuda 山札 and hands, torifuda
歌枕札), judgements, 歌詠み and recitation.  The actions: '?' at the prompt.

\b
Where the seed leaves the GM a choice (settings: play --set NAME=VALUE):
  reshuffle=true    an empty 山札 takes the reshuffled discards (false: refuse)
  refill=true       one card back after each judgement, up to the 歌学 count
  scene_match=all   every card of a judgement can match a 歌枕札 (hand: only hand cards)
  contest_floor=declared  対決判定: declare at least the previous declaration, even a
                    failed one (the seed); success: at least the last successful one
  start_hand=3, scene_cards=3;  --key N,N the key cards;  --categories FILE another deck
\b
Fixed readings (see reader/table/genkan.py): degree of success = margin + 1, x2 per
matched 歌枕札; 持統天皇 and 式子内親王 count as 女 or 官僧, whichever is named; hand
cards in a poem need a 《歌学》 success of their attribute (compose … hand=ATTR); a 返歌
to a whole poem of the hundred (poem NAME N) may take several of its ku."""

CARDS_HELP = """Playing-card judgements: two packs with jokers, ドロー/オープン/リシャッフル,
《限界突破》, criticals, opposed judgements.  The actions: '?' at the prompt.

\b
Settings (play --set NAME=VALUE): jokers_per_pack=2 (or --jokers), packs=2,
  start_hand=5, npc_hand=5, enemy_draw=5 (GM cards per enemy; combat N per=K for one fight)
\b
Fixed readings (see reader/table/cards.py): level 0 halves the ability rounding down;
an unnamed joker is a 10; an opposed judgement where the passive side played no card is
won by the active side unless it also played none; vs=N refers to one of the last 20;
《限界突破》 turns up level − cards held; judging an NPC outside combat that holds no card
draws its 5 and stops (the next judge line plays from them; they stay until partend);
mod=±N never undoes an absolute failure."""

table.add_command(_system_group("genkan", GENKAN_HELP))
table.add_command(_system_group("cards", CARDS_HELP))
