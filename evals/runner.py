"""The batch runner: a pipeline over a dataset, concurrently, resumable, scored as it goes.

For each item the runner invokes the pipeline (or, with ``gold=True``, takes the gold SQL), scores
the prediction, and appends one JSON line to ``results.jsonl``, flushed at once. Killing the
process at any moment loses at most the items in flight; ``resume=True`` reads the file back
(dropping a torn last line) and runs only the items not in it, so every item appears exactly
once. At the end it writes the official prediction file, ``summary.json``, ``summary.md`` and
``summary.png``.

``concurrency`` caps the model requests in flight (`macsql.llm.request_slots`); each process
works on some more items than its share of that cap, so that SQL execution and scoring overlap
model calls. Graph nodes are sync functions that LangGraph runs in the event loop's default
executor; the runner sizes that executor, or the pool would cap concurrency.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import importlib.util
import json
import multiprocessing
import os
import queue
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

from macsql.evals.datasets import Dataset, DatasetName, EvalItem, load_dataset
from macsql.evals.predictions import write_bird_predictions, write_spider_predictions
from macsql.evals.report import build_summary, write_reports
from macsql.evals.scoring import ItemScore, Reason, Scorer, item_score_from_json, time_ratios
from macsql.llm.cache import enable_llm_cache
from macsql.llm.request_slots import limit_model_requests

RESULTS_FILE = "results.jsonl"
RUN_FILE = "run.json"


class RunDirectoryError(RuntimeError):
    """The output directory holds another run, or a run that does not match."""


@dataclass
class EvalOptions:
    """Everything one eval run needs; the CLI fills it from its arguments."""

    dataset: str
    data_dir: str
    split: str = "dev"
    pipeline: str = "macsql"
    gold: bool = False
    limit: int | None = None
    concurrency: int = 8
    """Model requests in flight at most, over all processes. A few more items than that are in
    progress, so that their local work (SQL execution, scoring) overlaps the model's latency; in
    gold mode, with no model, it is the number of items in progress."""
    out: str = "runs/eval"
    resume: bool = False
    overwrite: bool = False
    timeout: float | None = None
    """Seconds per scoring query (official default: Spider 60, BIRD 30)."""
    keep_distinct: bool = False
    ves_iterations: int = 100
    """BIRD VES runs per query (official: 100); 0 turns VES off."""
    item_timeout: float | None = 900.0
    """Seconds one item's pipeline may take before it is recorded as failed."""
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    max_tries: int | None = None
    cache: str | None = None
    db_url: str | None = None
    progress: bool = True
    context_overrides: dict[str, Any] = field(default_factory=dict)
    processes: int = 1
    """Processes sharing the items. The pipelines are CPU-bound in Python between model calls,
    so one process saturates one core; more use more cores. Children are forked when this
    process runs no other thread (they then inherit the graph and any registered model);
    otherwise they are spawned, and the model must be a string a fresh process can resolve."""

    @property
    def mode(self) -> str:
        return "gold" if self.gold else self.pipeline

    def identity(self) -> dict[str, Any]:
        """What a resumed run must share with the run it continues."""
        return {
            "dataset": self.dataset,
            "split": self.split,
            "mode": self.mode,
            "keep_distinct": self.keep_distinct,
        }


# ---------------------------------------------------------------------------------------------
# The results file


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


class _ResultsWriter:
    """Appends one JSON line per item and flushes it, so a kill loses nothing written."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


# ---------------------------------------------------------------------------------------------
# Pipelines


def resolve_pipeline(name: str) -> Any:
    """A compiled graph by registry name, ``module:attribute`` or ``path/to/file.py:attribute``.

    An attribute that has no ``ainvoke`` is called (a factory) to get the graph.
    """
    if ":" not in name:
        from macsql.graph.registry import get_pipeline

        return get_pipeline(name)
    target, _, attr = name.rpartition(":")
    if target.endswith(".py"):
        spec = importlib.util.spec_from_file_location(Path(target).stem, target)
        if spec is None or spec.loader is None:
            raise ValueError(f"cannot load pipeline file {target}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    obj = getattr(module, attr)
    return obj if hasattr(obj, "ainvoke") else obj()


def build_context(options: EvalOptions) -> Any:
    from macsql.graph.context import Context

    values: dict[str, Any] = {"dataset_style": options.dataset}
    if options.model:
        values["model"] = options.model
    if options.base_url:
        values["base_url"] = options.base_url
    if options.api_key:
        values["api_key"] = options.api_key
    if options.max_tries is not None:
        values["max_try_times"] = options.max_tries
    values.update(options.context_overrides)
    return Context(**values)


# ---------------------------------------------------------------------------------------------
# The run


@dataclass
class RunResult:
    out_dir: Path
    summary: dict[str, Any]
    records: dict[int, dict[str, Any]]


class _Progress:
    """A rich progress bar: done, failed, running EX and ETA (silent when disabled)."""

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
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._bar = Progress(
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


def _prepare_out_dir(options: EvalOptions, out: Path) -> dict[int, dict[str, Any]]:
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
    return read_results(results) if options.resume else {}


def _base_record(item: EvalItem) -> dict[str, Any]:
    return {
        "index": item.index,
        "question_id": item.question_id,
        "db_id": item.db_id,
        "question": item.question,
        "level": item.level,
    }


def _skipped_record(item: EvalItem) -> dict[str, Any]:
    return {
        **_base_record(item),
        "prediction": "",
        "status": "skipped",
        "attempts": 0,
        "selector_used": False,
        "usage": {},
        "error": None,
        "correct": None,
        "reason": Reason.SKIPPED,
        "detail": item.skip_reason,
        "elapsed_s": 0.0,
    }


async def _predict(
    item: EvalItem, options: EvalOptions, graph: Any, context: Any
) -> dict[str, Any]:
    """Run the pipeline on one item; any failure becomes a failed record, never an exception."""
    if options.gold:
        return {
            "prediction": item.gold_sql,
            "status": "ok",
            "attempts": 0,
            "selector_used": False,
            "usage": {},
            "error": None,
            "outcome": None,
            "fallbacks": [],
        }
    payload = {"question": item.question, "evidence": item.evidence, "db": item.db}
    started = time.perf_counter()
    try:
        call = graph.ainvoke(payload, context=context)
        out = await (asyncio.wait_for(call, options.item_timeout) if options.item_timeout else call)
    except TimeoutError as exc:
        limit = options.item_timeout or 0.0
        if limit and time.perf_counter() - started >= limit:
            return _failed(f"item timed out after {limit:g}s")
        return _failed(f"TimeoutError: {exc}")
    except Exception as exc:  # a model or graph failure is this item's, not the run's
        return _failed(f"{type(exc).__name__}: {exc}")
    if not isinstance(out, dict):
        return _failed(f"pipeline returned {type(out).__name__}, not a dict")
    status = out.get("status") or ("ok" if out.get("sql") else "failed")
    return {
        "prediction": str(out.get("sql") or ""),
        "status": status,
        "attempts": int(out.get("attempts") or 0),
        "selector_used": bool(out.get("selector_used")),
        "usage": out.get("usage") or {},
        "error": out.get("error"),
        "outcome": out.get("outcome"),
        # Replies an agent could not use as asked (no SQL, unreadable JSON, cut off, ...).
        "fallbacks": out.get("fallbacks") or [],
    }


def _failed(error: str) -> dict[str, Any]:
    return {
        "prediction": "",
        "status": "failed",
        "attempts": 0,
        "selector_used": False,
        "usage": {},
        "error": error,
        "outcome": None,
        "fallbacks": [],
    }


async def run_eval(
    options: EvalOptions,
    *,
    graph: Any = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> RunResult:
    """Run (or resume) an eval; `graph` overrides the pipeline named in `options`."""
    started = time.perf_counter()
    dataset = load_dataset(
        cast(DatasetName, options.dataset), options.data_dir, options.split, db_url=options.db_url
    )
    items = dataset.items[: options.limit] if options.limit else dataset.items
    out = Path(options.out).expanduser()
    records = _prepare_out_dir(options, out)
    _write_run_file(out, options, started=True)

    if not options.gold and graph is None:
        if options.cache:
            enable_llm_cache(options.cache)
        graph = resolve_pipeline(options.pipeline)
    context = None if options.gold else build_context(options)
    scorer = Scorer(dataset.name, timeout=options.timeout, keep_distinct=options.keep_distinct)

    pending = [item for item in items if item.index not in records]
    live = [item for item in pending if not item.skipped]
    with _collector_tuned_for_batch():
        wanted = min(options.processes, len(live), options.concurrency)
        processes = 1 if options.gold else max(1, wanted)
        # Children start before this process starts any thread, so that they can be forked.
        pool = _WorkerPool(live, options, dataset.name, graph, processes) if processes > 1 else None
        # The report's chart needs matplotlib (~1 s to import): load it while items are in flight.
        threading.Thread(target=_preload_chart_modules, daemon=True).start()
        loop = asyncio.get_running_loop()
        executor = _node_executor(options.concurrency)
        loop.set_default_executor(executor)

        writer = _ResultsWriter(out / RESULTS_FILE)
        done_scope = [records[i.index] for i in items if i.index in records]
        progress = _Progress(
            options.progress,
            len(items),
            len(done_scope),
            correct=sum(1 for r in done_scope if r.get("correct")),
            scored=sum(1 for r in done_scope if r.get("correct") is not None),
            failed=sum(1 for r in done_scope if r.get("status") == "failed"),
        )

        def finish(record: dict[str, Any]) -> None:
            writer.write(record)
            records[record["index"]] = record
            progress.advance(record)
            if on_record is not None:
                on_record(record)

        try:
            for item in pending:
                if item.skipped:
                    finish(_skipped_record(item))
            if pool is None:
                share = max(1, options.concurrency)
                await _run_items(_list_source(live), options, graph, context, scorer, share, finish)
            else:
                await pool.run(context, scorer, finish)
        finally:
            progress.stop()
            writer.close()
            if pool is not None:
                pool.close()

    scope = [records[i.index] for i in items if i.index in records]
    ratios: dict[int, float] | None = None
    if dataset.name == "bird" and options.ves_iterations > 0:
        ratios = await loop.run_in_executor(
            None, _ves_ratios, scorer, items, records, options.ves_iterations
        )
    wall = time.perf_counter() - started
    run_info = _write_run_file(out, options, started=False, wall=wall)
    summary = build_summary(
        dataset,
        scope,
        options=options,
        wall_time_s=wall,
        wall_time_total_s=run_info.get("wall_time_total_s", wall),
        ves_ratios=ratios,
    )
    _write_predictions(dataset, items, records, out)
    write_reports(out, summary, dataset.levels)
    executor.shutdown(wait=False)
    return RunResult(out, summary, {r["index"]: r for r in scope})


@contextmanager
def _collector_tuned_for_batch() -> Iterator[None]:
    """Keep Python's cyclic garbage collector off the run's long-lived heap.

    Everything built before the first item (imported modules, graphs, dataset, schemas) lives
    until the end, yet every collection of the oldest generation would walk all of it again.
    `gc.freeze` moves it out of the collector's sight, and keeps its memory pages shared with
    forked children; it is undone once the items are done. No collection comes first: a full one
    walks that whole heap (~0.15 s) to free little. (Raising the collection thresholds as well
    was measured, and was slower.)
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


ItemSource = Callable[[], Awaitable["EvalItem | None"]]


def _list_source(items: list[EvalItem]) -> ItemSource:
    pending = list(reversed(items))

    async def next_item() -> EvalItem | None:
        return pending.pop() if pending else None

    return next_item


async def _run_items(
    next_item: ItemSource,
    options: EvalOptions,
    graph: Any,
    context: Any,
    scorer: Scorer,
    concurrency: int,
    emit: Callable[[dict[str, Any]], None],
) -> None:
    """`concurrency` workers take items from `next_item` until it is empty, predict and score
    each, and hand every finished record to `emit`."""
    loop = asyncio.get_running_loop()

    async def one(item: EvalItem) -> dict[str, Any]:
        t0 = time.perf_counter()
        record = {**_base_record(item), **await _predict(item, options, graph, context)}
        try:
            score: ItemScore = await loop.run_in_executor(
                None, scorer.score, item, record["prediction"]
            )
            record.update(correct=score.correct, reason=score.reason, detail=score.detail)
        except Exception as exc:  # scoring must not stop the run either
            record.update(
                correct=False, reason="scoring_error", detail=f"{type(exc).__name__}: {exc}"
            )
        record["elapsed_s"] = round(time.perf_counter() - t0, 4)
        return record

    async def worker() -> None:
        while (item := await next_item()) is not None:
            emit(await one(item))

    workers = max(1, concurrency) if options.gold else items_in_flight(concurrency)
    with limit_model_requests(max(1, concurrency)):
        await asyncio.gather(*(worker() for _ in range(workers)))


def items_in_flight(concurrency: int) -> int:
    """Items a process works on at once when `concurrency` caps its model requests: some more,
    so that while some items execute SQL, score or wait for the GIL, others fill their slots."""
    concurrency = max(1, concurrency)
    return concurrency + max(2, int(concurrency * _LOOKAHEAD))


_LOOKAHEAD = 0.5
"""Extra items per request slot. On the throughput benchmark 0.25, 0.5 and 1.0 came within 3% of
one another; none (one item per slot) was 6-9% slower."""


def _node_executor(concurrency: int) -> ThreadPoolExecutor:
    """The event loop's default executor, where LangGraph runs sync nodes. A thread per item in
    flight, plus one per request slot for fan-out nodes (R^3's reviewers) and a few for scoring:
    a smaller pool would cap the concurrency below what was asked."""
    workers = items_in_flight(concurrency) + max(1, concurrency) + 4
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="macsql-eval")


_RESULTS_POLL_S = 0.5
"""How long the parent waits on its children's results before checking they are alive."""


def _start_method() -> str:
    """``fork`` when it is safe: children then start at once, with everything this process has
    imported, built and registered (a graph object, a registered model). With another thread
    running, fork could copy a lock that thread holds, so ``spawn``."""
    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return "fork"
    return "spawn"


def _shared_source(items: list[EvalItem], position: Any) -> ItemSource:
    """Items by a counter that every process advances: a process that starts late or runs
    slow simply takes fewer. Taking one costs a lock held for an increment, so no thread."""

    async def next_item() -> EvalItem | None:
        with position.get_lock():
            taken = position.value
            position.value = taken + 1
        return items[taken] if taken < len(items) else None

    return next_item


def _request_shares(concurrency: int, processes: int) -> list[int]:
    """Each process's request slots, this one's first: as even as can be, adding up to
    `concurrency` (the caller runs no more processes than that)."""
    base, extra = divmod(max(processes, concurrency), processes)
    return [base + (1 if i < extra else 0) for i in range(processes)]


class _WorkerPool:
    """This process plus `processes - 1` children work through `items`; one writer here."""

    def __init__(
        self,
        items: list[EvalItem],
        options: EvalOptions,
        dataset_name: str,
        graph: Any,
        processes: int,
    ) -> None:
        self.items = items
        self.options = options
        self.graph = graph
        self.method = _start_method()
        ctx: Any = multiprocessing.get_context(self.method)
        shares = _request_shares(options.concurrency, processes)
        self.share = shares[0]
        self.position = ctx.Value("q", 0)
        self.results: Any = ctx.Queue()
        # A forked child shares this process's memory, so it gets the graph object itself;
        # a spawned one resolves the pipeline by name.
        inherited = graph if self.method == "fork" else None
        self.children = [
            ctx.Process(
                target=_child_main,
                args=(
                    options,
                    dataset_name,
                    items,
                    inherited,
                    self.position,
                    share,
                    self.results,
                ),
                daemon=True,
            )
            for share in shares[1:]
        ]
        for child in self.children:
            child.start()

    async def run(
        self, context: Any, scorer: Scorer, emit: Callable[[dict[str, Any]], None]
    ) -> None:
        loop = asyncio.get_running_loop()
        expected = len(self.items)
        done = [0]

        def emit_counted(record: dict[str, Any]) -> None:
            done[0] += 1
            emit(record)

        async def collect() -> None:
            while done[0] < expected:
                try:
                    record = await loop.run_in_executor(
                        None, self.results.get, True, _RESULTS_POLL_S
                    )
                except queue.Empty:
                    if not any(c.is_alive() for c in self.children) and self.results.empty():
                        return  # a child died: what it had taken stays for --resume
                    continue
                if record is not None:  # None only wakes this loop; see mine()
                    emit_counted(record)

        async def mine() -> None:
            source = _shared_source(self.items, self.position)
            try:
                await _run_items(
                    source, self.options, self.graph, context, scorer, self.share, emit_counted
                )
            finally:
                # When this process's item is the run's last one, the collector is blocked on
                # the queue; wake it now rather than when its poll times out.
                self.results.put(None)

        await asyncio.gather(mine(), collect())
        if done[0] < expected:
            print(
                f"warning: {expected - done[0]} items were not finished by a worker process; "
                "run again with --resume to complete them",
                file=sys.stderr,
            )

    def close(self) -> None:
        for child in self.children:
            child.join(timeout=5)
            if child.is_alive():
                child.terminate()


def _child_main(
    options: EvalOptions,
    dataset_name: str,
    items: list[EvalItem],
    graph: Any,
    position: Any,
    concurrency: int,
    results: Any,
) -> None:
    """A worker process: the same pipeline and scorer on the items it takes."""
    if options.cache:
        enable_llm_cache(options.cache)
    if graph is None:
        graph = resolve_pipeline(options.pipeline)
    context = build_context(options)
    scorer = Scorer(dataset_name, timeout=options.timeout, keep_distinct=options.keep_distinct)

    async def main() -> None:
        asyncio.get_running_loop().set_default_executor(_node_executor(concurrency))
        source = _shared_source(items, position)
        await _run_items(source, options, graph, context, scorer, concurrency, results.put)

    asyncio.run(main())


def _preload_chart_modules() -> None:
    import matplotlib.backends.backend_agg
    import matplotlib.figure  # noqa: F401


def _ves_ratios(
    scorer: Scorer, items: list[EvalItem], records: dict[int, dict[str, Any]], iterations: int
) -> dict[int, float]:
    pairs = [(item, records[item.index]["prediction"]) for item in items if item.index in records]
    scores = [
        item_score_from_json({**records[item.index], "hardness": item.level}) for item, _ in pairs
    ]
    return time_ratios(scorer, pairs, scores, iterations)


def _write_predictions(
    dataset: Dataset, items: list[EvalItem], records: dict[int, dict[str, Any]], out: Path
) -> Path:
    def sql_of(item: EvalItem) -> str:
        return (records.get(item.index) or {}).get("prediction") or ""

    if dataset.name == "bird":
        return write_bird_predictions(
            out / f"predict_{dataset.split}.json",
            {item.index: (sql_of(item), item.db_id) for item in items},
        )
    return write_spider_predictions(out / "pred.sql", [sql_of(item) for item in items])


def _write_run_file(
    out: Path, options: EvalOptions, *, started: bool, wall: float = 0.0
) -> dict[str, Any]:
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
    else:
        info["wall_time_total_s"] = round(float(info.get("wall_time_total_s", 0.0)) + wall, 3)
    tmp = path.with_name(RUN_FILE + ".tmp")
    tmp.write_text(json.dumps(info, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return info


def run_eval_sync(options: EvalOptions, *, graph: Any = None) -> RunResult:
    """`run_eval` in a fresh event loop."""
    return asyncio.run(run_eval(options, graph=graph))
