"""``karuta match``: replay a match log, keep score of a real match.

Import-light on purpose: the log and the keeper are imported inside the commands; the games
(their names are the choices of --rules) at the top.
"""
from __future__ import annotations

import click

from reader.base import seeds
from reader.match.rules.games import GAMES
from reader.cli.options import device_option, voice_option


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def match():
    """Score kyogi and goshiki matches (docs: reader/match/rules/README.md).

    \b
    Examples:
      karuta match keep --rules kyogi --seed 7 --log m.jsonl
      karuta match keep --log m.jsonl --resume
      karuta match replay m.jsonl --json
    """


@match.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def replay(file, as_json):
    """Replay a match log (JSON Lines) and print the result.

    A bad log is refused with one line naming the line number and the reason.
    """
    import json

    from reader.match import log as matchlog

    loaded = matchlog.load(file)
    if as_json:
        click.echo(json.dumps(matchlog.summary(loaded.match), ensure_ascii=False))
    else:
        click.echo(matchlog.report(loaded.match))


@match.command()
@click.option("--rules", type=click.Choice(list(GAMES)),
              help="Rules of the match (required unless --resume).")
@click.option("--seed", type=int, help="Draw the deal from this seed (printed for the players).")
@click.option("--deal", "deal_file", type=click.Path(dir_okay=False, exists=True),
              help='The real deal: a JSON object {"A": [...], "B": [...]} (or a match log).')
@click.option("--color", type=click.Choice(["blue", "pink", "yellow", "green", "orange"]),
              help="Goshiki colour for a seeded deal (default: drawn from the seed).")
@click.option("--players", type=click.IntRange(2, 3), default=2, show_default=True,
              help="Goshiki: two or three players.")
@click.option("--reads", type=click.IntRange(1, 20), default=17, show_default=True,
              help="Goshiki: reads in a match.")
@click.option("--finals", is_flag=True, help="Goshiki finals: a tie reads one more card.")
@click.option("--log", "log_file", type=click.Path(dir_okay=False),
              help="Match log to write (default: match-<rules>-<time>.jsonl here).")
@click.option("--resume", is_flag=True, help="Continue the match in --log after a crash or quit.")
@click.option("--last", type=click.IntRange(0, 100), default=5, show_default=True,
              help="How many recent reads the screen shows.")
@click.option("--read", "read_aloud", is_flag=True,
              help="The app reads the poems aloud too: each entered result reads on "
                   "(previous 下の句, 間, next 上の句).")
@voice_option("With --read: the voice.")
@device_option("With --read: the sound device.")
def keep(rules, seed, deal_file, color, players, reads, finals, log_file, resume, last,
         read_aloud, voice_spec, device):
    """Keep score of a real match from the keyboard, saving the log after every read.

    Enter each read as one line: the poem number, then who took it and any faults
    ('?' on the screen lists the keys).  'u' undoes the last read, 'q' quits; the log is
    always saved, so quitting or a crash loses nothing: continue with --resume.
    """
    announcer = None
    if read_aloud:
        from reader.base.seeds import pick_seed
        from reader.match.announcer import ReadingAnnouncer
        from reader.reading.player import open_output
        from reader.reading.voices import make_voice

        voice = make_voice(voice_spec)
        output = open_output("sounddevice", device, voice.sample_rate)
        announcer = ReadingAnnouncer(voice, output, pick_seed(seed))
    ended = False
    try:
        _keep(rules=rules, seed=seed, deal_file=deal_file, color=color, players=players,
                   reads=reads, finals=finals, log_file=log_file, resume=resume, last=last,
                   announcer=announcer)
        ended = True
    finally:
        if announcer is not None:
            announcer.close()
            if ended:  # an error (a lost device …) is the one line said, nothing after it
                from reader.cli.underruns import say_underruns

                say_underruns(output)


def _keep(*, rules, seed, deal_file, color, players, reads, finals, log_file, resume, last,
          announcer=None) -> None:
    """``karuta match keep`` after click has parsed the options."""
    import os
    import sys
    from pathlib import Path

    from reader.base.errors import DeviceError, KarutaError
    from reader.base.seeds import pick_seed
    from reader.cli import claim_log, command_clock
    from reader.match import log as matchlog
    from reader.match.keeper import Keeper, read_deal
    from reader.match.rules import BadDeal, goshiki

    if seed is not None and deal_file is not None:
        raise KarutaError("give --seed or --deal, not both")
    if resume:
        if not log_file:
            raise KarutaError("--resume needs --log FILE (the match to continue)")
        if seed is not None or deal_file is not None:
            raise KarutaError("--resume continues the deal in the log: leave out --seed/--deal")
        claim_log(log_file, "a match log", new=False)  # one karuta plays a log at a time
        loaded = matchlog.load(log_file)
        if "practice" in loaded.extra:  # its reads' timings would be rewritten away
            raise KarutaError(f"{log_file} is a practice log (karuta practice): continue it with "
                              f"`karuta practice --log {log_file} --resume`; it was left as it is")
        if rules and rules != loaded.rules:
            raise KarutaError(f"{log_file} is a {loaded.rules} match, not {rules}")
    else:
        if not rules:
            raise KarutaError(f"--rules {'|'.join(GAMES)} is required (or --resume with --log)")
        settings = goshiki.Settings(reads=reads, finals=finals)
        try:
            if deal_file is not None:
                loaded = read_deal(deal_file, rules, color, settings)
            else:
                seed = pick_seed(seed)
                rng = seeds.rng(seed)
                dealt = GAMES[rules].seeded(rng, color=color, players=players,
                                            settings=settings)
                loaded = matchlog.LoadedLog(rules, dealt, {"seed": seed})
        except BadDeal as e:
            raise KarutaError(str(e)) from None
        if not log_file:
            local = command_clock().now().astimezone()  # (the user's local time)
            log_file = f"match-{rules}-{local:%Y%m%d-%H%M%S}.jsonl"
        claim_log(log_file, "a match log", new=True)  # never over a file; one karuta at a time
        st = loaded.match.state
        click.echo(f"{rules} match" + (f", seed {seed}" if seed is not None and not deal_file
                                       else "") + f", log {log_file}")
        for p, hand in zip(GAMES[rules].players_of(st), st.deal):
            click.echo(f"  deal {p}: {' '.join(map(str, hand))}")
    keeper = Keeper(loaded, Path(log_file), last=last, announcer=announcer, echo=click.echo,
                    clear=click.clear if sys.stdout.isatty() else None)
    try:
        keeper.run()
    except DeviceError as e:  # --read: the sound device went away; every entered read is saved
        raise DeviceError(f"{e}; {keeper.resume_hint()}") from None
    except KeyboardInterrupt:
        click.echo("")
        click.echo(keeper.resume_hint(), err=True)
        raise click.exceptions.Abort() from None  # karuta: interrupted, exit 130
