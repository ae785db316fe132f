"""From a teacher's traced run to fine-tuning samples: one per agent call, judged by the rules.

A sample is the messages the agent was sent plus its reply as the assistant's turn. With
`only_correct` (the default) a call is kept only when:

- its item's final SQL was scored correct;
- it wrote SQL (Decomposer, Refiner, SQLTool, R^3 writer, SQLFixAgent's SQLRefiner) and that SQL
  is the item's final SQL: a Refiner's repair is kept when it led to the correct result, and a
  draft that needed repairing is not, since it would teach the wrong SQL;
- it is a Selector call whose kept tables hold every table of the gold SQL (sqlglot), and its
  reply was applied (not a fallback to the full schema);
- it is a verdict of SQLFixAgent's SQLReviewer that the outcome bears out: "pass" on the SQL
  that stayed the answer, "error" on SQL that was replaced (a false alarm on the correct SQL
  would teach the reviewer to flag it).

Failed calls, empty replies and replies cut off at the token limit (``finish_reason=length``)
are never samples. Each call is dropped by the first rule it breaks, so the counts add up to the
calls.

Repairs as data (`relabel_repairs`, off by default as in the paper): a Decomposer draft that a
Refiner repaired, on an item that ended correct, is kept with the repaired SQL in place of its
own, so the Decomposer also learns from the questions it got wrong at first.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp

from macsql.core.context import Agent
from macsql.nodes.sqlfix.reviewer import parse_verdict
from macsql.replies.reader import extract_sql

SQL_WRITERS = frozenset(
    {Agent.DECOMPOSER, Agent.REFINER, Agent.SQL_TOOL, Agent.WRITER, Agent.SQL_REFINER}
)


class Drop:
    """Why a call is not a sample (the stats report counts each)."""

    EVAL_DATABASE = "eval_database"
    EVAL_QUESTION = "eval_question"
    EVAL_QUESTION_QUOTED = "eval_question_quoted"
    MODEL_ERROR = "model_error"
    CUT_OFF = "cut_off"
    AGENT_NOT_WANTED = "agent_not_selected"
    ITEM_NOT_CORRECT = "item_not_correct"
    SELECTOR_MISSED_GOLD_TABLE = "selector_missed_gold_table"
    SQL_NOT_FINAL = "sql_not_final"
    REVIEW_CONTRADICTED = "review_contradicted"
    DOWNSAMPLED = "downsampled"
    TOO_LONG = "too_long"
    DUPLICATE = "duplicate"


@dataclass
class Sample:
    agent: str
    db_id: str
    index: int
    messages: list[dict[str, Any]]
    """The messages as sent, then the reply as the assistant's turn."""
    drop: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    """The call's usage as the teacher's server reported it (its own token counts)."""
    call: int = 0
    """The call's position in its item's trace."""
    question: str = ""
    question_id: int | None = None
    level: str | None = None
    model: str | None = None
    """The teacher's model for this call."""
    relabelled: bool = False
    """A repaired Decomposer draft whose reply carries the repaired SQL (`relabel_repairs`)."""
    tokens: int = 0
    """The sample's length in tokens (every message's content), set by the export."""
    reply_tokens: int = 0

    @property
    def prompt(self) -> list[dict[str, Any]]:
        return self.messages[:-1]

    @property
    def reply(self) -> str:
        return str(self.messages[-1]["content"])


def gold_tables(sql: str, dialect: str = "sqlite") -> set[str] | None:
    """The tables a gold SQL reads (lower case, CTE names excluded); None if it does not parse."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except Exception:  # sqlglot.ParseError, TokenError
        return None
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    return {t.name.lower() for t in tree.find_all(exp.Table) if t.name.lower() not in ctes}


def _same_sql(a: str | None, b: str | None) -> bool:
    def norm(sql: str | None) -> str:
        return " ".join((sql or "").strip().rstrip(";").split())

    return bool(norm(a)) and norm(a) == norm(b)


def _sql_written(call: Mapping[str, Any]) -> str | None:
    """The SQL a call led to: the execution that followed it, else the reply's SQL."""
    execution = call.get("execution") or {}
    return execution.get("sql") or extract_sql(str(call.get("reply") or ""))


def judge_call(
    call: Mapping[str, Any],
    result: Mapping[str, Any],
    gold: set[str] | None,
    *,
    agents: Collection[str] | None,
    only_correct: bool,
    reviewed_sql: str | None = None,
) -> str | None:
    """The first rule `call` breaks, or None when it makes a sample. `reviewed_sql` is the SQL
    executed last before the call (what a reviewer was shown)."""
    agent = str(call.get("agent"))
    if call.get("error") or not str(call.get("reply") or "").strip():
        return Drop.MODEL_ERROR
    if call.get("finish_reason") == "length":
        return Drop.CUT_OFF
    if agents is not None and agent not in agents:
        return Drop.AGENT_NOT_WANTED
    if not only_correct:
        return None
    if result.get("correct") is not True:
        return Drop.ITEM_NOT_CORRECT
    if agent == Agent.SELECTOR:
        kept = {str(t).lower() for t in call.get("kept_tables") or []}
        if call.get("fallback") or gold is None or not gold <= kept:
            return Drop.SELECTOR_MISSED_GOLD_TABLE
    if agent in SQL_WRITERS and not _same_sql(_sql_written(call), result.get("prediction")):
        return Drop.SQL_NOT_FINAL
    verdict = parse_verdict(str(call.get("reply"))) if agent == Agent.REVIEWER else None
    if verdict is not None and reviewed_sql is not None:
        stayed = _same_sql(reviewed_sql, result.get("prediction"))
        if stayed != (verdict[0] == "pass"):
            return Drop.REVIEW_CONTRADICTED
    return None


def relabelled_reply(reply: str, draft_sql: str | None, final_sql: str) -> str:
    """`reply` with its draft SQL replaced by `final_sql` (the last occurrence, where MAC-SQL's
    Decomposer puts the query that answers); a reply whose SQL is not found verbatim becomes
    the final SQL in one ```sql block."""
    draft = (draft_sql or "").strip()
    at = reply.rfind(draft) if draft else -1
    if at < 0:
        return f"```sql\n{final_sql.strip()}\n```"
    return reply[:at] + final_sql.strip() + reply[at + len(draft) :]


def _repaired_later(calls: list[Mapping[str, Any]], after: int, final_sql: str | None) -> bool:
    """A Refiner call after position `after` wrote the item's final SQL."""
    return any(
        c.get("agent") == Agent.REFINER and _same_sql(_sql_written(c), final_sql)
        for c in calls[after + 1 :]
    )


def item_samples(
    trace: Mapping[str, Any],
    result: Mapping[str, Any],
    gold_sql: str | None,
    *,
    agents: Collection[str] | None = None,
    only_correct: bool = True,
    relabel_repairs: bool = False,
) -> list[Sample]:
    """Every agent call of one item as a sample, with `drop` set when a rule refuses it."""
    gold = gold_tables(gold_sql) if gold_sql else None
    samples = []
    reviewed: str | None = None
    calls = list(trace.get("calls") or [])
    for position, call in enumerate(calls):
        if not call.get("agent"):  # an execution of SQL no agent wrote here
            reviewed = (call.get("execution") or {}).get("sql") or reviewed
            continue
        text = str(call.get("reply") or "")
        drop = judge_call(
            call, result, gold, agents=agents, only_correct=only_correct, reviewed_sql=reviewed
        )
        relabelled = False
        final_sql = result.get("prediction")
        if (
            relabel_repairs
            and drop == Drop.SQL_NOT_FINAL
            and call.get("agent") == Agent.DECOMPOSER
            and final_sql
            and _repaired_later(calls, position, final_sql)
        ):
            text = relabelled_reply(text, _sql_written(call), final_sql)
            drop, relabelled = None, True
        samples.append(
            Sample(
                agent=str(call["agent"]),
                db_id=str(result.get("db_id") or trace.get("db_id") or ""),
                index=int(trace["index"]),
                messages=[*call.get("messages", []), {"role": "assistant", "content": text}],
                drop=drop,
                usage=dict(call.get("usage") or {}),
                call=position,
                question=str(result.get("question") or trace.get("question") or ""),
                question_id=result.get("question_id", trace.get("question_id")),
                level=result.get("level"),
                model=call.get("model"),
                relabelled=relabelled,
            )
        )
        reviewed = (call.get("execution") or {}).get("sql") or reviewed
    return samples
