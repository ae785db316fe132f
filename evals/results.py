"""A run's files: ``results.jsonl`` (one line per item, appended and flushed as it finishes),
``run.json`` (what the run is, how often it was invoked, its wall time) and the official
prediction file. Whole files are replaced atomically; the results file is only appended to, and
a torn last line is cut when it is read back."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from macsql.database.atomic_files import write_text_atomically
from macsql.evals.datasets import Dataset, EvalItem
from macsql.evals.options import EvalOptions
from macsql.evals.predictions import write_bird_predictions, write_spider_predictions
from macsql.evals.run_health import unpredicted
from macsql.evals.run_provenance import run_provenance

RESULTS_FILE = "results.jsonl"
RUN_FILE = "run.json"


class RunDirectoryError(RuntimeError):
    """The output directory holds another run, or a run that does not match."""


def read_results(path: Path, *, repair: bool = True) -> dict[int, dict[str, Any]]:
    """Records by item index. A torn last line (a kill mid-write) is dropped and, with
    `repair`, cut from the file so that appending continues on a clean line."""
    if not path.is_file():
        return {}
    data = path.read_bytes()
    records: dict[int, dict[str, Any]] = {}
    good_end = 0
    offset = 0
    for raw in data.splitlines(keepends=True):
        end = offset + len(raw)
        complete = raw.endswith(b"\n")
        try:
            record = json.loads(raw) if complete else None
        except json.JSONDecodeError:
            record = None
        if isinstance(record, dict) and "index" in record:
            records[int(record["index"])] = record
            good_end = end
        elif complete and not raw.strip():
            good_end = end
        offset = end
    if repair and good_end < len(data):
        with path.open("r+b") as f:
            f.truncate(good_end)
    return records


class ResultsWriter:
    """Appends one JSON line per item and flushes it, so a kill loses nothing written."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def prepare_out_dir(options: EvalOptions, out: Path) -> dict[int, dict[str, Any]]:
    """Create `out`, or clear it (`overwrite`), or check that it continues this run (`resume`):
    the records already done, by item index."""
    out.mkdir(parents=True, exist_ok=True)
    results = out / RESULTS_FILE
    run_file = out / RUN_FILE
    if options.overwrite:
        for name in (RESULTS_FILE, RUN_FILE):
            (out / name).unlink(missing_ok=True)
    elif results.exists() and not options.resume:
        raise RunDirectoryError(
            f"{out} already holds a run; pass --resume to continue it or --overwrite to start again"
        )
    if options.resume and run_file.is_file():
        previous = json.loads(run_file.read_text(encoding="utf-8"))
        mine = options.identity()
        differs = {k: (previous.get(k), v) for k, v in mine.items() if previous.get(k) != v}
        if differs:
            raise RunDirectoryError(f"cannot resume {out}: the run differs in {differs}")
    if not options.resume:
        return {}
    records = read_results(results)
    retry = {index for index, record in records.items() if unpredicted(record)}
    if retry:
        # Items whose model call or database failed run again; their old lines go, so that
        # each item keeps exactly one line.
        kept = [records[i] for i in sorted(records) if i not in retry]
        lines = "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in kept)
        write_text_atomically(results, lines)
        records = {r["index"]: r for r in kept}
    return records


def _add_provenance(info: dict[str, Any], record: dict[str, Any]) -> None:
    """Keep each distinct provenance of the run's invocations, in order: a run resumed at
    another commit or with other settings has more than one, which the export reports."""
    seen = info.get("provenance")
    history = seen if isinstance(seen, list) else []
    if not history or history[-1] != record:
        history.append(record)
    info["provenance"] = history


def write_run_file(
    out: Path, options: EvalOptions, *, started: bool, wall: float = 0.0
) -> dict[str, Any]:
    """Update ``run.json``: count an invocation when a run starts, add its wall time when it
    ends. The API key is never written."""
    path = out / RUN_FILE
    info: dict[str, Any] = {}
    if path.is_file():
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            info = {}
    options_json = {k: v for k, v in asdict(options).items() if k != "api_key"}
    info.update(options.identity())
    info["options"] = options_json
    if started:
        info["invocations"] = int(info.get("invocations", 0)) + 1
        _add_provenance(info, run_provenance(None if options.gold else options.context()))
    else:
        info["wall_time_total_s"] = round(float(info.get("wall_time_total_s", 0.0)) + wall, 3)
    write_text_atomically(path, json.dumps(info, indent=2, default=str) + "\n")
    return info


def write_predictions(
    dataset: Dataset, items: list[EvalItem], records: dict[int, dict[str, Any]], out: Path
) -> Path:
    """The official prediction file of the items (BIRD ``predict_<split>.json``, Spider
    ``pred.sql``); an item with no record gets the empty prediction."""

    def sql_of(item: EvalItem) -> str:
        return (records.get(item.index) or {}).get("prediction") or ""

    if dataset.name == "bird":
        return write_bird_predictions(
            out / f"predict_{dataset.split}.json",
            {item.index: (sql_of(item), item.db_id) for item in items},
        )
    return write_spider_predictions(out / "pred.sql", [sql_of(item) for item in items])
