"""Separating a reasoning model's thinking from its answer.

Reasoning models think before they answer, in one of three places: inside the reply's text,
between `<think>` and `</think>` (DeepSeek-R1, QwQ, Qwen3 served without a reasoning parser); in
the channels of an open-weight chat template printed raw (gpt-oss's
`<|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>final<|message|>...`); or
in a field beside the text (`reasoning_content` from vLLM's reasoning parsers and DeepSeek's API,
reasoning content blocks from other providers). The thinking is kept for the trace; it is never
read as the answer, so a draft query in it cannot become the prediction.

Chat-template tokens a server printed instead of removing (`<|im_end|>`, `<|eot_id|>`,
`<｜end▁of▁sentence｜>`, ...) are not part of the answer either.
"""

from __future__ import annotations

import re
from typing import Any

_TAGS = "think|thinking|reasoning"
_BLOCK = re.compile(rf"<({_TAGS})>(.*?)</\1>", re.S | re.I)
_CLOSE = re.compile(rf"</({_TAGS})>", re.I)
_OPEN = re.compile(rf"<({_TAGS})>", re.I)


# A chat template's special token, ASCII bars or DeepSeek's full-width ones, and a role name or a
# channel header right after the tokens that open a message.
# Templates without bars name theirs as a tag (Gemma's `<end_of_turn>`, SentencePiece's `</s>`
# and `<eos>`): printed raw, such a token is glued to the answer (`... = 'T'<eos>`).
_SPECIAL = re.compile(
    r"<\|[^<>|\s]{1,40}\|>|<｜[^<>｜]{1,40}｜>|</s>|<(?:eos|bos|end_of_turn|start_of_turn)>"
)
_ROLE_AFTER_START = re.compile(
    r"(<\|(?:im_start|start|start_header_id)\|>|<start_of_turn>)\s*"
    r"(?:assistant|user|system|developer|model)?"
    r"(?:<\|end_header_id\|>)?",
    re.I,
)
# One message of the harmony format: `<|channel|>NAME[ header]<|message|>BODY`, the body running to
# the message's end token or the next message.
_CHANNEL = re.compile(r"<\|channel\|>\s*([A-Za-z_]*)[^<]*?<\|message\|>")
_MESSAGE_END = re.compile(r"<\|(?:end|return|call|start)\|>|<\|channel\|>")
_REASONING_CHANNELS = frozenset({"analysis", "thinking", "reasoning", "think"})
# The same channels after a server removed the special tokens but kept their names:
# "analysisThe user wants ...assistantfinalSELECT ...".
_FLATTENED = re.compile(r"^\s*analysis(.*?)assistant\s*final(.*)$", re.S)


def split_channels(text: str) -> tuple[str, str]:
    """(answer, reasoning) of a reply in an open-weight chat template's channels.

    The `final` channel is the answer when there is one, and everything else is reasoning;
    without one, the analysis channels are reasoning and the rest is the answer. Left-over
    template tokens are removed. A reply without channels is returned as it is.
    """
    if "<|message|>" not in text:
        flattened = _FLATTENED.match(text) if "assistant" in text else None
        if flattened is None:
            return (_strip_special(text), "") if "<" in text else (text, "")
        return flattened.group(2).strip(), flattened.group(1).strip()
    starts = list(_CHANNEL.finditer(text))
    # (channel, text): each message, and the text outside any message (channel "").
    parts: list[tuple[str, str]] = [("", text[: starts[0].start()] if starts else text)]
    for i, start in enumerate(starts):
        limit = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        end = _MESSAGE_END.search(text, start.end(), limit)
        stop = end.start() if end else limit
        parts.append((start.group(1).lower(), text[start.end() : stop]))
        parts.append(("", text[stop:limit]))
    if any(channel == "final" for channel, _ in parts):
        answer = "\n\n".join(body for channel, body in parts if channel == "final")
        thoughts = [body for channel, body in parts if channel != "final"]
    else:
        answer = "\n\n".join(b for c, b in parts if c not in _REASONING_CHANNELS)
        thoughts = [b for c, b in parts if c in _REASONING_CHANNELS]
    reasoning = "\n\n".join(t for t in (_strip_special(t).strip() for t in thoughts) if t)
    return _strip_special(answer).strip(), reasoning


def _strip_special(text: str) -> str:
    return _SPECIAL.sub("", _ROLE_AFTER_START.sub("", text))


def split_reasoning(text: str) -> tuple[str, str]:
    """(answer, reasoning) of a reply's text.

    Chat-template channels are split first (`split_channels`). Closed `<think>` blocks are
    removed. A closing tag with no opening one (chat templates that
    put `<think>` in the prompt) makes everything before it reasoning; an opening tag that never
    closes (a reply cut off while thinking) makes everything after it reasoning.
    """
    text, channel_thoughts = split_channels(text or "")
    thoughts: list[str] = [channel_thoughts] if channel_thoughts else []

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
