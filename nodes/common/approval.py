"""`approve`: a person approves, edits or rejects each SQL before it runs (`approve_sql`).

With `approve_sql` on, every route that hands SQL to the database goes through this node first:
the executor's candidate, and SQLFixAgent's crafted candidates. It pauses once per statement
(`interrupt`, in order) and does nothing else, so that resuming it repeats no model call and runs
no query. The writers mark their update `paused` (`awaiting_approval`), so a paused run does not
read as a failed one in Studio or in `invoke`'s result.

Each pause's value is `{"action": "approve_sql", "sql", "attempt", "hint"}`; resume with `True`
(run it), a new SQL string or `{"sql": ...}` (run that instead), or `False` (reject it).
`read_decision` also reads what review clients send (a yes/no word, `{"approved": false}`, Agent
Inbox's `[{"type": "accept" | "edit" | "ignore", "args": ...}]`, LangChain's
`{"decisions": [{"type": "approve" | "edit" | "reject", ...}]}`); an answer it cannot read is
asked again, saying why in the hint, so that no SQL runs, or is dropped, on a guess.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from macsql.core.context import BaseContext, ContextT
from macsql.core.events import emit
from macsql.core.records import CraftedSql, DroppedCandidate
from macsql.core.state import PipelineState, SqlFixState

StateT = TypeVar("StateT", bound=PipelineState)

REJECTED = "the SQL was rejected by the reviewer"
_HINT = (
    "resume with True to run it, a new SQL string (or {'sql': ...}) to run that instead, "
    "or False to stop"
)


def awaiting_approval(update: StateT, context: BaseContext) -> StateT:
    """`update`, marked `paused` when the SQL it hands on goes to a person before it runs."""
    pending = update.get("candidate_sql") or update.get("crafted")
    if context.approve_sql and pending:
        update["status"] = "paused"
        update["error"] = None
    return update


_YES = frozenset({"y", "yes", "ok", "okay", "approve", "approved", "accept", "accepted", "run"})
_NO = frozenset({"n", "no", "reject", "rejected", "deny", "denied", "decline", "ignore", "stop"})
_YES_TYPES = frozenset({"accept", "approve"})
_NO_TYPES = frozenset({"ignore", "reject"})
_VERDICT_KEYS = ("approved", "approve", "accept", "accepted")


@dataclass(frozen=True)
class Decision:
    """A person's answer as read: `sql` to run (None: rejected), or the `problem` with it."""

    sql: str | None
    problem: str | None = None


def read_decision(answer: Any, sql: str) -> Decision:
    """What a resume value decides about `sql` (see the module's doc for the forms read)."""
    if answer is None or isinstance(answer, bool):
        return Decision(sql if answer in (True, None) else None)
    if isinstance(answer, str):
        word = answer.strip().rstrip(".!").lower()
        if word in _YES or word == "true":
            return Decision(sql)
        if word in _NO or word == "false":
            return Decision(None)
        return Decision(answer.strip() or sql)
    if isinstance(answer, Sequence) and not isinstance(answer, bytes):
        if len(answer) == 1:  # Agent Inbox sends a list holding one response
            return read_decision(answer[0], sql)
        return _unclear(answer, "one decision was expected, not a list of them")
    if isinstance(answer, Mapping):
        return _read_mapping(answer, sql)
    return _unclear(answer, f"a {type(answer).__name__} is not a decision")


def _read_mapping(answer: Mapping[str, Any], sql: str) -> Decision:
    if "decisions" in answer:  # LangChain's human-in-the-loop middleware
        return read_decision(answer["decisions"], sql)
    kind = answer.get("type")
    if isinstance(kind, str):
        kind = kind.lower()
        if kind in _YES_TYPES:
            return Decision(sql)
        if kind in _NO_TYPES:
            return Decision(None)
        if kind == "edit":
            edited = _edited_sql(answer)
            return Decision(edited) if edited else _unclear(answer, "the edit holds no SQL")
        return _unclear(answer, f"{kind!r} is not a decision about the SQL")
    if answer.get("reject") is True:
        return Decision(None)
    for key in _VERDICT_KEYS:
        if isinstance(answer.get(key), bool) and answer[key] is False:
            return Decision(None)
    edited = answer.get("sql")
    if isinstance(edited, str) and edited.strip():
        return Decision(edited.strip())
    if any(answer.get(key) is True for key in _VERDICT_KEYS):
        return Decision(sql)
    return _unclear(answer, "it names no decision")


def _edited_sql(answer: Mapping[str, Any]) -> str | None:
    """The SQL of an edit: Agent Inbox's `args` (an action request, or its arguments) or
    LangChain's `edited_action`."""
    for holder in (answer.get("args"), answer.get("edited_action")):
        if isinstance(holder, str) and holder.strip():
            return holder.strip()
        while isinstance(holder, Mapping):
            found = holder.get("sql")
            if isinstance(found, str) and found.strip():
                return found.strip()
            holder = holder.get("args")
    return None


def _unclear(answer: Any, why: str) -> Decision:
    shown = repr(answer)
    shown = shown if len(shown) <= 200 else shown[:200] + "..."
    return Decision(None, f"the answer {shown} was not understood ({why})")


def decide(sql: str, attempt: int) -> str | None:
    """Pause for a person: the SQL to run (theirs, or the one shown), or None when rejected.
    An answer that cannot be read pauses again, with the reason in the hint."""
    request = {"action": "approve_sql", "sql": sql, "attempt": attempt, "hint": _HINT}
    while True:
        decision = read_decision(interrupt(request), sql)
        if decision.problem is None:
            return decision.sql
        request = {**request, "hint": f"{decision.problem}; {_HINT}"}


def approve_node(state: SqlFixState, runtime: Runtime[ContextT]) -> SqlFixState:
    attempt = state.get("attempts", 0) + 1
    crafted = state.get("crafted") or []
    if crafted:
        return _approve_crafted(state, crafted, attempt, runtime)
    sql = state.get("candidate_sql") or ""
    approved = decide(sql, attempt)
    if approved is None:
        emit(runtime, "approve", "rejected", attempt=attempt, sql=sql)
        tries = state.get("tries") or []
        # A SQL that ran earlier stays the answer; the pending one never ran.
        return {"fatal": True, "error": REJECTED, "candidate_sql": "", "tries": tries}
    emit(runtime, "approve", "approved", attempt=attempt, sql=approved, edited=approved != sql)
    return {"candidate_sql": approved, "status": "running"}


def _approve_crafted(
    state: SqlFixState, crafted: list[CraftedSql], attempt: int, runtime: Runtime[ContextT]
) -> SqlFixState:
    kept: list[CraftedSql] = []
    dropped: list[DroppedCandidate] = list(state.get("dropped_candidates") or [])
    for item in crafted:
        approved = decide(item["sql"], attempt)
        if approved is None:
            dropped.append({"question": item["question"], "sql": item["sql"], "reason": REJECTED})
            continue
        kept.append({"question": item["question"], "sql": approved})
    emit(runtime, "approve", "approved", attempt=attempt, kept=len(kept), asked=len(crafted))
    return {"crafted": kept, "dropped_candidates": dropped, "status": "running"}
