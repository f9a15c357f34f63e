"""Live status for long steps: a boot shows its log path at once, then elapsed time and the log's last line.

On a terminal it is one updating status line; otherwise (a CI log) a plain line every PLAIN_EVERY_S.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.status import Status
from rich.text import Text

PLAIN_EVERY_S = 10.0


class BootStatus:
    """Hooks for launch.session.launched(on_start=..., on_poll=...); use as a context manager."""

    def __init__(self, console: Console, label: str) -> None:
        self.console = console
        self.label = label
        self.live: Status | None = None
        self.printed_at = 0.0

    def __enter__(self) -> BootStatus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    def on_start(self, server: Any) -> None:
        self.console.print(Text(f"booting {self.label}: log {server.log_path}"), soft_wrap=True)
        if self.console.is_terminal:
            self.live = self.console.status(Text(f"booting {self.label}"))
            self.live.start()

    def on_poll(self, elapsed: float, last_line: str) -> None:
        line = f"booting {self.label}: {elapsed:.0f} s" + (f" | {last_line}" if last_line else "")
        if self.live is not None:
            self.live.update(Text(line[: max(self.console.width - 4, 20)], no_wrap=True))
        elif elapsed - self.printed_at >= PLAIN_EVERY_S:
            self.printed_at = elapsed
            self.console.print(Text(line), soft_wrap=True)
