"""Run-time configuration shared by every macsql graph.

LangGraph passes a `Context` to each node as `runtime.context`. LangGraph Studio shows its fields,
with the descriptions below, as the graph's configurable settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Literal

DatasetStyle = Literal["bird", "spider"]


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

    @property
    def model_field(self) -> str:
        """The Context field holding this agent's model ('' means the default `model`)."""
        return "sql_generator" if self is Agent.SQL_TOOL else f"{self.value}_model"


def _doc(text: str, **extra: object) -> dict[str, object]:
    """Field metadata in the shape LangGraph turns into a JSON-schema description."""
    return {"description": text, **extra}


@dataclass(kw_only=True)
class Context:
    """Settings for one run of a macsql pipeline. Every field has a safe default."""

    model: str = field(
        default="openai:gpt-4o-mini",
        metadata=_doc(
            "Default chat model for every agent, as 'provider:name' for langchain's "
            "init_chat_model (e.g. 'openai:gpt-4o-mini'). Any OpenAI-compatible server "
            "works with provider 'openai' and base_url."
        ),
    )
    selector_model: str | None = field(
        default=None, metadata=_doc("Model for the Selector; empty means `model`.")
    )
    decomposer_model: str | None = field(
        default=None, metadata=_doc("Model for the Decomposer; empty means `model`.")
    )
    refiner_model: str | None = field(
        default=None, metadata=_doc("Model for the Refiner; empty means `model`.")
    )
    reviewer_model: str | None = field(
        default=None, metadata=_doc("SQLFixAgent/R^3 reviewer model; empty means `model`.")
    )
    query_crafter_model: str | None = field(
        default=None, metadata=_doc("SQLFixAgent QueryCrafter model; empty means `model`.")
    )
    sql_refiner_model: str | None = field(
        default=None, metadata=_doc("SQLFixAgent SQLRefiner model; empty means `model`.")
    )
    writer_model: str | None = field(
        default=None, metadata=_doc("R^3 SQL writer model; empty means `model`.")
    )
    persona_model: str | None = field(
        default=None, metadata=_doc("R^3 reviewer-profession generator; empty means `model`.")
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
    temperature: float = field(default=0.0, metadata=_doc("Sampling temperature."))
    model_timeout: float = field(
        default=60.0, metadata=_doc("Seconds before one model call is abandoned.")
    )
    model_max_retries: int = field(
        default=2,
        metadata=_doc("Retries, with backoff, on rate limits, timeouts and server errors."),
    )
    max_try_times: int = field(
        default=3,
        metadata=_doc(
            "MAC-SQL's maxTryTimes: the most SQL executions in the executor/refiner loop."
        ),
    )
    selector_max_avg_columns: float = field(
        default=6.0,
        metadata=_doc("Run the Selector when the mean columns per table exceeds this."),
    )
    selector_max_total_columns: int = field(
        default=30,
        metadata=_doc("Run the Selector when the total number of columns exceeds this."),
    )
    num_value_examples: int = field(
        default=6, metadata=_doc("Distinct value examples shown per column in the schema.")
    )
    sample_rows: int = field(
        default=2000,
        metadata=_doc("Rows sampled per table to pick value examples (bounds the cost)."),
    )
    query_timeout: float = field(
        default=30.0,
        metadata=_doc("Seconds before a SQL query is interrupted and classed as a timeout."),
    )
    max_rows: int = field(
        default=100, metadata=_doc("Row cap: the most result rows fetched from a query.")
    )
    max_cell_chars: int = field(
        default=120, metadata=_doc("Longer cell values are truncated in prompts and previews.")
    )
    dataset_style: DatasetStyle = field(
        default="bird",
        metadata=_doc(
            "'bird': evidence is used, the Decomposer decomposes, and an empty result or "
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
    # --- SQLFixAgent (graph `sqlfix`) ---
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
        metadata=_doc("SQLFixAgent QueryCrafter: question paraphrases, one candidate SQL each."),
    )
    max_repair_attempts: int = field(
        default=3,
        metadata=_doc(
            "SQLFixAgent SQLRefiner: most repair attempts; a failed one goes to the failure "
            "memory that the next attempt reflects on."
        ),
    )
    num_similar_repairs: int = field(
        default=3,
        metadata=_doc("SQLFixAgent SQLRefiner: past repairs retrieved from the repair memory."),
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
            "Write each repair that passes the check into the repair memory, for later runs."
        ),
    )
    # --- R^3 (graph `r3`) ---
    num_reviewers: int = field(
        default=3, metadata=_doc("R^3: reviewer agents, each with a generated profession.")
    )
    max_debug_turns: int = field(
        default=3,
        metadata=_doc("R^3: most rewrites of the SQL writer after an execution error."),
    )
    max_review_turns: int = field(
        default=3,
        metadata=_doc("R^3: most review rounds (review, rebuttal or revision) before stopping."),
    )
    k_shot: int = field(
        default=0,
        metadata=_doc("R^3: training examples most similar to the question shown to the writer."),
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
            "turns are dropped first, the task message is always kept."
        ),
    )

    def model_for(self, agent: Agent) -> str:
        """The model string an agent uses: its override, else the default."""
        override = getattr(self, Agent(agent).model_field, None)
        return override or self.model

    @classmethod
    def field_names(cls) -> set[str]:
        return {f.name for f in fields(cls)}


def context_of(runtime: object) -> Context:
    """The run's Context; LangGraph gives `None` when the caller passed none."""
    ctx = getattr(runtime, "context", None)
    if isinstance(ctx, Context):
        return ctx
    if isinstance(ctx, dict):  # the LangGraph server may hand over plain JSON
        names = Context.field_names()
        return Context(**{k: v for k, v in ctx.items() if k in names})
    return Context()
