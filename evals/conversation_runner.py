"""The batch runner for SParC and CoSQL: each interaction is one conversation thread.

An interaction's turns go through the chosen pipeline one after the other, on one LangGraph
thread (a checkpointer keeps it, as for a user of `macsql chat` or of the server), so that each
follow-up is made standalone by the same `contextualize` node a user gets, from the thread's
own record of the earlier turns. Interactions run concurrently; the turns of one never do.

What the thread holds as the earlier turns' SQL is the run's `previous_sql`:

- ``own`` (the default): the model's own SQL, what a user experiences;
- ``gold``: teacher forcing, for diagnosis: before each follow-up, the previous turn's SQL on
  the thread is replaced by its gold SQL (the rewriter and the writer see the gold).

A turn whose run fails outside the graph (its `--item-timeout`, an exception) stays in the
thread as failed (`nodes.thread_turns`), as a killed run in `macsql chat` does.

Each turn is one record in ``results.jsonl``, scored by execution (the Spider scorer) and exact
set match (`exact_match`). Resuming reruns, from its first turn, every interaction not wholly
recorded. At the end: the official predictions file ``pred.txt`` (one SQL per line, an empty
line after each interaction), ``summary.json`` / ``.md`` / ``.svg``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from macsql.evals.datasets import Dataset, EvalItem, Interaction
from macsql.evals.exact_match import ExactMatcher
from macsql.evals.interaction_scoring import exact_match_of, summarize_interactions
from macsql.evals.item_records import predict_and_score, skipped_record
from macsql.evals.options import EvalOptions
from macsql.evals.predictions import write_interaction_predictions
from macsql.evals.progress import Progress
from macsql.evals.report import build_summary
from macsql.evals.results import RESULTS_FILE, ResultsWriter, prepare_out_dir, write_run_file
from macsql.evals.run_health import FailureWatch, run_problem
from macsql.evals.scheduler import collector_tuned_for_batch, items_in_flight, node_executor
from macsql.evals.scoring import Scorer
from macsql.evals.trace_file import TRACE_KEY, TRACES_FILE, TraceWriter, keep_traces_of
from macsql.graph.registry import PIPELINES, get_builder, resolve_pipeline
from macsql.graph.routing import CLOSE_TURN
from macsql.llm.cache import enable_llm_cache
from macsql.llm.request_slots import limit_model_requests
from macsql.memory.threads import PruningInMemorySaver
from macsql.nodes.common.close_turn import failed_turn

PREDICTIONS_FILE = "pred.txt"
PREVIOUS_SQL = {
    "own": "own (each follow-up sees the model's own SQL of the earlier turns)",
    "gold": "gold (teacher forcing: each follow-up sees the gold SQL of the earlier turns)",
}

Emit = Callable[[dict[str, Any]], None]


def threaded_pipeline(name: str, graph: Any = None) -> Any:
    """The pipeline compiled with a checkpointer that keeps each thread's newest checkpoint
    only; a graph object (or a ``module:attr`` one) is copied with that checkpointer."""
    saver = PruningInMemorySaver()
    if graph is None and name in PIPELINES:
        return get_builder(name).compile(checkpointer=saver, name=name)
    graph = graph if graph is not None else resolve_pipeline(name)
    copy = getattr(graph, "copy", None)
    if copy is None:
        raise TypeError(f"pipeline {name!r} is not a LangGraph graph: a conversation needs one")
    return copy(update={"checkpointer": saver})


async def _set_previous_sql(graph: Any, config: dict[str, Any], sql: str) -> None:
    """Teacher forcing: the thread's record of the previous turn gets `sql` (its gold)."""
    values = (await graph.aget_state(config)).values
    turns = list(values.get("turns") or [])
    if not turns:
        return
    turns[-1] = {**turns[-1], "sql": sql, "outcome": "ok"}
    await graph.aupdate_state(config, {"turns": turns, "sql": sql}, as_node=CLOSE_TURN)


async def _record_if_unfinished(
    graph: Any, config: dict[str, Any], question: str, error: str | None, history_turns: int
) -> None:
    """A turn whose run did not end (a timeout, an exception) is written into the thread as
    failed, as `close_turn` would have: the next turn's rewriter is told so."""
    snapshot = await graph.aget_state(config)
    values = snapshot.values
    opened = bool(values.get("thread_turn")) and values.get("asked") == question
    if not snapshot.next and not opened and values.get("asked") == question:
        return  # the graph closed the turn itself
    turns = list(values.get("turns") or [])
    failed = failed_turn(question, error or "the run did not finish")
    if opened and turns:  # `contextualize` recorded it, with its standalone question
        turns[-1] = {**turns[-1], "sql": "", "outcome": failed["outcome"]}
    else:
        turns.append(failed)
    update = {
        "turns": turns[-(history_turns + 1) :],
        "asked": question,
        "thread_turn": False,
        "sql": "",
        "status": "failed",
        "outcome": "not_run",
        "error": error,
    }
    await graph.aupdate_state(config, update, as_node=CLOSE_TURN)


class _Turns:
    """What every interaction of a run shares: options, graph, context, scorers, emit."""

    def __init__(
        self,
        options: EvalOptions,
        graph: Any,
        context: Any,
        scorer: Scorer,
        matcher: ExactMatcher,
        emit: Emit,
    ) -> None:
        self.options, self.graph, self.context = options, graph, context
        self.scorer, self.matcher, self.emit = scorer, matcher, emit
        self.threads = graph is not None and CLOSE_TURN in getattr(graph, "nodes", {})
        self.history_turns = int(getattr(context, "history_turns", 6) or 6)

    async def interaction(self, interaction: Interaction) -> None:
        if self.graph is None:  # gold mode: no model, no thread
            for item in interaction.turns:
                self.emit(await self.turn(item, None))
            return
        thread = f"{interaction.index}-{uuid.uuid4().hex[:8]}"
        config: dict[str, Any] = {"configurable": {"thread_id": thread}}
        try:
            previous: EvalItem | None = None
            for item in interaction.turns:
                if previous is not None and self.options.previous_sql == "gold" and self.threads:
                    await _set_previous_sql(self.graph, config, previous.gold_sql)
                self.emit(await self.turn(item, config))
                previous = item
        finally:
            self.graph.checkpointer.delete_thread(thread)

    async def turn(self, item: EvalItem, config: dict[str, Any] | None) -> dict[str, Any]:
        t0 = time.perf_counter()
        record = await predict_and_score(
            item, self.options, self.graph, self.context, self.scorer, config
        )
        if config is not None and self.threads:
            await _record_if_unfinished(
                self.graph, config, item.question, record.get("error"), self.history_turns
            )
        exact = None
        if record.get("correct") is not None:
            exact = await asyncio.get_running_loop().run_in_executor(
                None, exact_match_of, self.matcher, item, record.get("prediction") or ""
            )
        record.update(interaction=item.interaction, turn=item.turn, exact=exact)
        record["elapsed_s"] = round(time.perf_counter() - t0, 4)
        return record


def _conversation_record(item: EvalItem, record: dict[str, Any]) -> dict[str, Any]:
    return {**record, "interaction": item.interaction, "turn": item.turn, "exact": None}


async def run_conversations(
    options: EvalOptions,
    dataset: Dataset,
    out: Path,
    started: float,
    graph: Any,
    on_record: Callable[[dict[str, Any]], None] | None,
) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
    """Run (or resume) a SParC / CoSQL eval in `out` (locked by the caller); its summary and
    its records by turn index."""
    interactions = dataset.interactions[: options.limit] if options.limit else dataset.interactions
    items = [t for i in interactions for t in i.turns]
    records = prepare_out_dir(options, out)
    pending = [i for i in interactions if not all(t.index in records for t in i.turns)]
    for interaction in pending:  # a partly recorded interaction runs again from its first turn
        for t in interaction.turns:
            records.pop(t.index, None)
    keep_traces_of(out / TRACES_FILE, records)
    write_run_file(out, options, started=True)

    if not options.gold:
        if options.cache:
            enable_llm_cache(options.cache)
        graph = threaded_pipeline(options.pipeline, graph)
    else:
        graph = None
    context = None if options.gold else options.context()
    scorer = options.scorer(dataset.name, context)
    matcher = ExactMatcher(dataset.tables)
    live = [i for i in pending if not i.skip_reason]

    with collector_tuned_for_batch():
        loop = asyncio.get_running_loop()
        executor = node_executor(options.concurrency)
        loop.set_default_executor(executor)
        writer = ResultsWriter(out / RESULTS_FILE)
        tracer = TraceWriter(out / TRACES_FILE) if options.traces and not options.gold else None
        progress = Progress.resuming(
            options.progress, len(items), [records[i.index] for i in items if i.index in records]
        )
        watch = FailureWatch(0 if options.gold else options.stop_after_failures)

        def finish(record: dict[str, Any]) -> None:
            calls = record.pop(TRACE_KEY, None)
            if tracer is not None and calls is not None:
                tracer.write(record, calls)  # first: a result never lacks its trace
            writer.write(record)
            records[record["index"]] = record
            progress.advance(record)
            if on_record is not None:
                on_record(record)
            watch.see(record)

        turns = _Turns(options, graph, context, scorer, matcher, finish)
        queue = list(reversed(live))

        async def worker() -> None:
            while queue and not watch.tripped:
                await turns.interaction(queue.pop())

        try:
            for interaction in pending:
                if interaction.skip_reason:
                    for item in interaction.turns:
                        finish(_conversation_record(item, skipped_record(item)))
            share = max(1, options.concurrency)
            workers = share if options.gold else items_in_flight(share)
            with limit_model_requests(share):
                await asyncio.gather(*(worker() for _ in range(max(1, min(workers, len(live))))))
        finally:
            progress.stop()
            writer.close()
            if tracer is not None:
                tracer.close()

    scope = [records[i.index] for i in items if i.index in records]
    wall = time.perf_counter() - started
    run_info = write_run_file(out, options, started=False, wall=wall)
    summary = build_summary(
        dataset,
        scope,
        options=options,
        wall_time_s=wall,
        wall_time_total_s=run_info.get("wall_time_total_s", wall),
    )
    summary["previous_sql"] = (
        "gold (no model)" if options.gold else PREVIOUS_SQL[options.previous_sql]
    )
    if graph is not None and not turns.threads:
        summary["previous_sql"] += "; not applied: this pipeline keeps no turns on its thread"
    summary["conversations"] = summarize_interactions(interactions, records)
    summary["stopped_early"] = watch.reason
    summary["problem"] = run_problem(scope, n_items=len(items), stopped=watch.reason)
    write_interaction_predictions(
        out / PREDICTIONS_FILE,
        [
            [(records.get(t.index) or {}).get("prediction") or "" for t in i.turns]
            for i in interactions
        ],
    )
    executor.shutdown(wait=False)
    return summary, {r["index"]: r for r in scope}
