"""Custom stream events: what each agent is doing, for `stream_mode="custom"`.

Every event is a dict with at least `agent` and `phase`; the CLI's `--stream` prints them and
Studio shows them. With no streaming consumer the writer does nothing.
"""

from __future__ import annotations

from typing import Any


def emit(runtime: Any, agent: str, phase: str, **fields: Any) -> None:
    """`agent` is an `Agent` (a str) for model-calling agents, or a step's name."""
    writer = getattr(runtime, "stream_writer", None)
    if writer is None:
        return
    writer({"agent": str(agent), "phase": phase, **fields})
