"""``karuta calibrate``: tap along to steady clicks; the median offset is saved for the device.

Every reaction the speed drill measures on that device has the offset taken off (see
``reader.calibrate``).  Import-light: the heavy modules load inside the command.
"""
from __future__ import annotations

import click

from reader.bounds import finite_range


@click.command("calibrate")
@click.option("--device", default=None, help="Sound device name or number (default: the default device).")
@click.option("--backend", type=click.Choice(["sounddevice", "pygame"]), default="sounddevice",
              show_default=True, help="Audio output library (use the one you drill with).")
@click.option("--show", is_flag=True, help="Show the saved calibrations and exit.")
@click.option("--clicks", type=click.IntRange(8, 100), default=20, show_default=True,
              help="How many clicks.")
@click.option("--interval", type=finite_range(0.3, 2.0), default=0.6, show_default=True,
              help="Seconds between clicks.")
@click.option("--window", is_flag=True, help="Tap in a window (key, click or touch), as in the window drill.")
def calibrate(device, backend, show, clicks, interval, window):
    """Calibrate tap timing: tap along to the clicks (any key), the median offset is saved.

    \b
    Outliers (stray or missed taps) are dropped.  Calibrations are kept per output device;
    'karuta drill speed' applies them and warns when the device has none.
      karuta calibrate --device pulse
      karuta calibrate --show
    """
    from reader.calibrate import CalibrationStore, device_key, run_calibration

    store = CalibrationStore()
    if show:
        saved = store.load()
        if not saved:
            click.echo(f"no calibrations saved yet ({store.path})")
            return
        for key, e in sorted(saved.items()):
            click.echo(f"{key}: {e['offset_ms']:+.1f} ms  ({e.get('taps', '?')} taps, "
                       f"spread ±{e.get('spread_ms', 0):.1f} ms, {e.get('input', '?')}, "
                       f"{e.get('date', '?')})")
        return
    if window:
        from reader.window import require_display

        require_display()
    from reader.drill_speed import TerminalFront, WindowFront
    from reader.session import open_output

    output = open_output(backend, device, 48000)
    key = device_key(output)
    click.echo(f"calibrating {key}: {clicks} clicks, {interval:.2f} s apart.")
    click.echo("tap any key on each click, in time with it (q quits)")
    front = WindowFront(title="karuta calibrate") if window else TerminalFront()
    try:
        with front:
            if window:
                front.message("tap on each click")
            result = run_calibration(output, front, count=clicks, interval_ms=interval * 1000)
    except KeyboardInterrupt:
        click.echo("\ncalibration stopped: nothing saved")
        return
    click.echo("")
    store.save(key, result, input=front.name)
    click.echo(f"{key}: {result.describe()}")
    click.echo(f"saved in {store.path}")
