"""`macsql train` reads every layout `export-sft` writes, and TRL's standard prompt/completion
strings: the same conversation written in each layout reads back as the same example."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from macsql.evals.sft_formats import FORMATS
from macsql.evals.sft_train import TrainError, read_examples

WORDS = [
    "SELECT",
    "name",
    "FROM",
    "singer",
    "WHERE",
    "âge",
    "> 3",
    "\n",
    "«quoted»",
    "-- note",
    "表",
]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))).strip() or "x"


def _conversation(rng: random.Random) -> list[dict[str, Any]]:
    """An optional system prompt, 0-2 earlier exchanges, then the prompt and its reply; a
    content is a string or a list of text blocks."""
    messages: list[dict[str, Any]] = []
    if rng.random() < 0.7:
        messages.append({"role": "system", "content": _text(rng)})
    for _ in range(rng.randint(0, 2)):
        messages += [
            {"role": "user", "content": _text(rng)},
            {"role": "assistant", "content": _text(rng)},
        ]
    messages += [
        {"role": "user", "content": _text(rng)},
        {"role": "assistant", "content": _text(rng)},
    ]
    if rng.random() < 0.3:
        last = messages[-2]
        last["content"] = [{"type": "text", "text": last["content"]}]
    return messages


def _expected(messages: list[dict[str, Any]]) -> dict[str, Any]:
    plain = [
        {
            "role": m["role"],
            "content": m["content"] if isinstance(m["content"], str) else m["content"][0]["text"],
        }
        for m in messages
    ]
    return {"prompt": plain[:-1], "completion": plain[-1:]}


@pytest.mark.parametrize("layout", sorted(FORMATS))
def test_each_layout_reads_back_as_the_same_example(layout: str, tmp_path: Path) -> None:
    rng = random.Random(f"layouts-{layout}")
    conversations = [_conversation(rng) for _ in range(60)]
    path = tmp_path / f"{layout}.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for number, messages in enumerate(conversations):
            out.write(json.dumps(FORMATS[layout](messages, {"item": number})) + "\n")
    assert read_examples(path) == [_expected(m) for m in conversations]


def test_trl_standard_strings_are_a_user_prompt_and_its_reply(tmp_path: Path) -> None:
    path = tmp_path / "standard.jsonl"
    path.write_text(json.dumps({"prompt": "How many singers?", "completion": "SELECT 1"}) + "\n")
    assert read_examples(path) == [
        {
            "prompt": [{"role": "user", "content": "How many singers?"}],
            "completion": [{"role": "assistant", "content": "SELECT 1"}],
        }
    ]


def test_an_alpaca_input_follows_its_instruction(tmp_path: Path) -> None:
    path = tmp_path / "alpaca.jsonl"
    line = {"instruction": "Write SQL.", "input": "How many singers?", "output": "SELECT 1"}
    path.write_text(json.dumps(line) + "\n")
    (example,) = read_examples(path)
    assert example["prompt"] == [{"role": "user", "content": "Write SQL.\nHow many singers?"}]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ([1, 2], "a JSON list, not an object with prompt/completion"),
        ({"text": "t"}, "no prompt/completion, messages, conversations (ShareGPT) or"),
        ({"conversations": [{"from": "narrator", "value": "x"}]}, "ShareGPT turn from 'narrator'"),
        ({"messages": [{"role": "user"}]}, "every message needs a role and a content"),
        ({"messages": [{"role": "user", "content": "q"}]}, "the last message must be the"),
        (
            {"messages": [{"role": "assistant", "content": "a"}, {"role": "user", "content": "q"}]},
            "the last message must be the assistant's reply",
        ),
        ({"instruction": "i", "output": "o", "history": [["q"]]}, "a [prompt, reply] pair"),
    ],
)
def test_a_line_no_layout_explains_names_its_place(line: Any, message: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"prompt": "q", "completion": "a"}) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(TrainError, match=f"{path.name}:2: ") as info:
        read_examples(path)
    assert message in str(info.value)
