"""``karuta practice``: a practice match — the app reads, you grab, the rules judge.

Thin: parse the options, check how they go together (``CHECKS``, one table), then hand the
match to its mode in ``reader.practice.run``: two bots with no window, a player at the board
window, or online (host or guest, a player at the window or a bot in the seat).
"""
from __future__ import annotations

from dataclasses import dataclass

import click

from reader.base.errors import KarutaError
from reader.cli import warn
from reader.cli.bounds import FINITE, finite_range
from reader.cli.options import (backend_option, device_option, joka_option, seed_option,
                                timing_details_option, timing_details_wanted, voice_option,
                                WEB_PORT, web_options)
from reader.match.rules.games import GAMES, KYOGI
from reader.practice import online


def _cards(ctx, param, value):
    if value is None:
        return None
    from reader.practice.deal import MAX_KYOGI_CARDS

    if not 1 <= value <= MAX_KYOGI_CARDS:
        raise click.BadParameter(f"{value} is out of range: kyogi deals 1-{MAX_KYOGI_CARDS} "
                                 "cards a side", ctx=ctx, param=param)
    return value


# --- how the options go together --------------------------------------------------------------

#: the options a new match is made with: the host's or the log's when joining or resuming
DEAL = ("--rules", "--cards", "--color", "--seed", "--joka", "--ma", "--yoin", "--speed",
        "--take", "--tomofuda")
ONLINE = ("--host", "--join")
#: how a needed option is named in a refusal
SHOWN = {"--log": "--log FILE", "--code": "--code CODE", "--as": "--as bot:LEVEL"}


@dataclass(frozen=True)
class Needs:
    """``option`` given without any of ``others``: "OPTION needs OTHER: why"."""

    option: str
    others: tuple[str, ...]
    why: str

    def refusal(self, given: list[str], game) -> str | None:
        if self.option in given and not any(o in given for o in self.others):
            return f"{self.option} needs {' or '.join(SHOWN.get(o, o) for o in self.others)}: " \
                   f"{self.why}"
        return None


@dataclass(frozen=True)
class LeaveOut:
    """Any of ``options`` given with some of ``others``: "with OPTION, leave out OTHERS: why"
    (naming exactly the others given, as typed)."""

    options: tuple[str, ...]
    others: tuple[str, ...]
    why: str

    def refusal(self, given: list[str], game) -> str | None:
        which = next((o for o in self.options if o in given), None)
        extra = [o for o in self.others if o in given]
        if which is not None and extra:
            return f"with {which}, leave out {_and(extra)}: {self.why}"
        return None


@dataclass(frozen=True)
class ForGames:
    """``option`` (a deal option, ``Rules.deal_options``) given for a game that has none:
    "OPTION needs --rules GAME: why"."""

    option: str

    def refusal(self, given: list[str], game) -> str | None:
        key = self.option.removeprefix("--")
        if self.option in given and key not in game.deal_options:
            takers = " or ".join(n for n, g in GAMES.items() if key in g.deal_options)
            return f"{self.option} needs --rules {takers}: {game.name} has no {self.option}"
        return None


#: every "X goes only with Y" of ``karuta practice``, in the order they are checked; the first
#: that holds is the one line said (before anything is opened or written)
CHECKS = (
    Needs("--port", ("--host", "--web"),
          "it is the port a host listens on (a guest joins HOST:PORT)"),
    Needs("--address", ("--web",), "it is the address the page is served on"),
    LeaveOut(("--web",), ONLINE + ("--bot-vs-bot", "--json", "--device", "--fullscreen",
                                   "--backend"),
             "the page plays a player against the --vs bot, a second player at the same "
             "tablet or on a device of their own"),
    Needs("--code", ONLINE, "it is for online play"),
    Needs("--as", ONLINE, "it is for online play"),
    Needs("--sound", ("--as", "--watch"), "the board window always reads aloud"),
    Needs("--watchers", ("--host",), "it is how many more machines may watch a hosted match"),
    Needs("--watch", ("--join",), "it watches a match another machine hosts"),
    LeaveOut(("--watch",), ("--as",), "a watcher has no seat"),
    LeaveOut(("--host",), ("--join",), "one machine hosts, the other joins"),
    LeaveOut(ONLINE, ("--vs", "--bot-vs-bot", "--json"),
             "online, the other player is on the other machine"),
    Needs("--join", ("--code",), "the code the host printed"),
    LeaveOut(("--join",), DEAL + ("--memorize", "--resume"), "the host sets the match"),
    Needs("--json", ("--bot-vs-bot", "--resume"), "a window match shows its result"),
    Needs("--resume", ("--log",), "the match to continue"),
    LeaveOut(("--bot-vs-bot",), ("--vs",), "the two bots play both seats"),
    LeaveOut(("--bot-vs-bot",), ("--memorize",), "bots need no memorisation"),
    LeaveOut(("--resume",), DEAL, "the logged match keeps its own settings"),
    ForGames("--cards"),
    ForGames("--color"),
)


def refusal(given: list[str], game, checks=CHECKS) -> str | None:
    """The first of ``checks`` the options ``given`` (as typed) break, or ``None``."""
    for c in checks:
        why = c.refusal(given, game)
        if why is not None:
            return why
    return None


def _given(ctx: click.Context) -> list[str]:
    """The options the user typed, each as its first name (``--joka`` for ``--no-joka`` too)."""
    from click.core import ParameterSource

    return [p.opts[0] for p in ctx.command.params
            if ctx.get_parameter_source(p.name) not in (None, ParameterSource.DEFAULT)]


def _and(names: list[str]) -> str:
    shown = [n + "/--no-" + n[2:] if n == "--joka" else n for n in names]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def _reading(rules: str, joka, ma, yoin, speed, take) -> dict:
    """The reading settings a practice match changes (``headless.new_match``'s ``reading``),
    checked as a reading's are (one line for a pause or pace out of range) before anything is
    opened or written."""
    from reader.reading.settings import settings_from_options

    # (raises on a bad value)
    s = settings_from_options(rules, ma=ma, yoin=yoin, speed=speed, take=take)
    given = {"joka": joka, "ma_ms": s.ma_ms if ma is not None else None,
             "yoin_ms": s.yoin_ms if yoin is not None else None,
             "take_ms": s.take_ms if take is not None else None,
             "speed": s.speed if speed is not None else None}
    return {k: v for k, v in given.items() if v is not None}


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--rules", type=click.Choice(list(GAMES)), default=None,
              help="kyogi (default): 25 cards a side, first to empty theirs wins; goshiki: one "
                   "colour's 20, 10 each, most taken after 17 reads wins.")
@click.option("--vs", "vs", default=None, metavar="bot:LEVEL|human|device|none",
              help="Your opponent: a bot of level 1-5 (default bot:3), a second player on the "
                   "same screen, a second player on a phone or tablet of their own (device: "
                   "--web only), or none (alone: all the cards on the board are yours; "
                   "goshiki: your 10, the colour's other 10 are karafuda).")
@click.option("--cards", type=int, default=None, callback=_cards,
              help="Kyogi: cards a side (1-50, default 25); the rest are karafuda.")
@click.option("--tomofuda", is_flag=True,
              help="Kyogi: deal each card with its 友札 (the cards sharing its opening but the "
                   "last sound): a short game (--cards 8 on a phone) stays hard to tell apart.")
@click.option("--color", type=click.Choice(["blue", "pink", "yellow", "green", "orange"]),
              default=None, help="Goshiki colour (default: drawn from the seed).")
@seed_option("Seed of the deal, the reading order and the bots (printed when not given).")
@click.option("--log", "log_file", type=click.Path(dir_okay=False), default=None,
              help="Match log (JSON Lines), saved after every read; 'karuta match replay' "
                   "scores it.")
@click.option("--resume", is_flag=True, help="Continue the match in --log after a crash or quit.")
@click.option("--bot-vs-bot", "bot_vs_bot", default=None, metavar="A,B",
              help="Two bots play a whole match with no window and no sound (e.g. 2,4).")
@click.option("--json", "as_json", is_flag=True,
              help="With --bot-vs-bot: print the result as 'karuta match replay --json' does.")
@click.option("--hints", is_flag=True,
              help="Live narrowing: cards that can no longer be the one being read dim as "
                   "each sound is heard.")
@voice_option()
@joka_option("Before the first card: kyogi reads the jo-ka; goshiki (which has none) the "
             "announcement and a 空札 poem (default: yes; --no-joka starts with the first "
             "上の句).")
@click.option("--ma", type=FINITE, default=None,
              help="間 before each 上の句, seconds (kyogi 1.0, goshiki 0.6).")
@click.option("--yoin", type=FINITE, default=None,
              help="How long a 下の句's last sound is held, seconds (kyogi 3.0).")
@click.option("--speed", type=FINITE, default=None,
              help="Reading pace, 1.0 = kyogi (0.25-4; goshiki 1.8).")
@click.option("--take", type=FINITE, default=None,
              help="Kyogi: the wait after each 上の句 for the take, seconds (3.0).")
@click.option("--simultaneous", type=finite_range(0, 1000), default=10.0, show_default=True,
              help="Touches within this many ms count as simultaneous (the card goes to its "
                   "owner).")
@device_option("Sound device (window play; see karuta read --list-devices).")
@click.option("--fullscreen", is_flag=True, help="Window play: full screen.")
@click.option("--memorize", type=finite_range(0, 120), default=None,
              help="Window and --web play: memorisation time, minutes (kyogi 15, goshiki 0.5; "
                   "--resume: 2, at most the rules').")
@click.option("--show-kimariji", is_flag=True,
              help="Window play: print each card's kimariji on it (for beginners).")
@backend_option("Window play: audio output library (sounddevice times clicks best).")
@click.option("--host", "host_mode", is_flag=True,
              help="Online: host a match for a player on another machine (prints the code "
                   "they join with).")
@web_options("Play on a phone's or tablet's browser against the --vs bot (or --vs human: "
             "two players at one tablet; --vs device: a phone or tablet each): this machine serves the page on the LAN (prints "
             "its address and a QR code) and judges.",
             port_help=f"Online, --host: the TCP port to listen on (default "
                       f"{online.DEFAULT_PORT}; 0: any free port, printed); --web: the "
                       f"page's (default {WEB_PORT}).")
@click.option("--join", "join", default=None, metavar="HOST[:PORT]",
              help="Online: join the match hosted at HOST (with --code).")
@click.option("--watchers", type=click.IntRange(0, online.MAX_WATCHERS), default=None,
              help="Online, --host: this many more machines may watch the match (--join "
                   "... --watch; default 0).")
@click.option("--watch", is_flag=True,
              help="Online, --join: watch the match, no seat: the board in a window (with "
                   "no display: each read's result printed; --sound reads aloud).")
@click.option("--code", default=None, metavar="CODE",
              help="Online: the code the host printed (--join); --host: use this code.")
@click.option("--as", "as_seat", default=None, metavar="bot:LEVEL",
              help="Online: a bot plays this machine's seat (no window); without it you play "
                   "at the board window.")
@click.option("--sound", is_flag=True,
              help="Online with --as: read aloud too, in sync with the other machine "
                   "(--device).")
@timing_details_option()
def practice(**o):
    """Play a practice match on a board: the app reads, you grab the cards, it judges.

    \b
    Examples:
      karuta practice --vs bot:3                 # kyogi against a level-3 bot, in a window
      karuta practice --cards 10 --vs bot:1      # a short game: 10 cards a side
      karuta practice --rules goshiki --color blue --vs human
      karuta practice --vs none --no-joka        # alone, straight to the first card
      karuta practice --log m.jsonl --resume     # continue after a crash
      karuta practice --bot-vs-bot 2,4 --seed 7 --log m.jsonl --json
      karuta practice --host                     # online: prints the code to join with
      karuta practice --web --vs bot:2           # on a tablet's browser (prints a QR code)
      karuta practice --web --vs device          # a phone or tablet for each player
      karuta practice --web --log m.jsonl --resume   # that match again, after a Ctrl-C
      karuta practice --join 192.168.1.20 --code 123456
      karuta practice --join 192.168.1.20 --code 123456 --watch   # (host: --watchers 1)
    """
    ctx = click.get_current_context()
    game = GAMES[o["rules"] or KYOGI.name]
    said = refusal(_given(ctx), game)
    if said is not None:
        raise KarutaError(said)
    reading = _reading(game.name, o["joka"], o["ma"], o["yoin"], o["speed"], o["take"])
    from reader.practice import run

    env = _env()
    if o["join"] is not None:
        return _join(env, o)
    devices = (o["vs"] or "").strip().lower() == "device"
    if devices:  # (a player at each page: two human seats)
        if not o["web"]:
            raise KarutaError("--vs device needs --web: each player on a phone or tablet of "
                              "their own")
        o["vs"] = "human"
    seats = _seats(o)
    code = o["code"]
    if code is not None and not (4 <= len(code) <= 64 and code.isprintable() and " " not in code):
        raise KarutaError("--code: 4-64 characters, no spaces")
    if not 0 <= o["simultaneous"] <= _headless().MAX_SIMULTANEOUS_MS:
        raise KarutaError(f"--simultaneous {o['simultaneous']:g} is out of range: "
                          f"0-{_headless().MAX_SIMULTANEOUS_MS:g} ms")
    m = run.new_or_resumed(env, rules=game.name, seats=seats, seed=o["seed"],
                           voice_spec=o["voice_spec"], cards=o["cards"], color=o["color"],
                           reading=reading, simultaneous=o["simultaneous"],
                           log_file=o["log_file"], resume=o["resume"], tomo=o["tomofuda"])
    if o["host_mode"]:
        return _host(env, o, m)
    if o["web"]:
        from reader.drills.calibrate import CalibrationStore

        store = CalibrationStore(clock=env.clock)
        store.load()  # (an unreadable calibration file: one line now, not when a device joins)
        return run.play_web(env, m, log_file=o["log_file"], new_log=not o["resume"],
                            address=o["address"], port=o["port"], store=store, devices=devices,
                            memorize=o["memorize"], hints=o["hints"])
    if run.has_player(m):
        if o["as_json"]:  # (a resumed match with a player)
            raise KarutaError("--json needs --bot-vs-bot: a window match shows its result")
        run.play_window(env, m, log_file=o["log_file"], hints=o["hints"], device=o["device"],
                        fullscreen=o["fullscreen"], memorize=o["memorize"],
                        show_kimariji=o["show_kimariji"], backend=o["backend"],
                        new_log=not o["resume"],
                        timing_details=timing_details_wanted(o["timing_details"]))
        return
    again = f"--bot-vs-bot {o['bot_vs_bot']}" if o["bot_vs_bot"] is not None else ""
    run.play_bots(env, m, log_file=o["log_file"], resume=o["resume"], as_json=o["as_json"],
                  again=again)


def _headless():
    from reader.practice import headless

    return headless


def _env():
    """The command around the modes (``reader.practice.run.Env``)."""
    from contextlib import AbstractContextManager

    from reader.cli import claim_log, command_clock
    from reader.practice.run import Env

    def calibration(output):
        from reader.drills.calibrate import CalibrationStore, device_key

        key = device_key(output)
        return key, CalibrationStore().offset_ms(key)

    def stats() -> AbstractContextManager:
        from reader.drills.stats import StatsDB

        return StatsDB()

    return Env(echo=click.echo, warn=warn, aside=lambda line: click.echo(line, err=True),
               claim_log=claim_log, clock=command_clock(), calibration=calibration,
               stats=stats)


def _local_seat(o):
    """Online: this machine's seat (a player at the window, or ``--as bot:N``)."""
    from reader.practice.match import Seat

    local = _headless().parse_seat(o["as_seat"]) if o["as_seat"] is not None else Seat("human")
    if local.kind == "none":
        raise KarutaError("--as none: someone has to play this seat (bot:1-5)")
    if local.kind == "human" and o["sound"]:
        raise KarutaError("--sound needs --as bot:LEVEL: the board window always reads aloud")
    return local


def _seats(o) -> dict | None:
    """The seats of a new match (on ``--resume`` ``None`` unless the options name them: the
    logged seats then)."""
    from reader.practice.match import Seat

    headless = _headless()
    if o["bot_vs_bot"] is not None:
        parts = o["bot_vs_bot"].replace(" ", "").split(",")
        if len(parts) != 2:
            raise KarutaError(f"--bot-vs-bot {o['bot_vs_bot']!r}: give two levels, e.g. 2,4")
        return {"A": headless.parse_seat(f"bot:{parts[0]}"),
                "B": headless.parse_seat(f"bot:{parts[1]}")}
    if o["host_mode"]:
        return {"A": _local_seat(o), "B": Seat("human")}  # (B: the player who joins)
    if o["resume"] and o["vs"] is None:
        return None
    return {"A": Seat("human"), "B": headless.parse_seat(o["vs"] or "bot:3")}


def _host(env, o, m):
    """``--host``: this machine's player at the window, or ``--as bot:N`` in the seat."""
    from reader.practice import run

    if o["resume"] and m.seats["B"].kind != "human":
        raise KarutaError(f"{o['log_file']}: seat B of this match is {m.seats['B'].kind}, not a "
                          "player who joins: resume it without --host")
    code = o["code"] or online.new_code()
    port = o["port"] if o["port"] is not None else online.DEFAULT_PORT
    memorize_s = 60.0 * (o["memorize"] or 0.0)
    watchers = o["watchers"] or 0
    if m.seats["A"].kind == "human":
        return run.host_window(env, m, code, port, o["log_file"], new_log=not o["resume"],
                               device=o["device"], fullscreen=o["fullscreen"],
                               show_kimariji=o["show_kimariji"], voice_spec=o["voice_spec"],
                               hints=o["hints"], memorize_s=memorize_s, watchers=watchers)
    return run.host(env, m, code, port, o["log_file"], new_log=not o["resume"],
                    device=o["device"] if o["sound"] else False, voice_spec=o["voice_spec"],
                    memorize_s=memorize_s, watchers=watchers)


def _join(env, o):
    """``--join``: this machine's player at the window, or ``--as bot:N`` in the seat, or a
    watcher (``--watch``: the board window, or the reads printed with no display)."""
    from reader.practice import netplay, run
    from reader.ui.window import display_available

    address = netplay.parse_address(o["join"])
    if o["watch"]:
        if display_available() and not o["sound"]:
            return run.join_window(env, address, o["code"], o["voice_spec"], o["log_file"],
                                   device=o["device"], fullscreen=o["fullscreen"],
                                   show_kimariji=o["show_kimariji"], hints=False, watch=True)
        return run.join(env, address, o["code"], None, o["voice_spec"], o["log_file"],
                        o["device"] if o["sound"] else False)
    local = _local_seat(o)
    if local.kind == "human":
        return run.join_window(env, address, o["code"], o["voice_spec"], o["log_file"],
                               device=o["device"], fullscreen=o["fullscreen"],
                               show_kimariji=o["show_kimariji"], hints=o["hints"])
    return run.join(env, address, o["code"], local, o["voice_spec"], o["log_file"],
                    o["device"] if o["sound"] else False)
