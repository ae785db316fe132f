"""The records inside a graph's state: executions, fallbacks, reviews, candidates, turns.

They are TypedDicts, so that they stay plain JSON in checkpoints and in a server's responses;
`core.state` composes them into each graph's state, input and output.
"""

from __future__ import annotations

from typing import Any, Literal

# pydantic (and so the LangGraph server's schemas) needs typing_extensions' TypedDict on 3.11.
from typing_extensions import TypedDict

Usage = dict[str, dict[str, float]]
"""Per agent: calls, input_tokens, output_tokens, latency_s."""


def merge_usage(left: Usage | None, right: Usage | None) -> Usage:
    """State reducer: add per-agent counters."""
    merged: Usage = {agent: dict(entry) for agent, entry in (left or {}).items()}
    for agent, entry in (right or {}).items():
        into = merged.setdefault(agent, {})
        for name, value in entry.items():
            into[name] = round(into.get(name, 0) + value, 6)
    return merged


class ExecutionRecord(TypedDict, total=False):
    """One SQL execution as the agents and the output see it (JSON-safe, cells cut)."""

    sql: str
    outcome: str
    """An `Outcome` value: ok, empty_result, null_result, syntax_error, timeout, ..."""
    columns: list[str]
    rows: list[list[Any]]
    row_count: int
    truncated: bool
    error: str | None
    error_class: str | None
    elapsed: float
    finish_reason: str
    """How the model's reply that wrote this SQL ended, when not normally: 'length' when the
    token limit cut it off."""
    reply_reading: dict[str, Any]
    """How the SQL was chosen from a reply that held several queries: the rule, how many
    candidates, what was passed over and why (`macsql.replies.finder.SqlReading.record`)."""


class Fallback(TypedDict):
    """Something an agent's reply did not give as asked, and what was done instead."""

    agent: str
    kind: Literal[
        "unreadable_reply",
        "no_sql",
        "cut_off",
        "structured_output",
        "ambiguous_sql",
        "no_history",
    ]
    detail: str


def add_fallbacks(left: list[Fallback] | None, right: list[Fallback] | None) -> list[Fallback]:
    """State reducer: fallbacks add up over a run's agents."""
    return [*(left or []), *(right or [])]


class Review(TypedDict, total=False):
    """SQLFixAgent's SQLReviewer verdict on one SQL."""

    verdict: Literal["pass", "error"]
    source: Literal["execution", "model", "unparsed"]
    """Who decided: the execution failed, the model said so, or its reply had no verdict."""
    reason: str
    explanation: str
    """The reviewer's rubber-duck walk through the query, when a model reviewed it."""


class Candidate(ExecutionRecord, total=False):
    """A QueryCrafter candidate that executed: one per distinct result."""

    paraphrases: list[str]
    """The rewordings of the question it was written for."""
    same_result_as_original: bool


class DroppedCandidate(TypedDict):
    question: str
    sql: str
    reason: str


class CraftedSql(TypedDict):
    """A QueryCrafter candidate before it runs: a rewording and the SQL written for it."""

    question: str
    sql: str


class RepairFailure(TypedDict):
    """A failed SQLRefiner attempt, which the next attempt reflects on."""

    attempt: int
    sql: str
    feedback: str
    explanation: str


class ReviewerComment(TypedDict, total=False):
    """One R^3 reviewer's comments in one round."""

    round: int
    index: int
    persona: str
    comment: str
    error: str | None


class ChatTurn(TypedDict):
    """One message of the R^3 writer's dialogue history."""

    role: Literal["user", "assistant"]
    content: str


class ConversationTurn(TypedDict, total=False):
    """One question of a conversation, as `contextualize` shows it: never its rows."""

    question: str
    """The question as the user asked it."""
    standalone_question: str
    sql: str
    outcome: str
    """The SQL's outcome (ok, empty_result, ...) when the turn answered; `failed: <why>` when
    it did not (its run failed, or never finished)."""


class FewShot(TypedDict):
    question: str
    sql: str
    db_id: str
    evidence: str
