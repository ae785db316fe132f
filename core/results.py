"""The result of one question, as `macsql ask --json` prints it and `macsql.ask` returns it.

One model describes it, so the command line and the Python API cannot disagree, and the JSON
Schema in the documentation is generated from it. Every key is always there: a key that does
not apply to a run (no SQL was written, another pipeline's review, no approval pending) is
empty or null, so a script reading `result["rows"]` works exactly when something went wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    import pandas


class PendingApproval(BaseModel):
    """A SQL waiting for a person (`approve_sql`): run it, run an edit instead, or stop."""

    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)

    sql: str = Field(description="The SQL that will run when approved.")
    attempt: int | None = Field(None, description="Which execution of the run it would be.")
    hint: str | None = Field(None, description="How to resume, in the graph's words.")


class FallbackNote(BaseModel):
    """A reply an agent could not use as asked, and what was done instead."""

    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)

    agent: str
    kind: str = Field(description="unreadable_reply, no_sql, cut_off or structured_output.")
    detail: str


class Result(BaseModel):
    """One question's result. `status` is 'ok' when `sql` ran without error, 'failed' when the
    run ended without such a SQL, 'paused' while a SQL waits for approval (see `pending`)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_serialization_defaults_required=True,
        arbitrary_types_allowed=True,
    )

    question: str = Field(description="The question as asked.")
    db: str = Field(description="The database the question was asked of.")
    pipeline: str = Field(description="The pipeline that answered.")
    thread: str | None = Field(
        None, description="The thread the run is kept on (to resume a paused run), if any."
    )
    status: Literal["ok", "failed", "paused"] = "failed"
    sql: str = Field("", description="The SQL that ran (the best attempt), or ''.")
    outcome: str | None = Field(
        None, description="How `sql` ran: ok, empty_result, syntax_error, timeout, ..."
    )
    error: str | None = Field(None, description="Why the run failed, when it did.")
    columns: list[str] = Field(default_factory=list)
    rows: list[list[Any]] = Field(default_factory=list, description="At most `max_rows` rows.")
    truncated: bool = Field(False, description="True when the row cap cut the result.")
    attempts: int = Field(0, description="SQL executions the run made.")
    answer: str | None = Field(None, description="The answer in words (setting `answer`).")
    standalone_question: str | None = Field(
        None, description="The question the agents answered (a follow-up, rewritten)."
    )
    pending: list[PendingApproval] = Field(
        default_factory=list, description="SQL waiting for approval; empty unless paused."
    )
    fallbacks: list[FallbackNote] = Field(default_factory=list)
    usage: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="Per agent: calls, input_tokens, output_tokens, latency_s.",
    )
    selector_used: bool = False
    selector_fallback: str | None = None
    linking: dict[str, Any] | None = Field(
        None, description="What schema linking did: route, reason, kept columns and values."
    )
    original_sql: str | None = Field(None, description="sqlfix: the SQL that was reviewed.")
    review: dict[str, Any] | None = Field(None, description="sqlfix: the reviewer's verdict.")
    repaired: bool | None = Field(None, description="sqlfix: `sql` is a repair that passed.")
    repair_attempts: int | None = Field(None, description="sqlfix: repair attempts made.")
    explanation: str | None = Field(None, description="sqlfix: why the repair was chosen.")
    consensus: bool | None = Field(None, description="r3: the reviewers agreed.")
    review_turns: int | None = Field(None, description="r3: review rounds.")
    debug_turns: int | None = Field(None, description="r3: rewrites after errors.")
    personas: list[str] = Field(default_factory=list, description="r3: reviewer professions.")
    persona_fallback: str | None = None
    traces: list[dict[str, Any]] | None = Field(
        None, description="Every agent call as sent and answered (`--traces`), else null."
    )

    @classmethod
    def from_run(
        cls,
        output: Mapping[str, Any],
        *,
        question: str,
        db: str,
        pipeline: str,
        thread: str | None = None,
        pending: Iterable[Mapping[str, Any]] = (),
        traces: list[dict[str, Any]] | None = None,
    ) -> Result:
        """A result from a graph's output (or its state at a pause): the keys it has, the
        others empty. A paused run's status is 'paused' whatever the state said."""
        known = cls.model_fields
        values = {k: v for k, v in output.items() if k in known and v is not None}
        values.update(question=question, db=db, pipeline=pipeline, thread=thread, traces=traces)
        waiting = [PendingApproval.model_validate(_approval(p)) for p in pending]
        values["pending"] = waiting
        if waiting:
            values["status"] = "paused"
        elif values.get("status") not in ("ok", "failed"):
            values["status"] = "failed"
        return cls.model_validate(values)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        """Every key, as `macsql ask --json` prints it."""
        return self.model_dump()

    def to_pandas(self) -> pandas.DataFrame:
        """The rows as a pandas DataFrame (`pip install "macsql[pandas]"`)."""
        try:
            import pandas
        except ImportError as exc:
            raise ImportError(
                'Result.to_pandas needs pandas: pip install "macsql[pandas]"'
            ) from exc
        return pandas.DataFrame(self.rows, columns=self.columns)


def _approval(value: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value.get(key) for key in ("sql", "attempt", "hint")} | {
        "sql": str(value.get("sql") or "")
    }


def result_json_schema() -> dict[str, Any]:
    """The JSON Schema of `macsql ask --json` (every key required)."""
    return Result.model_json_schema(mode="serialization")
