"""Prompts: our own few-shot demonstrations, never taken from an evaluation set."""

from __future__ import annotations

import json
import re
from string import Template

import pytest
from conftest import BIRD, SPIDER

from macsql.prompts import load_prompt, prompt_names, render_prompt


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _dev_texts() -> list[str]:
    spider = json.loads((SPIDER / "dev.json").read_text())
    bird = json.loads((BIRD / "dev.json").read_text())
    texts = [item["question"] for item in spider] + [item["query"] for item in spider]
    texts += [item["question"] for item in bird] + [item["SQL"] for item in bird]
    return [_normalise(t) for t in texts if len(t) > 25]


@pytest.mark.slow
@pytest.mark.needs_data("spider", "bird")
def test_no_dev_question_or_sql_appears_in_any_prompt() -> None:
    prompts = {name: _normalise(load_prompt(name).template) for name in prompt_names()}
    assert len(prompts) >= 4
    dev = _dev_texts()
    assert len(dev) > 5000
    for name, text in prompts.items():
        leaked = [d for d in dev if d in text]
        assert not leaked, f"{name} quotes evaluation items: {leaked[:3]}"


@pytest.mark.slow
@pytest.mark.needs_data("spider", "bird")
def test_demonstration_lines_are_not_dev_items() -> None:
    dev = set(_dev_texts())
    for name in prompt_names():
        for line in load_prompt(name).template.splitlines():
            if line.startswith(("[Question]", "SELECT", "Sub question")):
                body = _normalise(line.split("]", 1)[-1] if line.startswith("[") else line)
                assert body not in dev, f"{name}: {line}"


@pytest.mark.parametrize("name", ["selector", "decomposer_bird", "decomposer_spider", "refiner"])
def test_mac_sql_templates_fill_every_placeholder(name: str) -> None:
    names = {
        m.group("named") or m.group("braced")
        for m in Template.pattern.finditer(load_prompt(name).template)
        if m.group("named") or m.group("braced")
    }
    values = {key: f"<{key}>" for key in names}
    text = render_prompt(name, **values)
    assert "$" not in text.replace("$dialect", "")
    assert "<question>" in text and "<schema>" in text
    with pytest.raises(KeyError):
        render_prompt(name)
