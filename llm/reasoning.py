"""Separating a reasoning model's thinking from its answer.

Reasoning models think before they answer, in one of two places: inside the reply's text, between
`<think>` and `</think>` (DeepSeek-R1, QwQ, Qwen3 served without a reasoning parser), or in a
field beside the text (`reasoning_content` from vLLM's reasoning parsers and DeepSeek's API,
reasoning content blocks from other providers). The thinking is kept for the trace; it is never
read as the answer, so a draft query in it cannot become the prediction.
"""

from __future__ import annotations

import re
from typing import Any

_TAGS = "think|thinking|reasoning"
_BLOCK = re.compile(rf"<({_TAGS})>(.*?)</\1>", re.S | re.I)
_CLOSE = re.compile(rf"</({_TAGS})>", re.I)
_OPEN = re.compile(rf"<({_TAGS})>", re.I)


def split_reasoning(text: str) -> tuple[str, str]:
    """(answer, reasoning) of a reply's text.

    Closed `<think>` blocks are removed. A closing tag with no opening one (chat templates that
    put `<think>` in the prompt) makes everything before it reasoning; an opening tag that never
    closes (a reply cut off while thinking) makes everything after it reasoning.
    """
    text = text or ""
    thoughts: list[str] = []

    def keep(match: re.Match[str]) -> str:
        thoughts.append(match.group(2).strip())
        return ""

    answer = _BLOCK.sub(keep, text)
    closing = list(_CLOSE.finditer(answer))
    if closing:
        last = closing[-1]
        thoughts.insert(0, _CLOSE.sub("", answer[: last.start()]).strip())
        answer = answer[last.end() :]
    opening = _OPEN.search(answer)
    if opening:
        thoughts.append(answer[opening.end() :].strip())
        answer = answer[: opening.start()]
    return answer.strip(), "\n\n".join(t for t in thoughts if t)


def reasoning_beside(message: Any) -> str:
    """The reasoning a chat message carries beside its text: `reasoning_content` (OpenAI-compatible
    servers; see `macsql.llm.openai_client`), or reasoning/thinking content blocks."""
    parts: list[str] = []
    extra = getattr(message, "additional_kwargs", None) or {}
    for key in ("reasoning_content", "reasoning"):
        value = extra.get(key)
        if isinstance(value, str) and value.strip():
            parts.append(value.strip())
            break
    content = getattr(message, "content", None)
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") in ("reasoning", "thinking"):
                value = block.get("reasoning") or block.get("thinking") or block.get("text")
                if isinstance(value, str) and value.strip():
                    parts.append(value.strip())
    return "\n\n".join(parts)
