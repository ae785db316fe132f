"""The eval's progress bar: done, failed, running EX and ETA, on stderr."""

from __future__ import annotations

from typing import Any


class Progress:
    """A rich progress bar (silent when disabled), advanced once per finished record."""

    def __init__(
        self, enabled: bool, total: int, done: int, correct: int, scored: int, failed: int
    ) -> None:
        self.correct, self.scored, self.failed = correct, scored, failed
        self._bar: Any = None
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichProgress

        self._bar = RichProgress(
            TextColumn("[bold]eval"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("failed {task.fields[failed]}"),
            TextColumn("EX {task.fields[ex]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        self._bar.start()
        self._task = self._bar.add_task(
            "eval", total=total, completed=done, failed=failed, ex=self._ex()
        )

    @classmethod
    def resuming(cls, enabled: bool, total: int, done: list[dict[str, Any]]) -> Progress:
        """A bar that starts from the records a resumed run already has."""
        return cls(
            enabled,
            total,
            len(done),
            correct=sum(1 for r in done if r.get("correct")),
            scored=sum(1 for r in done if r.get("correct") is not None),
            failed=sum(1 for r in done if r.get("status") == "failed"),
        )

    def _ex(self) -> str:
        return f"{100 * self.correct / self.scored:.1f}%" if self.scored else "-"

    def advance(self, record: dict[str, Any]) -> None:
        if record.get("status") == "failed":
            self.failed += 1
        if record.get("correct") is not None:
            self.scored += 1
            self.correct += bool(record["correct"])
        if self._bar is not None:
            self._bar.update(self._task, advance=1, failed=self.failed, ex=self._ex())

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
