"""``traces.jsonl``: an eval's agent calls, one line per item, beside ``results.jsonl``.

Each line is ``{"index", "question_id", "db_id", "question", "calls": [...]}`` with the calls as
`macsql.llm.traces` records them. An item's trace is written just before its result, so a kill
between the two leaves a trace whose item has no result; a resumed run drops it
(`keep_traces_of`) and runs the item again, and every item's trace appears exactly once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

TRACES_FILE = "traces.jsonl"
TRACE_KEY = "trace"
"""The key under which a worker hands an item's calls to the writer, with its result."""

_ITEM_KEYS = ("index", "question_id", "db_id", "question")


def read_traces(path: Path) -> dict[int, dict[str, Any]]:
    """Trace lines by item index; a torn line (a kill mid-write) is skipped."""
    traces: dict[int, dict[str, Any]] = {}
    if not path.is_file():
        return traces
    with path.open("rb") as f:
        for raw in f:
            try:
                line = json.loads(raw)
            except json.JSONDecodeError:
                continue
            if isinstance(line, dict) and isinstance(line.get("index"), int):
                traces[line["index"]] = line
    return traces


def keep_traces_of(path: Path, indexes: Collection[int]) -> None:
    """Rewrite the file with one trace per item in `indexes`, nothing else (before a resume)."""
    if not path.is_file():
        return
    kept = [t for i, t in sorted(read_traces(path).items()) if i in indexes]
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for trace in kept:
            f.write(json.dumps(trace, ensure_ascii=False, default=str) + "\n")
    os.replace(tmp, path)


def trace_line(record: dict[str, Any], calls: list[dict[str, Any]]) -> dict[str, Any]:
    return {**{k: record.get(k) for k in _ITEM_KEYS}, "calls": calls}


class TraceWriter:
    """Appends one JSON line per item and flushes it."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("a", encoding="utf-8")

    def write(self, record: dict[str, Any], calls: list[dict[str, Any]]) -> None:
        line = json.dumps(trace_line(record, calls), ensure_ascii=False, default=str)
        self._file.write(line + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()
