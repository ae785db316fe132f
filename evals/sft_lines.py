"""A fine-tuning line of any layout back into role/content messages: the inverse of
`macsql.evals.sft_formats`, so that `macsql train` reads every layout `export-sft` writes
(`prompt-completion`, `chat`, `openai`, `sharegpt`, `alpaca`) and TRL's standard
prompt/completion strings, which users bring from elsewhere.

One rule per layout, told apart by its keys; the content of a message may be a string or a
list of content blocks. What no layout explains is an error naming the layouts read.
"""

from __future__ import annotations

from typing import Any

from macsql.evals.sft_formats import SHAREGPT_SPEAKERS, message_text

LAYOUTS = "prompt/completion, messages, conversations (ShareGPT) or instruction/output (Alpaca)"

# ShareGPT's speakers as the export names them, and as FastChat, Axolotl and LLaMA-Factory
# files also do (a role's own name, "bot", "model").
_SHAREGPT_ROLES = {
    **{role: role for role in SHAREGPT_SPEAKERS},
    **{speaker: role for role, speaker in SHAREGPT_SPEAKERS.items()},
    "bot": "assistant",
    "model": "assistant",
}


class LineLayoutError(ValueError):
    """A line that no layout explains."""


def _role_messages(messages: Any) -> list[dict[str, str]]:
    if not isinstance(messages, list) or not all(
        isinstance(m, dict) and "role" in m and "content" in m for m in messages
    ):
        raise LineLayoutError("every message needs a role and a content")
    return [{"role": str(m["role"]), "content": message_text(m)} for m in messages]


def _sharegpt(turns: Any) -> list[dict[str, str]]:
    if not isinstance(turns, list) or not all(isinstance(t, dict) for t in turns):
        raise LineLayoutError("conversations must be a list of turns")
    messages = []
    for turn in turns:
        speaker = str(turn.get("from", turn.get("role", ""))).lower()
        if speaker not in _SHAREGPT_ROLES:
            raise LineLayoutError(f"a ShareGPT turn from {speaker or 'nobody'!r}")
        text = turn.get("value", turn.get("content"))
        messages.append(
            {"role": _SHAREGPT_ROLES[speaker], "content": message_text({"content": text})}
        )
    return messages


def _alpaca(line: dict[str, Any]) -> list[dict[str, str]]:
    messages = []
    if line.get("system"):
        messages.append({"role": "system", "content": str(line["system"])})
    for pair in line.get("history") or []:
        if not (isinstance(pair, list | tuple) and len(pair) == 2):
            raise LineLayoutError("an Alpaca history entry must be a [prompt, reply] pair")
        messages += [
            {"role": "user", "content": str(pair[0])},
            {"role": "assistant", "content": str(pair[1])},
        ]
    # Alpaca's own template, and LLaMA-Factory, put the input after the instruction.
    prompt = "\n".join(str(p) for p in (line["instruction"], line.get("input")) if p)
    messages += [
        {"role": "user", "content": prompt},
        {"role": "assistant", "content": str(line["output"])},
    ]
    return messages


def line_messages(line: Any) -> list[dict[str, str]]:
    """The line's messages, in order; its last one is the reply to learn."""
    if not isinstance(line, dict):
        raise LineLayoutError(f"a JSON {type(line).__name__}, not an object with {LAYOUTS}")
    if "prompt" in line and "completion" in line:
        prompt, completion = line["prompt"], line["completion"]
        if isinstance(prompt, str) and isinstance(completion, str):  # TRL's standard layout
            return [
                {"role": "user", "content": prompt},
                {"role": "assistant", "content": completion},
            ]
        return _role_messages(prompt) + _role_messages(completion)
    if "messages" in line:
        return _role_messages(line["messages"])
    if "conversations" in line:
        return _sharegpt(line["conversations"])
    if "instruction" in line and "output" in line:
        return _alpaca(line)
    raise LineLayoutError(f"no {LAYOUTS} in its keys ({', '.join(sorted(line)) or 'none'})")
