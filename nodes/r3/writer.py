"""R^3's SQL writer: it writes, debugs on execution errors, and revises or rebuts after review.

The writer keeps its dialogue history H (the task, its replies, the database errors and the
reviews) in the state. H = [(question, schema), y]; an error e gives H + e → y'; the reviews r
give H + r → y''. The history sent to the model is cut to `Context.history_char_budget`
characters: the task message always stays, and the oldest turns go first.

Consensus: the writer's revised SQL equals the SQL under review, after sqlglot normalisation.
"""

from __future__ import annotations

import sqlglot
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.runtime import Runtime

from macsql.core.context import Agent, R3Context, context_of
from macsql.core.events import emit
from macsql.core.failures import model_failure
from macsql.core.records import ChatTurn, ReviewerComment
from macsql.core.state import R3State
from macsql.memory.examples import format_examples
from macsql.nodes.common.approval import awaiting_approval
from macsql.nodes.common.executor import final_fields
from macsql.prompts import render_prompt
from macsql.prompts.inputs import prompt_inputs
from macsql.prompts.results import prompt_error, ran, render_result
from macsql.replies.agents import WrittenSql, write_sql

AGENT = Agent.WRITER

Message = ChatTurn


def normalise_sql(sql: str, dialect: str | None = None) -> str:
    """A canonical text for comparing queries: sqlglot's rendering, unquoted identifiers and
    keywords case-folded; string literals keep their case ('France' and 'france' differ).

    SQL that sqlglot cannot parse falls back to its whitespace-collapsed text.
    """
    text = (sql or "").strip().rstrip(";").strip()
    read = dialect if dialect in ("sqlite", "postgres", "mysql", "tsql", "duckdb") else None
    try:
        tree = sqlglot.parse_one(text, read=read)
        text = tree.sql(dialect=read, normalize=True, comments=False)
    except Exception:  # sqlglot.ParseError, TokenError, or an unsupported construct
        pass
    return " ".join(text.split())


def same_sql(a: str, b: str, dialect: str | None = None) -> bool:
    return normalise_sql(a, dialect) == normalise_sql(b, dialect)


def truncate_history(history: list[Message], budget: int) -> tuple[list[Message], int]:
    """The messages to send, within `budget` characters, and how many were left out.

    The first message (the task, with the schema) and the last one are always kept; between
    them the newest turns are kept first. The kept tail starts with a reply of the writer, so
    the roles keep alternating.
    """
    if len(history) <= 2:
        return list(history), 0
    first, middle, last = history[0], history[1:-1], history[-1]
    used = len(first["content"]) + len(last["content"])
    kept: list[Message] = []
    for message in reversed(middle):
        if used + len(message["content"]) > budget:
            break
        kept.insert(0, message)
        used += len(message["content"])
    while kept and kept[0]["role"] != "assistant":
        kept.pop(0)
    return [first, *kept, last], len(middle) - len(kept)


def to_messages(history: list[Message]) -> list[BaseMessage]:
    return [
        AIMessage(m["content"]) if m["role"] == "assistant" else HumanMessage(m["content"])
        for m in history
    ]


def task_message(state: R3State, context: R3Context) -> str:
    shots = state.get("few_shots") or []
    examples = ""
    if shots:
        examples = (
            "Examples of questions about other databases, with their SQL:\n\n"
            + format_examples(shots)
            + "\n\nNow the question to answer.\n"
        )
    reasoning = render_prompt(
        "r3_reasoning_pot" if context.program_of_thoughts else "r3_reasoning_cot"
    ).strip()
    return render_prompt(
        "r3_writer", **prompt_inputs(state, context), examples=examples, reasoning=reasoning
    )


def _ask(
    state: R3State,
    runtime: Runtime[R3Context],
    history: list[Message],
    phase: str,
) -> tuple[R3State, WrittenSql | None]:
    """Send the (truncated) history; the update, and the reply's SQL (None if the call failed)."""
    context = context_of(runtime, R3Context)
    sent, dropped = truncate_history(history, context.history_char_budget)
    emit(runtime, AGENT, "start", step=phase, messages=len(sent), dropped=dropped)
    written = write_sql(
        runtime,
        context,
        AGENT,
        to_messages(sent),
        dialect=state.get("dialect", "sqlite"),
        step=phase,
    )
    if written.error is not None:
        emit(runtime, AGENT, "error", step=phase, error=written.error)
        failed: R3State = {
            **model_failure(written.error),
            "usage": written.usage,
            "fallbacks": written.fallbacks,
        }
        failed["history"] = history
        if not state.get("tries"):
            failed["error"] = written.error
        return failed, None
    emit(runtime, AGENT, "done", step=phase, sql=written.sql)
    answered: list[Message] = [*history, {"role": "assistant", "content": written.text}]
    update: R3State = {
        "usage": written.usage,
        "history": answered,
        "history_dropped": dropped,
        "fallbacks": written.fallbacks,
    }
    return update, written


def _with_candidate(update: R3State, written: WrittenSql, runtime: Runtime[R3Context]) -> R3State:
    update.update(written.candidate())
    if written.sql is None:
        update["last_execution"] = written.no_sql_record()
    return awaiting_approval(update, context_of(runtime, R3Context))


def writer_node(state: R3State, runtime: Runtime[R3Context]) -> R3State:
    """y = LLM(x, S); H = [(x, S), y]."""
    context = context_of(runtime, R3Context)
    history: list[Message] = [{"role": "user", "content": task_message(state, context)}]
    update, written = _ask(state, runtime, history, "write")
    base: R3State = {
        "debug_turns": 0,
        "review_turns": 0,
        "consensus": False,
        "personas": [],
        # None clears the reviews of an earlier question in the same thread (`add_reviews`).
        "reviews": None,  # type: ignore[typeddict-item]
    }
    if written is None:
        return {**base, **update}
    return {**base, **_with_candidate(update, written, runtime)}


def writer_debug_node(state: R3State, runtime: Runtime[R3Context]) -> R3State:
    """H ← H + e; y' = LLM(H); H ← H + y'."""
    context = context_of(runtime, R3Context)
    failed = state.get("last_execution") or {}
    turn = state.get("debug_turns", 0) + 1
    error = render_prompt(
        "r3_writer_debug",
        outcome=failed.get("outcome", "unknown"),
        error_class=failed.get("error_class") or "none",
        error=prompt_error(failed, cells=context.send_rows_to_model),
    )
    history: list[Message] = [*(state.get("history") or []), {"role": "user", "content": error}]
    update, written = _ask(state, runtime, history, f"debug {turn}")
    update["debug_turns"] = turn
    if written is None:
        return update
    return _with_candidate(update, written, runtime)


def round_reviews(state: R3State) -> list[ReviewerComment]:
    """The reviews of the current round, in reviewer order."""
    current = state.get("review_turns", 0) + 1
    found = [r for r in state.get("reviews") or [] if r.get("round") == current]
    return sorted(found, key=lambda r: r.get("index", 0))


def format_reviews(reviews: list[ReviewerComment]) -> str:
    return "\n\n".join(
        f"Reviewer {i} ({r['persona']}):\n{r['comment'].strip()}" for i, r in enumerate(reviews, 1)
    )


def writer_revise_node(state: R3State, runtime: Runtime[R3Context]) -> R3State:
    """H ← H + r; y'' = LLM(H); H ← H + y''. Same SQL as reviewed (normalised): consensus."""
    context = context_of(runtime, R3Context)
    reviewed = state.get("last_execution") or {}
    turn = state.get("review_turns", 0) + 1
    reviews = [r for r in round_reviews(state) if r.get("comment")]
    if not reviews:
        errors = "; ".join(r.get("error") or "" for r in round_reviews(state))
        message = f"every reviewer failed in round {turn}: {errors or 'no reviews'}"
        emit(runtime, AGENT, "error", step="revise", error=message)
        return {**model_failure(message), "review_turns": turn}
    feedback = render_prompt(
        "r3_writer_revise",
        result=render_result(reviewed, cells=context.send_rows_to_model),
        count=len(reviews),
        reviews=format_reviews(reviews),
    )
    history: list[Message] = [
        *(state.get("history") or []),
        {"role": "user", "content": feedback},
    ]
    update, written = _ask(state, runtime, history, f"revise {turn}")
    update["review_turns"] = turn
    if written is None:
        return update
    # A rebuttal need not restate the query: no SQL in it is no failure.
    update["fallbacks"] = [f for f in written.fallbacks if f["kind"] != "no_sql"]
    sql = written.sql
    previous = reviewed.get("sql") or ""
    # A rebuttal that does not restate the query keeps it: that is agreement too.
    agreed = sql is None or same_sql(sql, previous, state.get("dialect"))
    emit(runtime, AGENT, "consensus" if agreed else "revised", round=turn, sql=sql or previous)
    if agreed:
        update["consensus"] = True
        update["candidate_sql"] = ""
        tries = state.get("tries") or []
        if tries and ran(tries[-1]):
            update.update(final_fields(tries[-1:]))  # the agreed SQL, as executed
        return update
    return _with_candidate(update, written, runtime)
