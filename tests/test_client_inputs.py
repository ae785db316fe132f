"""Inputs as clients other than macsql's own send them: a question in content blocks (Agent
Chat UI, OpenAI-style and LangChain standard blocks), and settings in `config["configurable"]`
(LangGraph's way before `context`, which the LangGraph servers read as the context)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from conftest import concert_db
from langchain_core.messages import AIMessage, HumanMessage

from macsql.core.context import ContextError
from macsql.graph.registry import get_pipeline, pipeline_names
from macsql.llm.models import registered_chat_model
from macsql.nodes.common.contextualize import split_messages
from macsql.testing.scripted import ScriptedChatModel

QUESTION = "How many singers sang in 2014?"
WORDS = QUESTION.split()
OTHER_BLOCKS: list[dict[str, Any]] = [
    {"type": "image_url", "image_url": {"url": "https://example.com/chart.png"}},
    {"type": "image", "url": "https://example.com/chart.png"},
    {"type": "reasoning", "reasoning": "the user wants a count"},
    {"type": "text-plain", "text": "an attached file", "mime_type": "text/plain"},
]


def _block(text: str, style: int) -> Any:
    return [{"type": "text", "text": text}, {"text": text}, text][style % 3]


def _splits() -> list[list[str]]:
    """The question cut into 1 to 4 blocks at every choice of word boundaries."""
    cuts = range(1, len(WORDS))
    out = []
    for n in range(0, 4):
        for chosen in itertools.combinations(cuts, n):
            bounds = [0, *chosen, len(WORDS)]
            out.append([" ".join(WORDS[a:b]) for a, b in itertools.pairwise(bounds)])
    return out


CONTENTS = [
    [_block(piece, style + i) for i, piece in enumerate(pieces)]
    + ([OTHER_BLOCKS[style % len(OTHER_BLOCKS)]] if style % 2 else [])
    for style, pieces in enumerate(_splits())
]


@pytest.mark.parametrize("content", CONTENTS, ids=lambda c: f"{len(c)}-blocks")
def test_a_question_in_content_blocks_reads_as_its_words(content: list[Any]) -> None:
    earlier: list[Any] = [HumanMessage(content=content), AIMessage("```sql\nSELECT 1\n```")]
    turns, latest = split_messages([*earlier, HumanMessage(content=content)])
    assert latest == QUESTION
    assert turns == [{"question": QUESTION, "sql": "SELECT 1"}]


def test_a_reply_split_into_blocks_keeps_its_sql() -> None:
    reply = AIMessage(content=[{"type": "text", "text": "```sql\nSELECT count(*) FR"}, "OM x\n```"])
    turns, _ = split_messages([HumanMessage("q"), reply, HumanMessage("and?")])
    assert turns == [{"question": "q", "sql": "SELECT count(*) FROM x"}]


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MACSQL_CACHE_DIR", str(tmp_path / "cache"))


@pytest.mark.parametrize("pipeline", pipeline_names())
def test_settings_in_configurable_are_the_context(pipeline: str) -> None:
    model = ScriptedChatModel(responder=lambda _p: "```sql\nSELECT count(*) FROM singer\n```")
    payload = {"question": "How many singers?", "db": str(concert_db())}
    with registered_chat_model("scripted-configurable", model) as name:
        out = get_pipeline(pipeline).invoke(payload, {"configurable": {"model": name}})
        assert out["status"] == "ok" and out["rows"] == [[6]]
        with pytest.raises(ContextError, match="max_rows must be at least 1, not 0"):
            get_pipeline(pipeline).invoke(payload, {"configurable": {"model": name, "max_rows": 0}})
