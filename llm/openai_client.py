"""`ChatOpenAI` that keeps the reasoning OpenAI-compatible servers send beside the answer.

langchain-openai reads only the official API's fields, so the `reasoning_content` (or
`reasoning`) that vLLM's reasoning parsers, DeepSeek and others add to a message or a streamed
delta is dropped, in both the plain and the streaming path. This subclass copies it into the
message's `additional_kwargs["reasoning_content"]`, where `macsql.llm.reasoning` reads it, so
the trace keeps the model's thinking and the answer stays the answer.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI

_FIELDS = ("reasoning_content", "reasoning")


def _reasoning_of(message: Any) -> str | None:
    if not isinstance(message, dict):
        return None
    for name in _FIELDS:
        value = message.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def _as_dict(response: Any) -> dict[str, Any]:
    if isinstance(response, dict):
        return response
    dump = getattr(response, "model_dump", None)
    return dump(warnings=False) if callable(dump) else {}


class ReasoningChatOpenAI(ChatOpenAI):
    """ChatOpenAI, plus the reasoning text of OpenAI-compatible reasoning servers."""

    def _create_chat_result(
        self, response: Any, generation_info: dict[str, Any] | None = None
    ) -> ChatResult:
        result = super()._create_chat_result(response, generation_info)
        choices = _as_dict(response).get("choices") or []
        for generation, choice in zip(result.generations, choices, strict=False):
            reasoning = _reasoning_of((choice or {}).get("message"))
            if reasoning and isinstance(generation.message, AIMessage):
                generation.message.additional_kwargs["reasoning_content"] = reasoning
        return result

    def _convert_chunk_to_generation_chunk(
        self,
        chunk: dict[str, Any],
        default_chunk_class: type,
        base_generation_info: dict[str, Any] | None,
    ) -> ChatGenerationChunk | None:
        generated = super()._convert_chunk_to_generation_chunk(
            chunk, default_chunk_class, base_generation_info
        )
        choices = chunk.get("choices") or chunk.get("chunk", {}).get("choices") or []
        if generated is not None and choices:
            reasoning = _reasoning_of(choices[0].get("delta"))
            if reasoning and isinstance(generated.message, AIMessageChunk):
                # Chunks merge by concatenating string values of additional_kwargs.
                generated.message.additional_kwargs["reasoning_content"] = reasoning
        return generated
