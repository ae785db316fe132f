"""One model call for an agent, with usage accounting and failures turned into data.

Agents reply in text (JSON objects and ```sql fences, as in the papers), so any chat model works,
including servers with no tool-calling or structured-output support.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from macsql.graph.state import Usage
from macsql.llm.models import ModelConfigError, get_chat_model
from macsql.llm.request_slots import model_request_slot
from macsql.llm.settings import ModelSettings

AGENT_METADATA_KEY = "macsql_agent"
"""The run metadata key that names a model call's agent, for callbacks and in-process models."""

AGENT_HEADER = "X-Macsql-Agent"
"""The HTTP header naming the agent of a request to an OpenAI-compatible server. A header, not a
body field: the body stays what the server's API defines (OpenAI's `user` would reach OpenAI's
abuse monitoring), and servers and proxies ignore headers they do not know."""


@dataclass
class ModelReply:
    """The text of a reply, or the error that stopped it, plus the call's usage."""

    text: str
    error: str | None
    usage: Usage

    @property
    def failed(self) -> bool:
        return self.error is not None


def usage_entry(message: BaseMessage | None, latency: float, calls: int = 1) -> dict[str, float]:
    meta = getattr(message, "usage_metadata", None) or {}
    return {
        "calls": calls,
        "input_tokens": int(meta.get("input_tokens", 0) or 0),
        "output_tokens": int(meta.get("output_tokens", 0) or 0),
        "latency_s": round(latency, 6),
    }


def call_model(
    settings: ModelSettings,
    agent: str,
    prompt: str | list[BaseMessage],
    *,
    system: str | None = None,
) -> ModelReply:
    """Call the model once for `agent` (which names the call in usage and tags); a network,
    server or config failure becomes `error`."""
    messages: list[BaseMessage]
    messages = [HumanMessage(prompt)] if isinstance(prompt, str) else list(prompt)
    if system:
        messages.insert(0, SystemMessage(system))
    try:
        model = get_chat_model(settings)
    except ModelConfigError as exc:
        return ModelReply("", f"model configuration error: {exc}", {})
    except Exception as exc:  # a provider's package failing as it builds its client
        return _failed_call(agent, exc, 0.0)
    with model_request_slot():  # latency counts from the slot, not the wait for it
        started = time.perf_counter()
        try:
            reply = model.invoke(
                messages,
                config={"tags": [f"macsql:{agent}"], "metadata": {AGENT_METADATA_KEY: agent}},
                **_request_options(model, agent),
            )
        except Exception as exc:  # timeouts, HTTP errors after retries, provider errors
            return _failed_call(agent, exc, time.perf_counter() - started)
        latency = time.perf_counter() - started
    return ModelReply(_text_of(reply), None, {agent: usage_entry(reply, latency)})


def _request_options(model: BaseChatModel, agent: str) -> dict[str, Any]:
    """Per-request options that carry the agent over HTTP, for models on the OpenAI client
    (its `extra_headers`); other providers get none, since their clients may reject them."""
    from langchain_openai.chat_models.base import BaseChatOpenAI

    if isinstance(model, BaseChatOpenAI):
        return {"extra_headers": {AGENT_HEADER: agent}}
    return {}


def _failed_call(agent: str, exc: Exception, latency: float) -> ModelReply:
    return ModelReply(
        "",
        f"model call failed ({type(exc).__name__}): {_first_line(exc)}",
        {agent: usage_entry(None, latency)},
    )


def _text_of(message: Any) -> str:
    content = message.content if isinstance(message, AIMessage | BaseMessage) else message
    if isinstance(content, list):  # content blocks
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return str(content or "")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
