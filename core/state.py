"""The typed state of every macsql graph, with the narrow input and output a host sees.

Each graph's `*Input` and `*Output` are its `input_schema` and `output_schema`: a parent graph
that embeds macsql sends the first and gets back only the second, so no internal key (schema
text, candidate SQL, counters) leaks into it. The records inside the state (executions, reviews,
candidates) are TypedDicts too, so that they stay plain JSON in checkpoints.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.channels import UntrackedValue
from langgraph.graph.message import add_messages
from pydantic import Field

# pydantic (and so the LangGraph server's schemas) needs typing_extensions' TypedDict on 3.11.
from typing_extensions import TypedDict

from macsql.core.records import (
    Candidate,
    ChatTurn,
    ConversationTurn,
    CraftedSql,
    DroppedCandidate,
    ExecutionRecord,
    Fallback,
    FewShot,
    RepairFailure,
    Review,
    ReviewerComment,
    Usage,
    add_fallbacks,
    merge_usage,
)


class KeptRows(list[list[Any]]):
    """Result rows written to be saved with a conversation thread (`Context.thread_rows`)."""


class ResultRows(UntrackedValue[Any]):
    """The `rows` channel. A run's result rows reach its caller (its output and its streams)
    but not its checkpoints, so a conversation thread never stores them; only rows written as
    `KeptRows` are saved (and read back) with the thread."""

    __slots__ = ("kept",)

    def __init__(self, typ: Any = list, guard: bool = False) -> None:
        super().__init__(typ, guard)
        self.kept = False

    def __eq__(self, value: object) -> bool:
        return isinstance(value, ResultRows)

    def __hash__(self) -> int:
        return hash(ResultRows)

    def copy(self) -> ResultRows:
        copied = super().copy()
        copied.kept = self.kept
        return copied

    def checkpoint(self) -> Any:
        return self.value if self.kept and self.is_available() else super().checkpoint()

    def from_checkpoint(self, checkpoint: Any) -> ResultRows:
        restored = super().from_checkpoint(checkpoint)
        if isinstance(checkpoint, list):  # else the 'missing' marker: nothing was kept
            restored.value, restored.kept = list(checkpoint), True
        return restored

    def update(self, values: Any) -> bool:
        if not values:
            return False
        value = values[-1]
        self.kept = isinstance(value, KeptRows)
        self.value = list(value) if self.kept else value
        return True


# --------------------------------------------------------------------------- what prompts show


class PromptKeys(TypedDict, total=False):
    """What every agent's prompt shows: the question, the evidence and the database."""

    question: str
    evidence: str
    db_name: str
    dialect: str
    schema_text: str
    """The schema as the agents see it (after the Selector, when it ran)."""
    foreign_keys_text: str
    value_matches_text: str
    """Stored values the linking stage matched, as `table.column = 'value'` lines."""
    previous_sql: str


class ReviewTask(PromptKeys, total=False):
    """What one R^3 reviewer is sent (a `Send` payload)."""

    last_execution: ExecutionRecord
    persona: str
    index: int
    round: int


# --------------------------------------------------------------------------- MAC-SQL


class MacSqlInput(TypedDict):
    """What a caller gives: a question, optional evidence, and a database."""

    question: Annotated[str, Field(description="The question, in natural language.")]
    db: Annotated[
        str,
        Field(
            description="The database: a SQLite file path, an SQLAlchemy URL "
            "(postgresql+psycopg://user:pw@host/db), or 'demo' for macsql's own demo database."
        ),
    ]
    evidence: NotRequired[
        Annotated[
            str,
            Field(
                description="Optional hints, such as 'A11 refers to average salary' "
                "(BIRD's external knowledge); used in BIRD style."
            ),
        ]
    ]
    messages: NotRequired[
        Annotated[
            list[AnyMessage],
            add_messages,
            Field(
                description="Optional conversation (as a MessagesState parent holds it): earlier "
                "human messages are earlier questions; when `question` is empty the last human "
                "message is the question."
            ),
        ]
    ]
    turns: NotRequired[
        Annotated[
            list[ConversationTurn],
            Field(
                description="Optional earlier turns (question, standalone_question, sql, "
                "outcome); on a thread with a checkpointer macsql keeps them itself."
            ),
        ]
    ]
    standalone_question: NotRequired[
        Annotated[
            str,
            Field(
                description="Set it equal to `question` when the question is already "
                "standalone: the conversation is then not used to rewrite it."
            ),
        ]
    ]
    previous_sql: NotRequired[
        Annotated[
            str,
            Field(
                description="The SQL a standalone `question` builds on (e.g. 'same, but per "
                "month'), shown to the agents as context."
            ),
        ]
    ]


class MacSqlOutput(TypedDict, total=False):
    """What a caller gets back. `sql` is always a query that was executed, or ''."""

    sql: str
    status: Literal["ok", "failed", "paused", "running"]
    """'ok' when `sql` ran without error; 'failed' otherwise; 'paused' while waiting for a
    person to approve the SQL (`approve_sql`); 'running' only in the state of a run in progress
    (streamed, or read from a checkpoint), never when a run has ended."""
    outcome: str
    """The classification of `sql`'s execution (ok, empty_result, syntax_error, ...)."""
    error: str | None
    columns: list[str]
    rows: Annotated[list[list[Any]], ResultRows()]
    """The result preview, at most `max_rows` rows. Returned, never saved with a conversation
    thread unless `Context.thread_rows` is on."""
    truncated: bool
    attempts: int
    """How many SQL executions the run made."""
    selector_used: bool
    selector_fallback: str | None
    """Why the Selector's reply was not applied as given, when it was not."""
    usage: Annotated[Usage, merge_usage]
    """Per agent: calls, input and output tokens (reasoning tokens apart), latency."""
    fallbacks: Annotated[list[Fallback], add_fallbacks]
    """Every reply an agent could not use as asked (no readable JSON, no SQL, cut off by the
    token limit, structured output refused) and what was done instead."""
    linking: dict[str, Any]
    """What the linking stage did: `route` ('full', 'linked' or 'off'), `reason`, kept and
    total column counts, the kept tables and columns (when cut), and the matched values."""
    standalone_question: str
    """The question the agents answered: the asked one, rewritten with the conversation when
    there was one."""
    answer: str
    """A short answer in words (`Context.answer`)."""


class SqlState(TypedDict, total=False):
    """The working keys every pipeline's schema loader and executor share."""

    dialect: str
    db_name: str
    schema: dict[str, Any]
    """The full schema (SchemaInfo.to_dict()); the source of truth for selection."""
    schema_text: str
    """The schema as the agents see it (after the Selector, when it ran)."""
    foreign_keys_text: str
    candidate_sql: str
    """The SQL waiting to be executed; '' when the last reply held none."""
    candidate_finish_reason: str
    """'length' when the reply that wrote `candidate_sql` was cut off; copied to its attempt."""
    candidate_reading: dict[str, Any]
    """How `candidate_sql` was chosen from a reply with several queries; copied to its attempt."""
    last_execution: ExecutionRecord
    tries: list[ExecutionRecord]
    """Each execution: sql, outcome, error. Replaced, never appended by a reducer."""
    fatal: bool
    """Set when the run cannot go on (bad input, model unreachable, SQL rejected); every router
    then sends the run to `finish` (`macsql.graph.routing.stopped`)."""
    model_error: str
    refines: int
    """Refiner turns this question; with the first SQL, they make at most `max_try_times` tries."""
    decomposition: str
    value_matches_text: str
    """Stored values the linking stage matched, as `table.column = 'value'` lines."""


class _Asked(TypedDict, total=False):
    """The input keys inside the state. The input schema requires them; in the state they are
    optional, so that a node's partial update type-checks as the state type."""

    question: str
    db: str
    evidence: str
    messages: Annotated[list[AnyMessage], add_messages]
    turns: list[ConversationTurn]
    asked: str
    """The question as the user asked it this run (`question` becomes the standalone one)."""
    previous_sql: str
    """The SQL of the previous turn, when the question builds on it (the writer sees it)."""
    thread_turn: bool
    """True while a run on a conversation thread is open: it then ends through `close_turn`,
    which records how the turn went and empties the working keys."""


class PipelineState(_Asked, MacSqlOutput, SqlState, total=False):
    """The keys every pipeline has: what the shared nodes (schema loader, Decomposer, executor)
    read and write, and what they return as updates. Each pipeline's state extends it."""


class MacSqlState(PipelineState, total=False):
    """Everything the MAC-SQL agents read and write."""

    selected_tables: list[str]


# --------------------------------------------------------------------------- SQLFixAgent


class SqlFixInput(MacSqlInput):
    """A question and database, and optionally the SQL to check and repair."""

    sql: NotRequired[
        Annotated[
            str,
            Field(description="The SQL to check and repair; when absent the SQLTool writes it."),
        ]
    ]


class SqlFixOutput(MacSqlOutput, total=False):
    """MAC-SQL's output, plus what the review and the repair did."""

    original_sql: str
    """The SQL that was reviewed (given, or written by the SQLTool)."""
    review: Review
    repaired: bool
    """True when `sql` is a repair that passed the check."""
    repair_attempts: int
    explanation: str
    """The SQLRefiner's explanation of its last choice."""


class SqlFixState(PipelineState, SqlFixOutput, total=False):
    """Everything the SQLFixAgent nodes read and write."""

    paraphrases: list[str]
    crafted: list[CraftedSql]
    """The QueryCrafter's candidates waiting to run (through approval, when it is on)."""
    candidates: list[Candidate]
    """Executed candidates, one per distinct result."""
    dropped_candidates: list[DroppedCandidate]
    similar_repairs: list[dict[str, Any]]
    failure_memory: list[RepairFailure]
    """Failed repair attempts with the check's feedback, for the next attempt to reflect on."""
    repair_choice: int


class MacSqlSqlFixState(_Asked, SqlFixOutput, total=False):
    """The keys the two stages of MAC-SQL + SQLFixAgent exchange."""


# --------------------------------------------------------------------------- R^3


def add_reviews(
    left: list[ReviewerComment] | None, right: list[ReviewerComment] | None
) -> list[ReviewerComment]:
    """Reviews written in parallel add up; `None` (from the writer's first turn) clears them, so
    a thread that asks a second question starts with no reviews."""
    if right is None:
        return []
    return [*(left or []), *right]


class R3Output(MacSqlOutput, total=False):
    """MAC-SQL's output, plus how the discussion went."""

    consensus: bool
    """True when the writer stood by the reviewed SQL; False when the rounds ran out."""
    review_turns: int
    debug_turns: int
    personas: list[str]
    """The reviewers' generated professions."""
    persona_fallback: str | None
    """Why default professions were used, when the persona reply could not be read."""


class R3State(PipelineState, R3Output, total=False):
    """Everything the R^3 nodes read and write."""

    few_shots: list[FewShot]
    few_shot_error: str | None
    history: list[ChatTurn]
    """The writer's dialogue H."""
    history_dropped: int
    reviews: Annotated[list[ReviewerComment], add_reviews]
    """Every review of this question's rounds (round, index, persona, comment)."""
