"""What every agent does with a model's reply: read its SQL or its fields, record what failed.

`write_sql` is the one way an agent asks for a query (Decomposer, Refiner, SQLTool, R^3 writer):
it asks (in the agent's schema when `Context.reply_format` is 'structured'), reads the final
query from any layout (`macsql.replies.reader`), and asks once more when a reply cut off by the
token limit held no complete query. `reply_fields` reads a JSON answer the same way for the
agents that answer in fields. Both keep a reasoning model's thinking in the stream events and
out of the answer, and return the `Fallback` records that go on the run's output.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel

from macsql.core.context import Agent, BaseContext
from macsql.core.events import emit
from macsql.core.failures import no_sql_execution
from macsql.core.records import ExecutionRecord, Fallback, Usage, merge_usage
from macsql.core.state import SqlState
from macsql.llm.agent_calls import call_agent
from macsql.llm.calls import ModelReply
from macsql.llm.traces import annotate_call
from macsql.prompts import render_prompt
from macsql.prompts.inputs import dialect_name
from macsql.replies.reader import SqlReading, extract_json_object, json_field, read_sql
from macsql.replies.schemas import SqlAnswer


@dataclass
class WrittenSql:
    """An agent's query (None when its reply held none), and what the asking cost."""

    sql: str | None
    text: str
    """The reply's answer text (the last reply, when it was asked again)."""
    usage: Usage
    found: str = ""
    """What the reply held instead of SQL."""
    finish_reason: str | None = None
    error: str | None = None
    """Set when the model could not be reached: the run stops."""
    fallbacks: list[Fallback] = field(default_factory=list)
    structured: dict[str, Any] | None = None
    """The answer's fields, when it was given in the agent's schema."""
    reading: dict[str, Any] = field(default_factory=dict)
    """How the query was chosen from a reply with several (`SqlReading.record`)."""

    def no_sql_record(self) -> ExecutionRecord:
        """The execution record of a reply without SQL, so the Refiner sees it as an error."""
        record = no_sql_execution(self.text, self.found)
        if self.finish_reason == "length":
            record["finish_reason"] = "length"
        return record

    def candidate(self) -> SqlState:
        """The state keys for the SQL waiting to be executed (and how its reply ended)."""
        return {
            "candidate_sql": self.sql or "",
            "candidate_finish_reason": "length" if self.finish_reason == "length" else "",
            "candidate_reading": self.reading if self.sql else {},
        }


def write_sql(
    runtime: Any,
    context: BaseContext,
    agent: Agent,
    prompt: str | list[BaseMessage],
    *,
    dialect: str,
    system: str | None = None,
    step: str | None = None,
    schema: type[BaseModel] = SqlAnswer,
) -> WrittenSql:
    """Ask `agent` for a query and read it; a cut-off reply with no query is asked once more.
    `schema` is the agent's structured answer, with the query in its `sql` field."""
    reply = call_agent(context, agent, prompt, system=system, schema=schema)
    fallbacks = reply_fallbacks(runtime, agent, reply)
    if reply.failed:
        return WrittenSql(None, "", reply.usage, error=reply.error, fallbacks=fallbacks)
    usage = reply.usage
    reading = sql_of(reply, dialect)
    if reply.cut_off and (reading.sql is None or reading.open_ended):
        held = reading.found or f"its query runs to where it was cut: {reading.sql!r}"
        detail = (
            "the reply was cut off at the token limit (finish_reason=length) before its query "
            f"was complete ({held}); asked once more for the final query only"
        )
        fallbacks.append({"agent": agent.value, "kind": "cut_off", "detail": detail})
        emit(runtime, agent, "cut_off", step=step, detail=detail)
        again = [
            *([HumanMessage(prompt)] if isinstance(prompt, str) else prompt),
            AIMessage(reply.text),
            HumanMessage(render_prompt("cut_off_retry", dialect=dialect_name(dialect))),
        ]
        reply = call_agent(context, agent, again, system=system, schema=schema)
        fallbacks += reply_fallbacks(runtime, agent, reply)
        usage = merge_usage(usage, reply.usage)
        if reply.failed:
            return WrittenSql(None, "", usage, error=reply.error, fallbacks=fallbacks)
        reading = sql_of(reply, dialect)
    if reading.sql is None:
        detail = f"the reply held no SQL query: {reading.found}"
        fallbacks.append({"agent": agent.value, "kind": "no_sql", "detail": detail})
    elif reading.ambiguous:
        fallbacks.append(ambiguous_choice(runtime, agent, reading, step=step))
    record = reading.record()
    if record:
        annotate_call(agent.value, reply_reading=record)
    return WrittenSql(
        reading.sql,
        # A tool-call answer has no text; its fields stand in (R^3 keeps the reply in history).
        reply.text or json.dumps(reply.structured or {}),
        usage,
        found=reading.found,
        finish_reason=reply.finish_reason,
        fallbacks=fallbacks,
        structured=reply.structured,
        reading=record,
    )


def ambiguous_choice(
    runtime: Any, agent: Agent, reading: SqlReading, step: str | None = None
) -> Fallback:
    """The record of a query chosen from a reply that did not mark one final answer clearly."""
    others = "; ".join(reading.passed_over[:3]) or "none"
    detail = (
        f"{reading.ambiguous} (rule: {reading.rule}; {reading.candidates} candidates; "
        f"passed over: {others})"
    )
    emit(runtime, agent, "fallback", step=step, reason=detail)
    return {"agent": agent.value, "kind": "ambiguous_sql", "detail": detail}


def sql_of(reply: ModelReply, dialect: str) -> SqlReading:
    """The query of a reply: its structured `sql` field when it has one, else its text."""
    value = (reply.structured or {}).get("sql")
    if isinstance(value, str) and value.strip():
        reading = read_sql(value, dialect)
        if reading.sql is not None:
            return reading
    return read_sql(reply.text, dialect)


def reply_fields(reply: ModelReply, *keys: str) -> dict[str, Any] | None:
    """The fields of a JSON answer: the structured answer, else the last JSON object of the
    reply's text that has one of `keys` (any case)."""
    if reply.structured is not None:
        return reply.structured
    return extract_json_object(reply.text, keys)


def field_text(found: dict[str, Any] | None, *names: str) -> str:
    """A field's text, whatever the case of its key; '' when missing."""
    value = json_field(found or {}, *names)
    return "" if value is None else str(value).strip()


def reply_fallbacks(runtime: Any, agent: Agent, reply: ModelReply) -> list[Fallback]:
    """Emit the reply's reasoning (for the trace) and turn its notes into fallback records."""
    if reply.reasoning:
        emit(runtime, agent, "reasoning", text=reply.reasoning)
    out: list[Fallback] = []
    for note in reply.notes:
        emit(runtime, agent, "fallback", reason=note)
        out.append({"agent": agent.value, "kind": "structured_output", "detail": note})
    return out


def unreadable(runtime: Any, agent: Agent, detail: str, **event: Any) -> Fallback:
    """A reply whose fields could not be read, and the default used instead."""
    emit(runtime, agent, "fallback", reason=detail, **event)
    return {"agent": agent.value, "kind": "unreadable_reply", "detail": detail}
