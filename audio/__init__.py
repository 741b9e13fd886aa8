"""karuta's sound: speech synthesis, voices, rendering and playback backends."""
