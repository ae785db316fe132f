"""Sample layouts that common fine-tuning tools read, one JSON object per line.

- ``chat``: ``{"messages": [{"role", "content"}, ...]}``, OpenAI's layout, which TRL's
  SFTTrainer, Axolotl (``type: chat_template``) and LLaMA-Factory (``sharegpt`` formatting with
  OpenAI-style role/content tags) take.
- ``sharegpt``: ``{"conversations": [{"from": "system"|"human"|"gpt", "value"}, ...]}``, with a
  system prompt as the first turn (FastChat's and Axolotl's convention).
- ``alpaca``: ``{"instruction", "input", "output"}``, the layout of the released MAC-SQL
  agent-instruction data: the prompt is the instruction and the reply the output; a system
  prompt and earlier turns (R^3's writer converses) go in LLaMA-Factory's optional ``system``
  and ``history`` fields, only when there are any.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Messages = list[dict[str, Any]]

_SHAREGPT_ROLES = {"system": "system", "user": "human", "assistant": "gpt"}


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content blocks
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return str(content or "")


def chat(messages: Messages) -> dict[str, Any]:
    return {"messages": [{"role": m["role"], "content": _text(m)} for m in messages]}


def sharegpt(messages: Messages) -> dict[str, Any]:
    return {
        "conversations": [
            {"from": _SHAREGPT_ROLES.get(m["role"], m["role"]), "value": _text(m)} for m in messages
        ]
    }


def alpaca(messages: Messages) -> dict[str, Any]:
    system = "\n\n".join(_text(m) for m in messages if m["role"] == "system")
    turns = [m for m in messages if m["role"] != "system"]
    *earlier, prompt, reply = turns
    sample: dict[str, Any] = {"instruction": _text(prompt), "input": "", "output": _text(reply)}
    if system:
        sample["system"] = system
    history = [
        [_text(earlier[i]), _text(earlier[i + 1])]
        for i in range(0, len(earlier) - 1, 2)
        if earlier[i]["role"] == "user" and earlier[i + 1]["role"] == "assistant"
    ]
    if history:
        sample["history"] = history
    return sample


FORMATS: dict[str, Callable[[Messages], dict[str, Any]]] = {
    "chat": chat,
    "sharegpt": sharegpt,
    "alpaca": alpaca,
}
