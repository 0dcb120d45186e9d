"""The progress line of ``rewardkit score`` on a terminal: counts, rate, ETA, one clean line.

``ProgressLine`` writes ``format_progress`` with a carriage return, padded to the terminal width (a
shorter line leaves nothing of a longer one behind, with no escape codes) and cut to it (never wraps)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import IO

BAR_WIDTH = 30


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def format_progress(done: int, total: int | None, elapsed: float, width: int, *, reused: int = 0) -> str:
    """``scoring [###...] done/total rate/s ETA m:ss`` in exactly ``width - 1`` characters (the last
    column left free so no terminal wraps), without the bar when it does not fit, else cut;
    ``reused`` of the ``done`` rollouts were journaled by an earlier run: done, but not in the rate."""
    width = max(width, 2)
    scored = max(done - reused, 0)
    rate = scored / elapsed if elapsed > 0 else 0.0
    counts = [f"{done}/{total}" if total else f"{done}", f"{rate:,.0f}/s"]
    if total:
        counts.append(f"ETA {_duration(max(total - done, 0) / rate)}" if rate > 0 else "ETA -")
    line = " ".join(["scoring", *counts])
    if total:
        filled = int(BAR_WIDTH * min(done, total) / total)
        with_bar = " ".join(["scoring", f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}]", *counts])
        if len(with_bar) < width:  # the bar goes first on a narrow terminal, then the line is cut
            line = with_bar
    return line[: width - 1].ljust(width - 1)


def terminal_width(stream: IO[str]) -> int:
    """The width of the terminal ``stream`` writes to (``shutil.get_terminal_size`` when it is not one)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns or shutil.get_terminal_size().columns
    except (AttributeError, OSError, ValueError):
        return shutil.get_terminal_size().columns


class ProgressLine:
    """A one-line progress bar on a terminal's stderr; silent otherwise (a file or a pipe gets none)."""

    def __init__(self, total: int | None, stream: IO[str] | None = None) -> None:
        self.total = max(total, 1) if total is not None else None
        self.done = 0
        self.reused = 0
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.start = time.monotonic()
        self._last = 0.0
        self._shown = False

    def skip(self, amount: int) -> None:
        """``amount`` rollouts were journaled already."""
        self.reused += amount
        self.update(amount)

    def update(self, amount: int) -> None:
        self.done += amount
        now = time.monotonic()
        if self.enabled and (now - self._last > 0.1 or (self.total and self.done >= self.total)):
            self._last = now
            line = format_progress(
                self.done, self.total, now - self.start, terminal_width(self.stream), reused=self.reused
            )
            self.stream.write("\r" + line)
            self.stream.flush()
            self._shown = True

    def close(self) -> None:
        """End the line: the last state stays on screen."""
        if self.enabled and self._shown:
            self.stream.write("\n")
            self.stream.flush()
        self._shown = False

    def clear(self) -> None:
        """Blank the line and return to its start, for a message that replaces it."""
        if self.enabled and self._shown:
            self.stream.write("\r" + " " * (terminal_width(self.stream) - 1) + "\r")
            self.stream.flush()
        self._shown = False
