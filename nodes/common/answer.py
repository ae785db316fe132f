"""`answer`: a short answer in words, from the question, the SQL and a bounded preview of rows.

Runs only with `Context.answer` on. The model sees at most `answer_preview_rows` rows, is told
when they are only part of the result or none at all, and is asked to use no value that is not
shown. With `send_rows_to_model` off it sees the result's shape only.
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from macsql.core.context import Agent, BaseContext, ContextT, context_of
from macsql.core.events import emit
from macsql.core.records import ExecutionRecord
from macsql.core.state import PipelineState
from macsql.llm.agent_calls import call_agent
from macsql.prompts import render_prompt
from macsql.prompts.results import render_result


def answer_wanted(state: PipelineState, context: BaseContext) -> bool:
    return context.answer and not state.get("fatal")


def preview_record(state: PipelineState, max_rows: int) -> ExecutionRecord:
    """The output's result, cut to `max_rows` rows."""
    rows = state.get("rows") or []
    return {
        "sql": state.get("sql") or "",
        "outcome": state.get("outcome") or "not_run",
        "error": state.get("error"),
        "columns": state.get("columns") or [],
        "rows": rows[:max_rows],
        "row_count": len(rows),
        # The row cap cut the result itself; `row_count` beyond `rows` says the preview did.
        "truncated": bool(state.get("truncated")),
    }


def answer_node(state: PipelineState, runtime: Runtime[ContextT]) -> PipelineState:
    context = context_of(runtime, BaseContext)
    if state.get("status") != "ok" or not state.get("sql"):
        reason = state.get("error") or "no SQL could be run"
        return {"answer": f"I could not answer this from the database: {reason}"}
    record = preview_record(state, context.answer_preview_rows)
    prompt = render_prompt(
        "answer",
        question=state.get("question") or "",
        sql=record["sql"],
        result=render_result(
            record, max_rows=context.answer_preview_rows, cells=context.send_rows_to_model
        ),
    )
    emit(runtime, Agent.ANSWER, "start", rows=len(record["rows"]))
    reply = call_agent(context, Agent.ANSWER, prompt)
    if reply.failed:
        emit(runtime, Agent.ANSWER, "error", error=reply.error)
        return {"answer": "", "usage": reply.usage}
    emit(runtime, Agent.ANSWER, "done")
    return {"answer": reply.text.strip(), "usage": reply.usage}
