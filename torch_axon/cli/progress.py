"""A one-line progress bar on stderr, redrawn in place; off when stderr is not a terminal (logs and tests get the
results only)."""

from __future__ import annotations

import sys
import time


class Bar:
    def __init__(self, enabled: bool = True, width: int = 24, stream=None):
        self.enabled, self.width, self.stream = enabled, width, stream or sys.stderr
        self.label, self.start, self.shown = None, 0.0, False

    def update(self, label: str, done: int, total: int, phase: str = "") -> None:
        if not self.enabled:
            return
        if label != self.label:
            self.done()
            self.label, self.start = label, time.monotonic()
        frac = min(1.0, done / total) if total else 1.0
        fill = int(frac * self.width)
        line = (f"\r{label:<28} [{'#' * fill}{'.' * (self.width - fill)}] {done}/{total} {phase:<12} "
                f"{time.monotonic() - self.start:6.1f}s")
        self.stream.write(line)
        self.stream.flush()
        self.shown = True

    def done(self) -> None:
        """Ends the current bar's line."""
        if self.enabled and self.shown:
            self.stream.write("\n")
            self.stream.flush()
        self.shown, self.label = False, None
