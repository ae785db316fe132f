"""Who works on which item, when: the items in flight per process, the event loop's thread pool,
the worker processes (forked or spawned) and their split of the model-request slots, and the
garbage collector's freeze for the length of a run.

``concurrency`` caps the model requests in flight (`macsql.llm.request_slots`); each process
works on some more items than its share of that cap, so that SQL execution and scoring overlap
model calls. Graph nodes are sync functions that LangGraph runs in the event loop's default
executor; `node_executor` sizes that executor, or the pool would cap concurrency.
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import os
import queue
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from macsql.core.worker_threads import idle_workers
from macsql.database.watchdog import WATCHDOG
from macsql.evals.datasets import EvalItem
from macsql.evals.item_records import predict_and_score
from macsql.evals.lifetimes import die_with_parent
from macsql.evals.options import EvalOptions
from macsql.evals.scoring import Scorer
from macsql.graph.registry import resolve_pipeline
from macsql.llm.cache import enable_llm_cache
from macsql.llm.request_slots import limit_model_requests
from macsql.serving.errors import NoServerAnswers

Emit = Callable[[dict[str, Any]], None]
ItemSource = Callable[[], Awaitable["EvalItem | None"]]


@contextmanager
def collector_tuned_for_batch() -> Iterator[None]:
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


def list_source(items: list[EvalItem]) -> ItemSource:
    """The items in order, for one process."""
    pending = list(reversed(items))

    async def next_item() -> EvalItem | None:
        return pending.pop() if pending else None

    return next_item


def until_stopped(source: ItemSource, stopped: Callable[[], bool]) -> ItemSource:
    """`source`, giving no more items once `stopped()` is true (items in flight finish)."""

    async def next_item() -> EvalItem | None:
        return None if stopped() else await source()

    return next_item


def shared_source(items: list[EvalItem], position: Any) -> ItemSource:
    """Items by a counter that every process advances: a process that starts late or runs
    slow simply takes fewer. Taking one costs a lock held for an increment, so no thread."""

    async def next_item() -> EvalItem | None:
        with position.get_lock():
            taken = position.value
            position.value = taken + 1
        return items[taken] if taken < len(items) else None

    return next_item


async def run_items(
    next_item: ItemSource,
    options: EvalOptions,
    graph: Any,
    context: Any,
    scorer: Scorer,
    concurrency: int,
    emit: Emit,
) -> None:
    """Workers take items from `next_item` until it is empty, predict and score each, and hand
    every finished record to `emit`; `concurrency` caps this process's model requests."""

    async def worker() -> None:
        while (item := await next_item()) is not None:
            try:
                record = await predict_and_score(item, options, graph, context, scorer)
            except NoServerAnswers:
                continue  # no server ran it: no record, so that --resume runs it
            emit(record)

    workers = max(1, concurrency) if options.gold else items_in_flight(concurrency)
    with limit_model_requests(max(1, concurrency)):
        await asyncio.gather(*(worker() for _ in range(workers)))


def items_in_flight(concurrency: int) -> int:
    """Items a process works on at once when `concurrency` caps its model requests: some more,
    so that while some items execute SQL, score or wait for the GIL, others fill their slots."""
    concurrency = max(1, concurrency)
    return concurrency + max(2, int(concurrency * LOOKAHEAD))


LOOKAHEAD = 0.5
"""Extra items per request slot. On the throughput benchmark 0.25, 0.5 and 1.0 came within 3% of
one another; none (one item per slot) was 6-9% slower."""


def node_executor(concurrency: int) -> ThreadPoolExecutor:
    """The event loop's default executor, where LangGraph runs sync nodes. A thread per item in
    flight, plus one per request slot for fan-out nodes (R^3's reviewers) and a few for scoring:
    a smaller pool would cap the concurrency below what was asked."""
    workers = items_in_flight(concurrency) + max(1, concurrency) + 4
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="macsql-eval")


RESULTS_POLL_S = 0.5
"""How long the parent waits on its children's results before checking they are alive."""


def start_method() -> str:
    """``fork`` when it is safe: children then start at once, with everything this process has
    imported, built and registered (a graph object, a registered model). With another thread
    running, fork could copy a lock that thread holds, so ``spawn``; idle deadline workers
    (`macsql.core.worker_threads`) and a query watchdog with no alarm armed hold none, and the
    child starts with no pool threads and no watchdog of its own."""
    others = threading.active_count() - 1 - idle_workers() - WATCHDOG.idle_threads()
    if "fork" in multiprocessing.get_all_start_methods() and others <= 0:
        return "fork"
    return "spawn"


def request_shares(concurrency: int, processes: int) -> list[int]:
    """Each process's request slots, this one's first: as even as can be, adding up to
    `concurrency` (the caller runs no more processes than that)."""
    base, extra = divmod(max(processes, concurrency), processes)
    return [base + (1 if i < extra else 0) for i in range(processes)]


class WorkerPool:
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
        self.method = start_method()
        ctx: Any = multiprocessing.get_context(self.method)
        shares = request_shares(options.concurrency, processes)
        self.share = shares[0]
        self.position = ctx.Value("q", 0)
        self.stopped = False
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
                    os.getpid(),
                ),
                daemon=True,
            )
            for share in shares[1:]
        ]
        for child in self.children:
            child.start()

    async def run(self, context: Any, scorer: Scorer, emit: Emit) -> None:
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
                        None, self.results.get, True, RESULTS_POLL_S
                    )
                except queue.Empty:
                    if not any(c.is_alive() for c in self.children) and self.results.empty():
                        return  # a child died: what it had taken stays for --resume
                    continue
                if record is not None:  # None only wakes this loop; see mine()
                    emit_counted(record)

        async def mine() -> None:
            source = shared_source(self.items, self.position)
            try:
                await run_items(
                    source, self.options, self.graph, context, scorer, self.share, emit_counted
                )
            finally:
                # When this process's item is the run's last one, the collector is blocked on
                # the queue; wake it now rather than when its poll times out.
                self.results.put(None)

        await asyncio.gather(mine(), collect())
        if done[0] < expected and not self.stopped:
            print(
                f"warning: {expected - done[0]} items were not finished by a worker process; "
                "run again with --resume to complete them",
                file=sys.stderr,
            )

    def stop(self) -> None:
        """Hand out no more items, in any process; the items in flight finish."""
        self.stopped = True
        with self.position.get_lock():
            self.position.value = len(self.items)

    def close(self, *, at_once: bool = False) -> None:
        """Wait for the children (5 s each), or, `at_once` (an interrupted run), end them now.
        Either way this process's end of the results queue is let go without flushing it: a
        record nobody will read must not hold the process at exit."""
        for child in self.children:
            if at_once:
                child.terminate()
            child.join(timeout=1 if at_once else 5)
            if child.is_alive():
                child.kill() if at_once else child.terminate()
        self.results.cancel_join_thread()
        self.results.close()


def _child_main(
    options: EvalOptions,
    dataset_name: str,
    items: list[EvalItem],
    graph: Any,
    position: Any,
    concurrency: int,
    results: Any,
    parent_pid: int,
) -> None:
    """A worker process: the same pipeline and scorer on the items it takes."""
    die_with_parent(parent_pid)
    # Ctrl-C reaches the whole process group: the parent decides, and ends this process.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if options.cache:
        enable_llm_cache(options.cache)
    if graph is None:
        graph = resolve_pipeline(options.pipeline)
    context = options.context()
    scorer = options.scorer(dataset_name, context)

    async def main() -> None:
        asyncio.get_running_loop().set_default_executor(node_executor(concurrency))
        source = shared_source(items, position)
        await run_items(source, options, graph, context, scorer, concurrency, results.put)

    asyncio.run(main())
