"""SQLFixAgent's SQLReviewer: execution first, then rubber-duck review against the question.

The executor has already run the SQL. A syntax or execution error (or a reply with no SQL) is a
detected error with no model call. A query that ran is explained clause by clause by the model,
which ends with a verdict: `pass` keeps the SQL as final, `error` starts the repair.
"""

from __future__ import annotations

from typing import Literal

from langgraph.runtime import Runtime

from macsql.core.context import Agent, SqlFixContext, context_of
from macsql.core.events import emit
from macsql.core.failures import model_failure
from macsql.core.records import Fallback, Review
from macsql.core.state import SqlFixState
from macsql.llm.agent_calls import call_agent
from macsql.prompts import render_prompt
from macsql.prompts.inputs import prompt_inputs
from macsql.prompts.results import prompt_error, ran, render_result
from macsql.replies.agents import field_text, reply_fallbacks, unreadable
from macsql.replies.fields import read_verdict
from macsql.replies.schemas import ReviewAnswer

AGENT = Agent.REVIEWER

Verdict = Literal["pass", "error"]


def parse_verdict(text: str, found: dict[str, object] | None = None) -> tuple[Verdict, str] | None:
    """('pass' | 'error', reason) from the reviewer's reply (or its fields, when it answered
    in a schema), or None when it gave none (`macsql.replies.fields.read_verdict`)."""
    verdict = read_verdict(text, found)
    if verdict is None:
        return None
    return ("pass" if verdict[0] else "error"), verdict[1]


def sql_reviewer_node(state: SqlFixState, runtime: Runtime[SqlFixContext]) -> SqlFixState:
    context = context_of(runtime, SqlFixContext)
    record = state.get("last_execution") or {}
    sql = record.get("sql") or state.get("original_sql") or ""
    if not ran(record):
        review: Review = {
            "verdict": "error",
            "source": "execution",
            "reason": f"the query did not execute ({record.get('outcome', 'not run')}): "
            f"{prompt_error(record, cells=context.send_rows_to_model)}",
        }
        emit(runtime, AGENT, "done", **review)
        return {"review": review, "original_sql": sql}
    emit(runtime, AGENT, "start", sql=sql)
    prompt = render_prompt(
        "sqlfix_reviewer",
        **prompt_inputs(state, context),
        sql=sql,
        result=render_result(record, cells=context.send_rows_to_model),
    )
    reply = call_agent(context, AGENT, prompt, schema=ReviewAnswer)
    fallbacks: list[Fallback] = reply_fallbacks(runtime, AGENT, reply)
    if reply.failed:
        emit(runtime, AGENT, "error", error=reply.error)
        return {
            **model_failure(reply.error or ""),
            "usage": reply.usage,
            "original_sql": sql,
            "fallbacks": fallbacks,
        }
    verdict = parse_verdict(reply.text, reply.structured)
    if verdict is None:
        # No verdict means no error was detected: the executed SQL stands, and we say why.
        review = {
            "verdict": "pass",
            "source": "unparsed",
            "reason": "the review gave no verdict; the executed SQL is kept",
        }
        fallbacks.append(unreadable(runtime, AGENT, review["reason"]))
    else:
        review = {"verdict": verdict[0], "source": "model", "reason": verdict[1]}
    review["explanation"] = field_text(reply.structured, "explanation") or reply.text
    emit(runtime, AGENT, "done", verdict=review["verdict"], reason=review["reason"])
    return {"review": review, "original_sql": sql, "usage": reply.usage, "fallbacks": fallbacks}


def review_passed(state: SqlFixState) -> bool:
    return (state.get("review") or {}).get("verdict") == "pass"
