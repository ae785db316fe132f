"""One item's record: the pipeline's prediction (or the gold SQL), its score, its timing. Every
failure, of the model, the graph or the scorer, becomes part of the record, never an exception,
so a run never loses an item."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langgraph.pregel import Pregel

from macsql.evals.datasets import EvalItem
from macsql.evals.options import EvalOptions
from macsql.evals.scoring import ItemScore, Reason, Scorer
from macsql.evals.trace_file import TRACE_KEY
from macsql.llm.deadlines import cancel_scope
from macsql.llm.traces import recording_traces
from macsql.serving.errors import SERVER_RUNS_KEY, NoServerAnswers


def base_record(item: EvalItem) -> dict[str, Any]:
    return {
        "index": item.index,
        "question_id": item.question_id,
        "db_id": item.db_id,
        "question": item.question,
        "level": item.level,
    }


def skipped_record(item: EvalItem) -> dict[str, Any]:
    """The record of an item the dataset marks as unrunnable (its database is missing, ...)."""
    return {
        **base_record(item),
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


async def predict_and_score(
    item: EvalItem,
    options: EvalOptions,
    graph: Any,
    context: Any,
    scorer: Scorer,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The item's finished record; scoring runs in the loop's default executor. `config` is
    the run's (a conversation's thread)."""
    t0 = time.perf_counter()
    record = {**base_record(item), **await predict(item, options, graph, context, config)}
    try:
        score: ItemScore = await asyncio.get_running_loop().run_in_executor(
            None, scorer.score, item, record["prediction"]
        )
        record.update(correct=score.correct, reason=score.reason, detail=score.detail)
    except Exception as exc:  # scoring must not stop the run either
        detail = f"{type(exc).__name__}: {exc}"
        record.update(correct=False, reason=Reason.SCORING_ERROR, detail=detail)
    record["elapsed_s"] = round(time.perf_counter() - t0, 4)
    return record


async def predict(
    item: EvalItem,
    options: EvalOptions,
    graph: Any,
    context: Any,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run the pipeline on one item; any failure becomes a failed record, never an exception.
    With `options.traces` the item's agent calls come along under `TRACE_KEY`, failed or not.
    `config` is the run's (a conversation's thread); its output's `standalone_question` is then
    kept too."""
    if options.traces and not options.gold:
        with recording_traces() as trace:
            prediction = await _predict(item, options, graph, context, config)
        return {**prediction, TRACE_KEY: list(trace.calls)}
    return await _predict(item, options, graph, context, config)


async def _predict(
    item: EvalItem,
    options: EvalOptions,
    graph: Any,
    context: Any,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
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
    # The scope reaches the item's model calls in the executor's threads (they copy the
    # context): when the item runs out of time, its calls end and send no more requests.
    with cancel_scope() as cancel:
        try:
            call = (
                graph.ainvoke(payload, config, context=context)
                if config
                else _invoke_in_a_thread(graph, payload, context)
                if isinstance(graph, Pregel)
                else graph.ainvoke(payload, context=context)
            )
            out = await (
                asyncio.wait_for(call, options.item_timeout) if options.item_timeout else call
            )
        except NoServerAnswers:  # not the item's failure: it gets no record, --resume runs it
            raise
        except TimeoutError as exc:
            cancel.set()
            limit = options.item_timeout or 0.0
            if limit and time.perf_counter() - started >= limit:
                return _failed(f"item timed out after {limit:g}s")
            return _failed(f"TimeoutError: {exc}")
        except Exception as exc:  # a model or graph failure is this item's, not the run's
            cancel.set()
            return _failed(f"{type(exc).__name__}: {exc}")
        except BaseException:  # the run itself is cancelled: so are the item's model calls
            cancel.set()
            raise
    if not isinstance(out, dict):
        return _failed(f"pipeline returned {type(out).__name__}, not a dict")
    status = out.get("status") or ("ok" if out.get("sql") else "failed")
    standalone = {"standalone_question": out.get("standalone_question")} if config else {}
    record = {
        **standalone,
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
    if SERVER_RUNS_KEY in out:  # through a server: runs it took (more than 1 after a loss)
        record[SERVER_RUNS_KEY] = out[SERVER_RUNS_KEY]
    return record


def _invoke_in_a_thread(graph: Pregel, payload: dict[str, Any], context: Any) -> Any:
    """An in-process graph's sync `invoke` in one of the loop's threads (copying the context:
    the cancel scope, the traces). Its `ainvoke` would send every sync node and router through
    the executor and make each step an asyncio task; the sync loop runs them in this thread.
    On a timeout the thread goes on to the run's end, which comes at its next model call (the
    cancel scope refuses it) or its end; the record is the timed-out one either way."""
    return asyncio.to_thread(graph.invoke, payload, context=context)


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
