"""Run-time configuration shared by every macsql graph.

LangGraph passes a `Context` to each node as `runtime.context`. LangGraph Studio shows its fields,
with the descriptions below, as the graph's configurable settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Literal

DatasetStyle = Literal["bird", "spider"]

AGENTS_WITH_MODELS = (
    "selector",
    "decomposer",
    "refiner",
    "reviewer",
    "query_crafter",
    "sql_refiner",
    "writer",
    "persona",
)


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

    def model_for(self, agent: str) -> str:
        """The model string an agent uses: its override, else the default."""
        override = getattr(self, f"{agent}_model", None)
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
