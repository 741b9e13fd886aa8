"""``karuta calibrate``: tap along to steady clicks; the median offset is saved for the device.

Every reaction the speed drill measures on that device has the offset taken off (see
``reader.drills.calibrate``).  Import-light: the heavy modules load inside the command.
"""
from __future__ import annotations

import click

from reader.cli.options import backend_option, device_option
from reader.cli.bounds import finite_range


@click.command("calibrate")
@device_option("Sound device name or number (default: the default device).")
@backend_option("Audio output library (use the one you drill with).")
@click.option("--show", is_flag=True, help="Show the saved calibrations and exit.")
@click.option("--clicks", type=click.IntRange(8, 100), default=20, show_default=True,
              help="How many clicks.")
@click.option("--interval", type=finite_range(0.3, 2.0), default=0.6, show_default=True,
              help="Seconds between clicks.")
@click.option("--window", is_flag=True, help="Tap in a window (key, click or touch), as in the window drill.")
@click.option("--attempts", type=click.IntRange(1, 10), default=3, show_default=True,
              help="Runs at most: a run whose spread is above --max-spread is repeated.")
@click.option("--max-spread", type=click.FloatRange(0.05, 100.0), default=0.5, show_default=True,
              help="Largest spread (ms, median absolute deviation of the taps) accepted at once.")
def calibrate(device, backend, show, clicks, interval, window, attempts, max_spread):
    """Calibrate tap timing: tap along to the clicks (any key), the median offset is saved.

    \b
    Outliers (stray or missed taps) are dropped.  Calibrations are kept per output device;
    'karuta drill speed' applies them and warns when the device has none.
      karuta calibrate --device pulse
      karuta calibrate --show
    """
    from reader.drills.calibrate import (CalibrationStore, describe_history, device_key,
                                  run_calibration)
    from reader.cli.underruns import say_underruns

    from reader.cli import command_clock

    clock = command_clock()
    store = CalibrationStore(clock=clock)
    if show:
        saved = store.load()
        if not saved:
            click.echo(f"no calibrations saved yet ({store.path})")
            return
        for key, e in sorted(saved.items()):
            spread = f"±{e['spread_ms']:.2f} ms" if "spread_ms" in e else "?"
            click.echo(f"{key}: {e['offset_ms']:+.1f} ms  ({e.get('taps', '?')} taps, "
                       f"spread {spread}, {e.get('input', '?')}, {e.get('date', '?')})")
            hist = describe_history(e)
            if hist:
                click.echo(f"  {hist}")
        return
    store.check_can_save()  # before the taps: a file a newer karuta wrote is not written over
    if window:
        from reader.ui.window import require_display

        require_display()
    from reader.drills.speed import TerminalFront, WindowFront
    from reader.reading.player import open_output

    output = open_output(backend, device, 48000)
    key = device_key(output)
    click.echo(f"calibrating {key}: {clicks} clicks, {interval:.2f} s apart.")
    click.echo("tap any key on each click, in time with it (q quits)")
    front = WindowFront(title="karuta calibrate", clock=clock) if window else \
        TerminalFront(clock=clock)
    try:
        with front:
            if window:
                front.message("tap on each click")
            result = run_calibration(output, front, count=clicks, interval_ms=interval * 1000,
                                     echo=lambda t: click.echo(f"\n{t}" if t else ""),
                                     attempts=attempts, max_spread_ms=max_spread, clock=clock)
    except KeyboardInterrupt:
        click.echo("\ncalibration stopped: nothing saved")
        say_underruns(output, stopped=True)
        return
    click.echo("")
    store.save(key, result, input=front.name)
    if store.kept_damaged is not None:
        from reader.cli import warn

        warn(f"the damaged calibration file was kept as {store.kept_damaged}")
    click.echo(f"{key}: {result.describe()}")
    if result.spread_ms > max_spread:
        click.echo(f"karuta: the steadiest of {attempts} runs still spread ±{result.spread_ms:.2f} ms "
                   f"(above ±{max_spread:.2f} ms): saved, but the offset may be off by about "
                   f"that much", err=True)
    hist = describe_history(store.get(key) or {})
    if hist:
        click.echo(hist)
    click.echo(f"saved in {store.path}")
    say_underruns(output)
