"""Device lookup: PortAudio's output devices (list, resolve by name or number) and its
re-initialisation after the environment changed."""
from __future__ import annotations

from audio.output.base import NO_DEVICE
from reader.base.errors import DeviceError

__all__ = ["list_devices", "lookup_device", "resolve_device", "reinit_portaudio", "_sd"]


def _sd():
    from audio.quiet import filter_native_stderr

    filter_native_stderr()  # PortAudio/ALSA print to fd 2 when a device fails; karuta says it once
    try:
        import sounddevice as sd
    except OSError:  # libportaudio missing
        raise DeviceError(NO_DEVICE) from None
    return sd


def reinit_portaudio() -> None:
    """Terminate and re-initialise PortAudio, so it rereads its host configuration (ALSA's
    ``~/.asoundrc``, ``PULSE_SERVER``, ``XDG_RUNTIME_DIR`` ...) after the environment changed.
    Call with no stream open."""
    sd = _sd()
    sd._terminate()
    sd._initialize()


def list_devices() -> list[dict]:
    """Output devices: ``{"index", "name", "hostapi", "channels", "default_samplerate",
    "default"}``; an empty list when PortAudio finds none (or is not installed)."""
    try:
        sd = _sd()
        devices = sd.query_devices()
        apis = sd.query_hostapis()
    except Exception:
        return []
    try:
        default_out = sd.default.device[1]
        if default_out is None or default_out < 0:
            default_out = sd.query_devices(kind="output")["index"]
    except Exception:
        default_out = -1
    out = []
    for d in devices:
        if d["max_output_channels"] > 0:
            out.append({
                "index": d["index"], "name": d["name"], "hostapi": apis[d["hostapi"]]["name"],
                "channels": d["max_output_channels"],
                "default_samplerate": d["default_samplerate"],
                "default": d["index"] == default_out,
            })
    return out


def lookup_device(sd, device, kind: str) -> dict | None:
    """PortAudio's info for ``device``: None (the default ``kind`` device, "output" or
    "input"), an index (int or digit string) or a name (a case-insensitive substring,
    sounddevice's rule).  None when there is no such device."""
    try:
        if device is None:
            return sd.query_devices(kind=kind)
        if isinstance(device, str) and device.strip().isdigit():
            device = int(device)
        return sd.query_devices(device)
    except (sd.PortAudioError, ValueError):
        return None


def resolve_device(device=None) -> dict:
    """The PortAudio output device for ``device``: None (the default), an index (int or a
    digit string) or a name (a case-insensitive substring, sounddevice's rule).  Raises
    ``DeviceError`` with one line when there is none."""
    info = lookup_device(_sd(), device, "output")
    if info is None:
        if device is None:
            raise DeviceError(NO_DEVICE) from None
        names = ", ".join(repr(d["name"]) for d in list_devices()) or "none"
        raise DeviceError(f"no output device matches {device!r} (output devices: {names})") \
            from None
    if not info or info.get("max_output_channels", 0) <= 0:
        if device is None:
            raise DeviceError(NO_DEVICE)
        raise DeviceError(f"sound device {info.get('name', device)!r} has no output channels")
    return dict(info)
