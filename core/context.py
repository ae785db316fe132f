"""Run-time configuration of the macsql graphs.

LangGraph passes a context to each node as `runtime.context`, and LangGraph Studio shows the
fields of a graph's `context_schema`, with the descriptions below, as its settings. Each graph
has its own class, so Studio shows it only its own settings:

- `BaseContext`: what every pipeline shares (models, database bounds, dataset style);
- `MacSqlContext`, `SqlFixContext`, `R3Context`: one per pipeline;
- `Context`: every field of every pipeline, for the command line and for Python callers who run
  several pipelines with one object. Every graph accepts it.

Every field has a safe default, and every value is checked when the object is built
(`ContextError`, a `ValueError`, names the field and the allowed range).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from typing import Annotated, Any, Literal, TypeVar, get_args, get_origin, get_type_hints

from pydantic import Field, StringConstraints, TypeAdapter, ValidationError

DatasetStyle = Literal["bird", "spider"]
ReplyFormat = Literal["text", "structured"]
RepairScope = Literal["thread", "user", "database"]


class ContextError(ValueError):
    """A setting is out of its range or of the wrong type."""


class Agent(StrEnum):
    """Every agent that calls a model. The value names its usage entry, its stream events and
    its model-call tag (`macsql:<value>`); `model_field` names its Context override."""

    SELECTOR = "selector"
    DECOMPOSER = "decomposer"
    REFINER = "refiner"
    SQL_TOOL = "sql_tool"
    """SQLFixAgent's SQLTool when `sql_generator` names a model (else the Decomposer runs)."""
    REVIEWER = "reviewer"
    """SQLFixAgent's SQLReviewer and R^3's reviewers."""
    QUERY_CRAFTER = "query_crafter"
    SQL_REFINER = "sql_refiner"
    WRITER = "writer"
    PERSONA = "persona"
    CONTEXTUALIZER = "contextualizer"
    """Rewrites a follow-up question into a standalone one, from the conversation."""
    ANSWER = "answer"
    """Writes the answer in words (`Context.answer`)."""

    @property
    def model_field(self) -> str:
        """The Context field holding this agent's model ('' means the default `model`)."""
        return "sql_generator" if self is Agent.SQL_TOOL else f"{self.value}_model"


def _doc(text: str, *, minimum: float | None = None, **extra: object) -> dict[str, object]:
    """Field metadata in the shape LangGraph (through pydantic) turns into the JSON schema that
    Studio shows: `description`, and `ge` for `minimum`, so that Studio's form knows the range
    too. The range is also enforced when the context is built."""
    meta: dict[str, object] = {"description": text, **extra}
    if minimum is not None:
        meta["ge"] = minimum
    return meta


def _model_override(agent: str) -> Any:
    return field(default=None, metadata=_doc(f"Model for the {agent}; empty means `model`."))


@dataclass(kw_only=True)
class BaseContext:
    """Settings every pipeline shares: models, the database's bounds, the dataset style."""

    model: str = field(
        default="openai:gpt-4o-mini",
        metadata=_doc(
            "Default chat model for every agent, as 'provider:name' for langchain's "
            "init_chat_model (e.g. 'openai:gpt-4o-mini'). Any OpenAI-compatible server "
            "works with provider 'openai' and base_url."
        ),
    )
    base_url: str | None = field(
        default=None,
        metadata=_doc(
            "Base URL of an OpenAI-compatible server (vLLM, Ollama, llama.cpp). "
            "Empty means OPENAI_BASE_URL or OpenAI itself."
        ),
    )
    api_key: str | None = field(
        default=None,
        metadata=_doc("API key for the model server. Empty means OPENAI_API_KEY."),
    )
    temperature: float = field(default=0.0, metadata=_doc("Sampling temperature.", minimum=0))
    model_timeout: float = field(
        default=60.0,
        metadata=_doc("Seconds before one model call is abandoned.", minimum=0.001),
    )
    model_max_retries: int = field(
        default=2,
        metadata=_doc(
            "Retries, with backoff, on rate limits, timeouts and server errors.", minimum=0
        ),
    )
    num_value_examples: int = field(
        default=6,
        metadata=_doc("Distinct value examples shown per column in the schema.", minimum=0),
    )
    sample_rows: int = field(
        default=2000,
        metadata=_doc(
            "Rows sampled per table to pick value examples (bounds the cost).", minimum=1
        ),
    )
    query_timeout: float = field(
        default=30.0,
        metadata=_doc(
            "Seconds before a SQL query is interrupted and classed as a timeout.", minimum=0.001
        ),
    )
    max_rows: int = field(
        default=100,
        metadata=_doc("Row cap: the most result rows fetched from a query.", minimum=1),
    )
    max_cell_chars: int = field(
        default=120,
        metadata=_doc("Longer cell values are truncated in prompts and previews.", minimum=8),
    )
    dataset_style: DatasetStyle = field(
        default="bird",
        metadata=_doc(
            "'bird' (the default, also for your own databases, which are real ones like "
            "BIRD's): evidence is used, the Decomposer decomposes, and an empty result or "
            "NULLs trigger a refine. 'spider': simple questions are answered directly and "
            "empty results are accepted.",
            enum=["bird", "spider"],
        ),
    )
    approve_sql: bool = field(
        default=False,
        metadata=_doc(
            "Pause before each SQL execution (interrupt) so a person can approve or edit it."
        ),
    )
    allowed_functions: tuple[str, ...] = field(
        default=(),
        metadata=_doc(
            "More SQL functions the guard lets a query call, beyond its reviewed list of "
            "side-effect-free ones: names of your own pure functions ('name' or "
            "'schema.name'). Functions known to be unsafe (pg_sleep, pg_read_file, ...) stay "
            "refused. On the command line: --set allowed_functions=a,b."
        ),
    )
    allowed_relations: tuple[str, ...] = field(
        default=(),
        metadata=_doc(
            "More tables or views a query may read, beyond the database's own and the "
            "information_schema views: 'name' (any schema) or 'schema.name', e.g. "
            "'pg_stat_activity'. On the command line: --set allowed_relations=a,b."
        ),
    )
    max_output_tokens: int = field(
        default=4096,
        metadata=_doc(
            "The most tokens one model reply may have (sent as max_tokens; a reasoning "
            "model's thinking counts too). A reply cut off at this limit with no complete SQL "
            "is asked once more for the final query only.",
            minimum=1,
        ),
    )
    reply_format: ReplyFormat = field(
        default="text",
        metadata=_doc(
            "'text': agents reply in text (JSON objects, ```sql blocks, or any layout a model "
            "uses), which every chat model can do. 'structured': agents ask for their answer "
            "in a schema (langchain's structured output: tool calling or JSON schema); when "
            "the server rejects it or answers outside the schema, the reply is read as text "
            "and that model is asked for text until the run ends (a Context object is one run "
            "for this); the next run asks for structured output again.",
            enum=["text", "structured"],
        ),
    )
    schema_linking: bool = field(
        default=True,
        metadata=_doc(
            "Deterministic schema and value linking after load_schema (no model call): a "
            "schema over the link budget is cut to the best-matching columns (with keys and "
            "join paths) before any agent reads it, and stored values that match the question "
            "are shown to the SQL writers. Off: every agent sees the whole schema."
        ),
    )
    link_max_columns: int = field(
        default=0,
        metadata=_doc(
            "An optional ceiling on the columns linking keeps (keys and join columns "
            "included); 0, the default, sets none: the character budget alone governs.",
            minimum=0,
        ),
    )
    link_max_schema_chars: int = field(
        default=24000,
        metadata=_doc(
            "Link budget in characters (about 4 per token) of everything the linked schema "
            "puts in a prompt: the schema blocks, the key lines and the stored-value lines. "
            "A schema that fits is kept whole; a larger one is cut to fit. Size it to what "
            "the next stage can read: linking is recall-first, the Selector is the precision "
            "stage.",
            minimum=200,
        ),
    )
    link_max_values: int = field(
        default=10,
        metadata=_doc(
            "Stored values matched to the question and shown to the SQL writers as "
            "table.column = 'value' lines; 0 turns value linking off.",
            minimum=0,
        ),
    )
    link_index_rows_per_table: int = field(
        default=20000,
        metadata=_doc(
            "Value index build: most rows read per table (bounds the build cost).", minimum=1
        ),
    )
    link_index_values_per_column: int = field(
        default=2000,
        metadata=_doc(
            "Value index build: distinct values kept per column (all of them up to this, "
            "the most frequent first).",
            minimum=1,
        ),
    )
    link_index_max_values: int = field(
        default=20_000_000,
        metadata=_doc(
            "Value index build: a ceiling on the values kept per database (a safety bound, "
            "not shared out over the columns).",
            minimum=1,
        ),
    )
    link_embeddings: str | None = field(
        default=None,
        metadata=_doc(
            "Embeddings fused with the lexical column ranking by rank ('glove' for the "
            "offline GloVe word vectors of the `glove` extra, 'minilm' for the offline "
            "sentence model of the `minilm` extra, 'provider:name' for langchain's "
            "init_embeddings, or a name given to register_embeddings); empty means lexical "
            "ranking only. A schema's embeddings are computed once per schema version and "
            "cached on disk beside the value index."
        ),
    )
    send_rows_to_model: bool = field(
        default=True,
        metadata=_doc(
            "Show result cells to the agents (as the papers do). When off, prompts show a "
            "result's outcome and shape (columns, row count, types) only; value examples in "
            "the schema are governed by `num_value_examples`."
        ),
    )
    answer: bool = field(
        default=False,
        metadata=_doc(
            "Write a short answer in words from the question, the SQL and a preview of the rows "
            "(output key `answer`); one more model call."
        ),
    )
    answer_preview_rows: int = field(
        default=20,
        metadata=_doc("Most result rows the answer is written from.", minimum=1),
    )
    history_turns: int = field(
        default=6,
        metadata=_doc(
            "Most earlier turns of a conversation shown when a follow-up question is rewritten "
            "into a standalone one.",
            minimum=1,
        ),
    )
    thread_rows: bool = field(
        default=False,
        metadata=_doc(
            "Save the last result's rows with a conversation thread (off: rows are returned "
            "but never saved; the next turn does not need them, only its SQL and outcome)."
        ),
    )
    contextualizer_model: str | None = _model_override("follow-up question rewriter")
    answer_model: str | None = _model_override("answer writer")
    max_result_bytes: int = field(
        default=64 * 1024 * 1024,
        metadata=_doc(
            "Byte budget of one query result (with the row cap): a longer value or a larger "
            "result stops the query with the outcome 'result_too_large', never out of memory. "
            "A query may not ask a function to build a larger value (repeat, lpad, printf).",
            minimum=1024,
        ),
    )
    # Statement limits: checked before the server sees a query (outcome 'rejected'); the
    # defaults sit far above any real query and below what slows the guard or a server's
    # planner (docs/safety.md).
    max_sql_chars: int = field(
        default=20_000,
        metadata=_doc("Statement limit: characters of one SQL query.", minimum=1),
    )
    max_sql_nodes: int = field(
        default=4_000,
        metadata=_doc("Statement limit: tokens, and syntax-tree nodes, of one query.", minimum=1),
    )
    max_sql_depth: int = field(
        default=24,
        metadata=_doc("Statement limit: parentheses nested in one another.", minimum=1),
    )
    max_ctes: int = field(
        default=16,
        metadata=_doc("Statement limit: CTEs (WITH ... AS) in one query.", minimum=0),
    )
    max_query_blocks: int = field(
        default=32,
        metadata=_doc(
            "Statement limit: SELECTs in one query (subqueries, CTEs, set operations).",
            minimum=1,
        ),
    )
    max_in_list: int = field(
        default=500,
        metadata=_doc("Statement limit: values in one IN (...) list.", minimum=1),
    )
    max_pattern_chars: int = field(
        default=200,
        metadata=_doc(
            "Statement limit: characters of a constant LIKE or regular-expression pattern, "
            "and of the constant side of an edit distance (levenshtein).",
            minimum=1,
        ),
    )

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, list) and str(f.type).startswith("tuple["):
                value = tuple(value)  # JSON (the LangGraph server) has lists
            setattr(self, f.name, check_field(type(self), f.name, value, strict=True))

    def model_for(self, agent: Agent) -> str:
        """The model string an agent uses: its override, else the default."""
        override = getattr(self, Agent(agent).model_field, None)
        return override or self.model

    @classmethod
    def field_names(cls) -> set[str]:
        return {f.name for f in fields(cls)}


@dataclass(kw_only=True)
class _DecomposerModel:
    decomposer_model: str | None = _model_override("Decomposer")


@dataclass(kw_only=True)
class _ReviewerModel:
    reviewer_model: str | None = field(
        default=None,
        metadata=_doc("Model for the SQLFixAgent and R^3 reviewers; empty means `model`."),
    )


@dataclass(kw_only=True)
class MacSqlContext(BaseContext, _DecomposerModel):
    """MAC-SQL: Selector, Decomposer, and the executor/Refiner loop."""

    selector_model: str | None = _model_override("Selector")
    refiner_model: str | None = _model_override("Refiner")
    max_try_times: int = field(
        default=3,
        metadata=_doc(
            "MAC-SQL's maxTryTimes: the most tries at a question's SQL, the Decomposer's "
            "and each Refiner turn's (a reply with no SQL counts as one).",
            minimum=1,
        ),
    )
    selector_max_avg_columns: float = field(
        default=6.0,
        metadata=_doc("Run the Selector when the mean columns per table exceeds this.", minimum=0),
    )
    selector_max_total_columns: int = field(
        default=30,
        metadata=_doc("Run the Selector when the total number of columns exceeds this.", minimum=0),
    )


@dataclass(kw_only=True)
class SqlFixContext(BaseContext, _DecomposerModel, _ReviewerModel):
    """SQLFixAgent: SQLTool, SQLReviewer, QueryCrafter, SQLRefiner with repair memory."""

    query_crafter_model: str | None = _model_override("SQLFixAgent QueryCrafter")
    sql_refiner_model: str | None = _model_override("SQLFixAgent SQLRefiner")
    sql_generator: str = field(
        default="decomposer",
        metadata=_doc(
            "SQLFixAgent's SQLTool, which writes the first SQL (when none is given) and one "
            "candidate per paraphrase: 'decomposer' reuses MAC-SQL's Decomposer (its prompt "
            "and `decomposer_model`); any other value is a model ('provider:name') asked with "
            "a plain text-to-SQL prompt, e.g. a fine-tuned text-to-SQL model on vLLM."
        ),
    )
    num_paraphrases: int = field(
        default=3,
        metadata=_doc(
            "SQLFixAgent QueryCrafter: question paraphrases, one candidate SQL each.", minimum=0
        ),
    )
    max_repair_attempts: int = field(
        default=3,
        metadata=_doc(
            "SQLFixAgent SQLRefiner: most repair attempts; a failed one goes to the failure "
            "memory that the next attempt reflects on. 0 makes SQLFixAgent a detector only.",
            minimum=0,
        ),
    )
    num_similar_repairs: int = field(
        default=3,
        metadata=_doc(
            "SQLFixAgent SQLRefiner: past repairs retrieved from the repair memory.", minimum=0
        ),
    )
    repair_memory_file: str | None = field(
        default=None,
        metadata=_doc(
            "A JSON file of past repairs (question, wrong_sql, fixed_sql, ...) loaded into "
            "the repair memory (the graph's store) before the first retrieval."
        ),
    )
    record_repairs: bool = field(
        default=False,
        metadata=_doc(
            "Write each repair that passes the check into the repair memory, for later runs "
            "(within `repair_memory_scope`)."
        ),
    )
    repair_memory_scope: RepairScope = field(
        default="thread",
        metadata=_doc(
            "Who reads a recorded repair (it holds a question, SQL and the reviewer's reason): "
            "'thread' (the default) the same user, database and conversation thread only; "
            "'user' every thread of that user on that database; 'database' every user of that "
            "database. Seeded repairs (repair_memory_file) are read by everyone.",
            enum=["thread", "user", "database"],
        ),
    )
    user_id: str | None = field(
        default=None,
        metadata=_doc(
            "Who is asking, for the repair memory's namespace (default: the run config's "
            "`user_id` or LangGraph's authenticated user, else 'anonymous')."
        ),
    )


@dataclass(kw_only=True)
class R3Context(BaseContext, _ReviewerModel):
    """R^3: a SQL writer and generated reviewers that loop to consensus."""

    writer_model: str | None = _model_override("R^3 SQL writer")
    persona_model: str | None = _model_override("R^3 reviewer-profession generator")
    num_reviewers: int = field(
        default=3,
        metadata=_doc("R^3: reviewer agents, each with a generated profession.", minimum=1),
    )
    max_debug_turns: int = field(
        default=3,
        metadata=_doc("R^3: most rewrites of the SQL writer after an execution error.", minimum=0),
    )
    max_review_turns: int = field(
        default=3,
        metadata=_doc(
            "R^3: most review rounds (review, rebuttal or revision) before stopping.", minimum=0
        ),
    )
    k_shot: int = field(
        default=0,
        metadata=_doc(
            "R^3: training examples most similar to the question shown to the writer.", minimum=0
        ),
    )
    few_shot_pool: str | None = field(
        default=None,
        metadata=_doc(
            "R^3: a Spider- or BIRD-style JSON training file (question, query or SQL) to take "
            "k-shot examples from. Never an evaluation set."
        ),
    )
    few_shot_embeddings: str | None = field(
        default=None,
        metadata=_doc(
            "R^3: embeddings for k-shot similarity ('provider:name' for langchain's "
            "init_embeddings, or a name given to register_embeddings); empty means BM25."
        ),
    )
    program_of_thoughts: bool = field(
        default=False,
        metadata=_doc(
            "R^3: the writer reasons in Python (as text, never executed) before the SQL."
        ),
    )
    history_char_budget: int = field(
        default=60000,
        metadata=_doc(
            "R^3: most characters of the writer's dialogue history sent to the model; older "
            "turns are dropped first, the task message is always kept.",
            minimum=1,
        ),
    )


@dataclass(kw_only=True)
class MacSqlSqlFixContext(MacSqlContext, SqlFixContext):
    """MAC-SQL, then SQLFixAgent as a repair stage on its SQL."""


@dataclass(kw_only=True)
class Context(MacSqlSqlFixContext, R3Context):
    """Every setting of every pipeline: what the command line builds, and what a Python caller
    who runs several pipelines passes. Each graph reads only its own fields."""


def build_context(
    *,
    base: Context | None = None,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    max_try_times: int | None = None,
    query_timeout: float | None = None,
    dataset_style: str | None = None,
    overrides: Mapping[str, object] | None = None,
) -> Context:
    """The one factory of a `Context` from a caller's options, shared by the command line and the
    eval runner: each option given (a non-empty string, a number) replaces the default, or
    `base`'s value; then `overrides` (`--set FIELD=VALUE`) replace both. A value out of range
    raises `ContextError`, an unknown field `TypeError`."""
    changes: dict[str, object] = {}
    if model:
        changes["model"] = model
    if base_url:
        changes["base_url"] = base_url
    if api_key:
        changes["api_key"] = api_key
    if max_try_times is not None:
        changes["max_try_times"] = max_try_times
    if query_timeout is not None:
        changes["query_timeout"] = query_timeout
    if dataset_style:
        changes["dataset_style"] = dataset_style
    changes.update(overrides or {})
    return replace(base or Context(), **changes)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- checking

_VALIDATORS: dict[type[BaseContext], dict[str, TypeAdapter[Any]]] = {}
_Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


def field_validators(cls: type[BaseContext]) -> dict[str, TypeAdapter[Any]]:
    """Each field's pydantic validator: its declared type with the range its metadata states.
    The one definition of a valid value, for Python callers (strict) and for text (`--set`, lax)."""
    cached = _VALIDATORS.get(cls)
    if cached is not None:
        return cached
    hints = get_type_hints(cls)
    validators: dict[str, TypeAdapter[Any]] = {}
    for f in fields(cls):
        constraints: dict[str, Any] = {}
        if isinstance(f.metadata.get("ge"), int | float):
            constraints["ge"] = f.metadata["ge"]
        hint = hints[f.name]
        if float in get_args(hint) or hint is float:
            constraints["allow_inf_nan"] = False
        if get_origin(hint) is tuple:
            hint = tuple[
                Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)], ...
            ]
        annotated: Any = Annotated[hint, Field(**constraints)]
        validators[f.name] = TypeAdapter(annotated)
    return _VALIDATORS.setdefault(cls, validators)


def check_field(cls: type[BaseContext], name: str, value: Any, *, strict: bool) -> Any:
    """`value` as field `name` holds it; `ContextError` naming the field and what it takes."""
    try:
        return field_validators(cls)[name].validate_python(value, strict=strict)
    except ValidationError as exc:
        raise ContextError(_explain(cls, name, value, exc.errors()[0])) from None


def _explain(cls: type[BaseContext], name: str, value: Any, error: Any) -> str:
    kind, context = error["type"], error.get("ctx") or {}
    declared = get_type_hints(cls)[name]
    if value is None:
        return f"{name} must be set (it may not be empty)"
    if kind == "greater_than_equal":
        shown = f"{value:g}" if isinstance(value, int | float) else str(value)
        return f"{name} must be at least {context['ge']:g}, not {shown}"
    if kind == "finite_number":
        return f"{name} must be a finite number, not {value}"
    if kind == "literal_error":
        allowed = ", ".join(str(a) for a in get_args(declared) if a is not None)
        return f"{name} must be one of {allowed}, not {value!r}"
    if get_origin(declared) is tuple or any(get_origin(a) is tuple for a in get_args(declared)):
        return f"{name} must be a list of names, not {value!r}"
    wanted = next(
        (a for a in (bool, int, float, str) if a in (declared, *get_args(declared))), None
    )
    if wanted is not None:
        return f"{name} must be a {wanted.__name__}, not {type(value).__name__}"
    return f"{name}: {error['msg']}"


ContextT = TypeVar("ContextT", bound=BaseContext)


def _configurable_settings(cls: type[BaseContext]) -> dict[str, Any]:
    """The settings a run without a context gives in `config["configurable"]`, LangGraph's way
    before `context` (the LangGraph servers read it as the context; so does this, in process)."""
    from langgraph.config import get_config

    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # not inside a run
        return {}
    names = cls.field_names()
    return {k: v for k, v in configurable.items() if k in names}


def context_of(runtime: object, cls: type[ContextT]) -> ContextT:
    """The run's context as `cls`: LangGraph gives `None` when the caller passed none, the
    LangGraph server may hand over plain JSON, and a host may pass another pipeline's class
    (the fields `cls` knows are taken from it; the others keep their defaults)."""
    ctx = getattr(runtime, "context", None)
    if isinstance(ctx, cls):
        return ctx
    if ctx is None:
        ctx = _configurable_settings(cls)
        if not ctx:
            return cls()
    if isinstance(ctx, BaseContext):
        values: Mapping[str, Any] = {f.name: getattr(ctx, f.name) for f in fields(ctx)}
    elif isinstance(ctx, Mapping):
        values = ctx
    else:
        raise ContextError(f"the context must be a {cls.__name__} or a dict, not {type(ctx)}")
    names = cls.field_names()
    return cls(**{k: v for k, v in values.items() if k in names})
