"""How an agent calls its model: the Context's settings for that agent, then one call."""

from __future__ import annotations

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from macsql.core.context import Agent, BaseContext
from macsql.llm.calls import ModelReply, call_model
from macsql.llm.settings import ModelSettings
from macsql.llm.structured import StructuredRun


def settings_for(context: BaseContext, agent: Agent) -> ModelSettings:
    """The model `agent` uses under `context`, with the run's connection settings."""
    return ModelSettings(
        model=context.model_for(agent),
        base_url=context.base_url,
        api_key=context.api_key,
        temperature=context.temperature,
        timeout=context.model_timeout,
        max_retries=context.model_max_retries,
        max_tokens=context.max_output_tokens,
    )


def call_agent(
    context: BaseContext,
    agent: Agent,
    prompt: str | list[BaseMessage],
    *,
    system: str | None = None,
    schema: type[BaseModel] | None = None,
) -> ModelReply:
    """One model call for `agent`; failures come back as `ModelReply.error`, never raised.

    `schema` is the agent's answer as fields, asked for when `Context.reply_format` is
    'structured'; the reply's text is always there to read too."""
    wanted = schema if context.reply_format == "structured" else None
    return call_model(
        settings_for(context, agent),
        agent.value,
        prompt,
        system=system,
        schema=wanted,
        structured_run=structured_run_of(context) if wanted is not None else None,
    )


def structured_run_of(context: BaseContext) -> StructuredRun:
    """The run's memory of structured output, kept on its context object: LangGraph hands the
    same object to every node of a run (and an eval to every item), and a new run brings a new
    one, so a refusal is said once a run and a long-lived host tries again in its next run."""
    run = vars(context).get(_RUN_KEY)
    if run is None:
        run = vars(context).setdefault(_RUN_KEY, StructuredRun())
    return run


_RUN_KEY = "_macsql_structured_run"
