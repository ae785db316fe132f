"""SQLFixAgent's QueryCrafter: paraphrase the question, ask the SQLTool for a query per wording.

The paraphrases perturb the generator's input, so its candidates differ more than beam search
alone would make them. The crafter only writes them (`crafted`); `run_candidates` runs them,
after the `approve` node when `approve_sql` is on.
"""

from __future__ import annotations

import re
from typing import Any

from langgraph.runtime import Runtime

from macsql.core.context import Agent, SqlFixContext, context_of
from macsql.core.events import emit
from macsql.core.failures import model_failure
from macsql.core.records import CraftedSql, DroppedCandidate, Fallback, Usage, merge_usage
from macsql.core.state import SqlFixState
from macsql.llm.agent_calls import call_agent
from macsql.nodes.common.approval import awaiting_approval
from macsql.nodes.sqlfix.sql_tool import generate_sql
from macsql.prompts import render_prompt
from macsql.prompts.inputs import prompt_inputs
from macsql.replies.agents import reply_fallbacks, unreadable
from macsql.replies.fields import read_list
from macsql.replies.reader import json_field
from macsql.replies.schemas import ParaphraseAnswer

AGENT = Agent.QUERY_CRAFTER
_PARAPHRASE_NAME = re.compile(r"paraphras|reword|rephras|question|variant|version|wording", re.I)


def _is_paraphrase_name(name: str) -> bool:
    return bool(_PARAPHRASE_NAME.search(name))


def parse_paraphrases(
    text: str, question: str, n: int, found: dict[str, Any] | None = None
) -> list[str]:
    """Up to `n` distinct rewordings, none equal to the question itself, from the reply's
    fields (when it answered in a schema) or its text."""
    if found is not None:
        value = json_field(found, "paraphrases", "questions") or []
        items: list[Any] = value if isinstance(value, list) else []
    else:
        items = read_list(text, _is_paraphrase_name)
    out: list[str] = []
    seen = {" ".join(question.lower().split())}
    for item in items:
        wording = " ".join(str(item).split()).strip().strip('"')
        key = wording.lower()
        if wording and key not in seen:
            seen.add(key)
            out.append(wording)
    return out[: max(n, 0)]


def query_crafter_node(state: SqlFixState, runtime: Runtime[SqlFixContext]) -> SqlFixState:
    context = context_of(runtime, SqlFixContext)
    question = (state.get("question") or "").strip()
    n = max(context.num_paraphrases, 0)
    emit(runtime, AGENT, "start", paraphrases=n)
    usage: Usage = {}
    fallbacks: list[Fallback] = []
    paraphrases: list[str] = []
    if n:
        prompt = render_prompt("sqlfix_query_crafter", **prompt_inputs(state, context), n=n)
        reply = call_agent(context, AGENT, prompt, schema=ParaphraseAnswer)
        usage = merge_usage(usage, reply.usage)
        fallbacks += reply_fallbacks(runtime, AGENT, reply)
        if reply.failed:
            emit(runtime, AGENT, "error", error=reply.error)
            return {**model_failure(reply.error or ""), "usage": usage, "fallbacks": fallbacks}
        paraphrases = parse_paraphrases(reply.text, question, n, reply.structured)
        if not paraphrases:
            detail = "the reply held no paraphrases; no candidates were written"
            fallbacks.append(unreadable(runtime, AGENT, detail))
    crafted: list[CraftedSql] = []
    dropped: list[DroppedCandidate] = []
    for wording in paraphrases:
        generated = generate_sql(state, runtime, question=wording)
        usage = merge_usage(usage, generated.usage)
        fallbacks += generated.fallbacks
        if generated.error is not None or not generated.sql:
            reason = generated.error or "the SQL generator's reply held no SQL"
            dropped.append({"question": wording, "sql": generated.sql or "", "reason": reason})
            continue
        crafted.append({"question": wording, "sql": generated.sql})
    emit(
        runtime,
        AGENT,
        "done",
        paraphrases=paraphrases,
        crafted=[c["sql"] for c in crafted],
        dropped=len(dropped),
    )
    update: SqlFixState = {
        "paraphrases": paraphrases,
        "crafted": crafted,
        "candidates": [],
        "dropped_candidates": dropped,
        "usage": usage,
        "fallbacks": fallbacks,
    }
    return awaiting_approval(update, context)
