"""The batch runner: a pipeline over a dataset, concurrently, resumable, scored as it goes.

For each item the runner invokes the pipeline (or, with ``gold=True``, takes the gold SQL), scores
the prediction, and appends one JSON line to ``results.jsonl``, flushed at once. Killing the
process at any moment loses at most the items in flight; ``resume=True`` reads the file back
(dropping a torn last line) and runs only the items not in it, so every item appears exactly
once. At the end it writes the official prediction file, ``summary.json``, ``summary.md`` and
``summary.svg``.

SParC and CoSQL, whose items are the turns of conversations, run through
`conversation_runner` instead (an interaction per thread, its turns in order).

This module orchestrates; the parts are their own modules: `options` (what a run is asked to do,
and its Context), `results` (the run's files), `item_records` (one item's prediction and score),
`scheduler` (items in flight, worker processes, request slots, the collector) and `progress`.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from macsql.evals.conversation_report import write_conversation_reports
from macsql.evals.conversation_runner import run_conversations
from macsql.evals.datasets import DatasetName, EvalItem, load_dataset
from macsql.evals.item_records import skipped_record
from macsql.evals.lifetimes import lock_run_directory
from macsql.evals.options import EvalOptions
from macsql.evals.progress import Progress
from macsql.evals.report import build_summary, write_reports
from macsql.evals.results import (
    RESULTS_FILE,
    ResultsWriter,
    prepare_out_dir,
    read_results,
    write_predictions,
    write_run_file,
)
from macsql.evals.run_health import FailureWatch, run_problem, unpredicted
from macsql.evals.scheduler import (
    WorkerPool,
    collector_tuned_for_batch,
    list_source,
    node_executor,
    run_items,
    until_stopped,
)
from macsql.evals.scoring import Scorer, item_score_from_json, time_ratios
from macsql.evals.trace_file import TRACE_KEY, TRACES_FILE, TraceWriter, keep_traces_of
from macsql.graph.registry import resolve_pipeline
from macsql.llm.cache import enable_llm_cache


@dataclass
class RunResult:
    out_dir: Path
    summary: dict[str, Any]
    records: dict[int, dict[str, Any]]


class EvalInterrupted(Exception):
    """The run was interrupted (Ctrl-C): every finished item is in `results.jsonl`, and the same
    command with `--resume` runs the others."""

    def __init__(self, out_dir: Path, done: int, total: int) -> None:
        super().__init__(
            f"interrupted: {done} of {total} items are in {out_dir / RESULTS_FILE}; run the same "
            "command again with --resume to finish the others"
        )
        self.out_dir, self.done, self.total = out_dir, done, total


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
    out = Path(options.out).expanduser()
    lock = lock_run_directory(out)  # before anything in `out` is read, cleared or written
    try:
        return await _run_locked(options, dataset, out, started, graph, on_record)
    except asyncio.CancelledError:
        items = dataset.items[: options.limit] if options.limit else dataset.items
        done = len(read_results(out / RESULTS_FILE, repair=False))
        raise EvalInterrupted(out, done, len(items)) from None
    finally:
        lock.close()


async def _run_locked(
    options: EvalOptions,
    dataset: Any,
    out: Path,
    started: float,
    graph: Any,
    on_record: Callable[[dict[str, Any]], None] | None,
) -> RunResult:
    if dataset.is_conversational:  # SParC, CoSQL: interactions on threads, not items
        summary, scored = await run_conversations(options, dataset, out, started, graph, on_record)
        write_conversation_reports(out, summary, dataset.levels)
        return RunResult(out, summary, scored)
    items = dataset.items[: options.limit] if options.limit else dataset.items
    servers = await _server_pipeline(options) if options.servers and not options.gold else None
    if servers is not None and graph is None:
        graph = servers[0]
    records = prepare_out_dir(options, out)
    keep_traces_of(out / TRACES_FILE, records)  # a trace whose item has no result is rerun
    write_run_file(out, options, started=True)

    if not options.gold and graph is None:
        if options.cache:
            enable_llm_cache(options.cache)
        graph = resolve_pipeline(options.pipeline)
    context = None if options.gold else options.context()
    scorer = options.scorer(dataset.name, context)

    pending = [item for item in items if item.index not in records]
    live = [item for item in pending if not item.skipped]
    with collector_tuned_for_batch():
        wanted = min(options.processes, len(live), options.concurrency)
        # Through servers this process only waits: the servers' workers do the work.
        processes = 1 if options.gold or servers else max(1, wanted)
        # Children start before this process starts any thread, so that they can be forked.
        pool = WorkerPool(live, options, dataset.name, graph, processes) if processes > 1 else None
        loop = asyncio.get_running_loop()
        executor = node_executor(options.concurrency)
        loop.set_default_executor(executor)

        writer = ResultsWriter(out / RESULTS_FILE)
        tracer = TraceWriter(out / TRACES_FILE) if options.traces and not options.gold else None
        progress = Progress.resuming(
            options.progress, len(items), [records[i.index] for i in items if i.index in records]
        )

        watch = FailureWatch(0 if options.gold else options.stop_after_failures)

        def stopped() -> bool:
            return watch.tripped or (servers is not None and servers[1].gave_up is not None)

        def finish(record: dict[str, Any]) -> None:
            calls = record.pop(TRACE_KEY, None)
            if tracer is not None and calls is not None:
                tracer.write(record, calls)  # first: a result never lacks its trace
            writer.write(record)
            records[record["index"]] = record
            progress.advance(record)
            if on_record is not None:
                on_record(record)
            if watch.see(record) and pool is not None:
                pool.stop()

        interrupted = False
        try:
            for item in pending:
                if item.skipped:
                    finish(skipped_record(item))
            if pool is None:
                share = max(1, options.concurrency)
                source = until_stopped(list_source(live), stopped)
                await run_items(source, options, graph, context, scorer, share, finish)
            else:
                await pool.run(context, scorer, finish)
        except asyncio.CancelledError:
            interrupted = True
            raise
        finally:
            progress.stop()
            writer.close()
            if tracer is not None:
                tracer.close()
            if pool is not None:
                pool.close(at_once=interrupted)
            if interrupted:  # nodes still running in threads: nobody waits for them
                executor.shutdown(wait=False, cancel_futures=True)
            if servers is not None:
                await servers[1].aclose()

    scope = [records[i.index] for i in items if i.index in records]
    ratios: dict[int, float] | None = None
    if dataset.name == "bird" and options.ves_iterations > 0:
        ratios = await loop.run_in_executor(
            None, _ves_ratios, scorer, items, records, options.ves_iterations
        )
    wall = time.perf_counter() - started
    run_info = write_run_file(out, options, started=False, wall=wall)
    summary = build_summary(
        dataset,
        scope,
        options=options,
        wall_time_s=wall,
        wall_time_total_s=run_info.get("wall_time_total_s", wall),
        ves_ratios=ratios,
    )
    stop_reason = watch.reason
    if stop_reason is None and servers is not None and servers[1].gave_up:
        stop_reason = f"stopped early: {servers[1].gave_up}"
    summary["stopped_early"] = stop_reason
    summary["problem"] = run_problem(scope, n_items=len(items), stopped=stop_reason)
    summary["unpredicted"] = len(items) - len(scope) + sum(unpredicted(r) for r in scope)
    write_predictions(dataset, items, records, out)
    write_reports(out, summary, dataset.levels)
    executor.shutdown(wait=False)
    return RunResult(out, summary, {r["index"]: r for r in scope})


async def _server_pipeline(options: EvalOptions) -> tuple[Any, Any]:
    """The pipeline on `options.servers`, checked to be served there (`NoServerAnswers` when
    it is not), and the client whose `gave_up` says when no server answers any more."""
    from macsql.serving.client import ServerGraph, ServerRuns

    runs = ServerRuns(
        options.servers,
        concurrency=options.concurrency,
        token=options.server_token,
        retries=options.server_retries,
    )
    try:
        await runs.check(options.pipeline)
    except BaseException:
        await runs.aclose()
        raise
    return ServerGraph(runs, options.pipeline), runs


def run_eval_sync(options: EvalOptions, *, graph: Any = None) -> RunResult:
    """`run_eval` in a fresh event loop. The first Ctrl-C (SIGINT) cancels the run: the items
    in flight stop, the files are closed as they are, worker processes end, and
    `EvalInterrupted` says how far it got; the loop does not wait for nodes still running in
    threads (a second Ctrl-C is Python's own)."""
    loop = asyncio.new_event_loop()
    try:
        main = loop.create_task(run_eval(options, graph=graph))
        with _cancel_on_interrupt(loop, main):
            result = loop.run_until_complete(main)
        loop.run_until_complete(loop.shutdown_asyncgens())
        return result
    finally:
        asyncio.set_event_loop(None)
        loop.close()  # its executor is shut down without waiting


@contextlib.contextmanager
def _cancel_on_interrupt(
    loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]
) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(_signum: int, _frame: object) -> None:
        signal.signal(signal.SIGINT, previous)  # the next Ctrl-C is Python's own
        loop.call_soon_threadsafe(task.cancel)

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _ves_ratios(
    scorer: Scorer, items: list[EvalItem], records: dict[int, dict[str, Any]], iterations: int
) -> dict[int, float]:
    pairs = [(item, records[item.index]["prediction"]) for item in items if item.index in records]
    scores = [
        item_score_from_json({**records[item.index], "hardness": item.level}) for item, _ in pairs
    ]
    return time_ratios(scorer, pairs, scores, iterations)
