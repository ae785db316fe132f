"""R^3's reviewers: professions generated from the schema and the SQL, reviews in parallel.

`persona_node` asks a model once for `Context.num_reviewers` professions. `review_sends` fans the
review out with one `Send` per reviewer; each `reviewer_node` gets its profession as the system
prompt and comments on the SQL and its result table. The reviews are collected by a reducer and
read by the writer.
"""

from __future__ import annotations

import re
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Send

from macsql.core.context import Agent, R3Context, context_of
from macsql.core.events import emit
from macsql.core.failures import model_failure
from macsql.core.records import ReviewerComment
from macsql.core.state import R3State, ReviewTask
from macsql.llm.agent_calls import call_agent
from macsql.prompts import render_prompt
from macsql.prompts.inputs import prompt_inputs
from macsql.prompts.results import render_result
from macsql.replies.agents import reply_fallbacks
from macsql.replies.fields import read_list
from macsql.replies.reader import json_field
from macsql.replies.schemas import PersonaAnswer

# Used only when the persona reply cannot be read, so a review still happens.
FALLBACK_PERSONAS = (
    "senior database engineer who checks every clause, join and key of a query",
    "data analyst who knows this domain and checks that the result answers the question",
    "quality engineer who checks filters, values, NULLs and edge cases in the result",
)

_REVIEW_KEYS = (
    "question",
    "evidence",
    "db_name",
    "dialect",
    "schema_text",
    "foreign_keys_text",
    "value_matches_text",
    "last_execution",
)


_PERSONA_KEYS = ("reviewers", "personas", "professions")
_PERSONA_NAME = re.compile(r"reviewer|persona|profession|expert|role", re.I)


def _is_persona_name(name: str) -> bool:
    return bool(_PERSONA_NAME.search(name))


def parse_personas(text: str, n: int, found: dict[str, Any] | None = None) -> list[str]:
    """Up to `n` distinct professions from the reply's fields (when it answered in a schema)
    or its text."""
    if found is not None:
        items = json_field(found, *_PERSONA_KEYS) or []
    else:
        items = read_list(text, _is_persona_name)
    out: list[str] = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):  # {"profession": ..., "focus": ...}
            item = ", ".join(str(v) for v in item.values() if v)
        persona = " ".join(str(item).split())
        if persona and persona.lower() not in {p.lower() for p in out}:
            out.append(persona)
    return out[:n]


def persona_node(state: R3State, runtime: Runtime[R3Context]) -> R3State:
    context = context_of(runtime, R3Context)
    n = max(context.num_reviewers, 1)
    sql = (state.get("last_execution") or {}).get("sql") or ""
    emit(runtime, Agent.PERSONA, "start", reviewers=n)
    prompt = render_prompt("r3_persona", **prompt_inputs(state, context), sql=sql, n=n)
    reply = call_agent(context, Agent.PERSONA, prompt, schema=PersonaAnswer)
    fallbacks = reply_fallbacks(runtime, Agent.PERSONA, reply)
    if reply.failed:
        emit(runtime, Agent.PERSONA, "error", error=reply.error)
        return {**model_failure(reply.error or ""), "usage": reply.usage, "fallbacks": fallbacks}
    personas = parse_personas(reply.text, n, reply.structured)
    fallback = None
    if len(personas) < n:
        fallback = f"the reply named {len(personas)} of {n} reviewers; the rest are defaults"
        fallbacks.append(
            {"agent": Agent.PERSONA.value, "kind": "unreadable_reply", "detail": fallback}
        )
        personas += [p for p in FALLBACK_PERSONAS if p not in personas]
        while len(personas) < n:  # more reviewers than defaults: number the repeats
            k = len(personas)
            personas.append(f"{FALLBACK_PERSONAS[k % len(FALLBACK_PERSONAS)]} (reviewer {k + 1})")
        personas = personas[:n]
    emit(runtime, Agent.PERSONA, "done", personas=personas, fallback=fallback)
    return {
        "personas": personas,
        "persona_fallback": fallback,
        "usage": reply.usage,
        "fallbacks": fallbacks,
    }


def review_sends(state: R3State) -> list[Send]:
    """One review task per reviewer, for the current round."""
    round_no = state.get("review_turns", 0) + 1
    shared = {k: state.get(k) for k in _REVIEW_KEYS}
    return [
        Send("reviewer", {**shared, "persona": persona, "index": i, "round": round_no})
        for i, persona in enumerate(state.get("personas") or [])
    ]


def reviewer_node(task: ReviewTask, runtime: Runtime[R3Context]) -> R3State:
    """One reviewer's comments on the SQL and its result table."""
    context = context_of(runtime, R3Context)
    record = task.get("last_execution") or {}
    persona = task["persona"]
    review: ReviewerComment = {"round": task["round"], "index": task["index"], "persona": persona}
    emit(runtime, Agent.REVIEWER, "start", round=task["round"], reviewer=task["index"] + 1)
    prompt = render_prompt(
        "r3_reviewer",
        **prompt_inputs(task, context),
        sql=record.get("sql") or "",
        result=render_result(
            record, max_rows=min(context.max_rows, 20), cells=context.send_rows_to_model
        ),
    )
    system = render_prompt("r3_reviewer_system", persona=persona).strip()
    reply = call_agent(context, Agent.REVIEWER, prompt, system=system)
    reply_fallbacks(runtime, Agent.REVIEWER, reply)  # its reasoning, for the trace
    if reply.failed:
        emit(runtime, Agent.REVIEWER, "error", reviewer=task["index"] + 1, error=reply.error)
        return {"reviews": [{**review, "comment": "", "error": reply.error}], "usage": reply.usage}
    emit(runtime, Agent.REVIEWER, "done", round=task["round"], reviewer=task["index"] + 1)
    return {"reviews": [{**review, "comment": reply.text}], "usage": reply.usage}
