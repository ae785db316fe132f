"""Sample layouts that common fine-tuning tools read, one JSON object per line.

Every layout but ``openai`` carries the sample's ``metadata`` (agent, db_id, dataset, item,
question_id, difficulty, split, relabelled) in a field of its own, which trainers leave alone:
TRL's SFTTrainer drops the columns the model does not take, LLaMA-Factory reads only the columns
its ``dataset_info.json`` entry names, and Axolotl reads only its configured fields.

- ``chat``: ``{"messages": [{"role", "content"}, ...], "metadata"}``, OpenAI's chat layout, which
  TRL (``messages``), Axolotl (``type: chat_template``) and LLaMA-Factory (``sharegpt``
  formatting with OpenAI-style tags) take. An earlier assistant turn (a reply cut off at the
  token limit, a draft R^3's writer had to redo) carries ``"weight": 0``.
- ``sharegpt``: ``{"conversations": [{"from": "system"|"human"|"gpt", "value"}, ...]}``, with a
  system prompt as the first turn (FastChat's and Axolotl's convention).
- ``alpaca``: ``{"instruction", "input", "output"}``: the prompt is the instruction and the
  reply the output; a system prompt and earlier turns go in LLaMA-Factory's optional ``system``
  and ``history`` fields, only when there are any. (The released MAC-SQL data is a
  ``messages`` list, as ``chat``.)
- ``prompt-completion``: ``{"prompt": [messages...], "completion": [the reply]}``, TRL's
  conversational prompt-completion layout: SFTTrainer then computes the loss on the completion
  only, and every earlier turn is prompt.
- ``openai``: OpenAI's fine-tuning file, exactly its schema: ``{"messages": [...]}`` with
  ``"weight": 0`` on earlier assistant turns and no other key (the metadata goes to a
  ``.metadata.jsonl`` file beside it, line for line).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Messages = list[dict[str, Any]]
Metadata = dict[str, Any]
Layout = Callable[[Messages, Metadata | None], dict[str, Any]]

# Message roles as ShareGPT names its speakers.
SHAREGPT_SPEAKERS = {"system": "system", "user": "human", "assistant": "gpt"}


def message_text(message: dict[str, Any]) -> str:
    """A message's text, its content a string or a list of content blocks."""
    content = message.get("content")
    if isinstance(content, list):  # content blocks
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return str(content or "")


def _weighted(messages: Messages) -> Messages:
    """role/content messages; assistant turns before the last carry weight 0."""
    out: Messages = [{"role": m["role"], "content": message_text(m)} for m in messages]
    for message in out[:-1]:
        if message["role"] == "assistant":
            message["weight"] = 0
    return out


def chat(messages: Messages, metadata: Metadata | None = None) -> dict[str, Any]:
    return {"messages": _weighted(messages), **_meta(metadata)}


def openai(messages: Messages, metadata: Metadata | None = None) -> dict[str, Any]:
    return {"messages": _weighted(messages)}


def sharegpt(messages: Messages, metadata: Metadata | None = None) -> dict[str, Any]:
    return {
        "conversations": [
            {"from": SHAREGPT_SPEAKERS.get(m["role"], m["role"]), "value": message_text(m)}
            for m in messages
        ],
        **_meta(metadata),
    }


def alpaca(messages: Messages, metadata: Metadata | None = None) -> dict[str, Any]:
    system = "\n\n".join(message_text(m) for m in messages if m["role"] == "system")
    turns = [m for m in messages if m["role"] != "system"]
    *earlier, prompt, reply = turns
    sample: dict[str, Any] = {
        "instruction": message_text(prompt),
        "input": "",
        "output": message_text(reply),
    }
    if system:
        sample["system"] = system
    history = [
        [message_text(earlier[i]), message_text(earlier[i + 1])]
        for i in range(0, len(earlier) - 1, 2)
        if earlier[i]["role"] == "user" and earlier[i + 1]["role"] == "assistant"
    ]
    if history:
        sample["history"] = history
    return {**sample, **_meta(metadata)}


def prompt_completion(messages: Messages, metadata: Metadata | None = None) -> dict[str, Any]:
    plain = [{"role": m["role"], "content": message_text(m)} for m in messages]
    return {"prompt": plain[:-1], "completion": plain[-1:], **_meta(metadata)}


def _meta(metadata: Metadata | None) -> dict[str, Any]:
    return {"metadata": metadata} if metadata is not None else {}


FORMATS: dict[str, Layout] = {
    "chat": chat,
    "sharegpt": sharegpt,
    "alpaca": alpaca,
    "prompt-completion": prompt_completion,
    "openai": openai,
}
SIDECAR_METADATA = frozenset({"openai"})
"""Layouts whose metadata is written to a ``.metadata.jsonl`` file beside them."""
