"""Model calls as real servers answer them: reasoning beside or inside the text, cut-off replies,
the output-token limit, structured output and its refusal (issue 12).

Everything runs through the real langchain-openai client against the local scripted server,
except where an in-process scripted model is the point (a model that cannot bind a schema).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from conftest import spider_db
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from macsql.cli.main import main
from macsql.core.context import Agent, Context, ContextError
from macsql.graph.macsql_graph import graph
from macsql.llm.agent_calls import call_agent
from macsql.llm.calls import call_model
from macsql.llm.openai_client import ReasoningChatOpenAI
from macsql.llm.settings import ModelSettings
from macsql.llm.structured import StructuredRun
from macsql.replies.reader import read_sql
from macsql.replies.schemas import SqlAnswer
from macsql.testing.scripted import ScriptedOpenAIServer, ScriptedReply

CONCERT = str(spider_db("concert_singer"))
FINAL = "SELECT count(*) FROM singer"
DRAFT = "SELECT count(*) FROM concert"


def _settings(server: ScriptedOpenAIServer, **extra: Any) -> ModelSettings:
    return ModelSettings(
        model="openai:scripted", base_url=server.base_url, api_key="k", max_retries=0, **extra
    )


def _stream(model: ChatOpenAI) -> Any:
    merged = None
    for chunk in model.stream("hi"):
        merged = chunk if merged is None else merged + chunk
    return merged


def test_stock_chat_openai_drops_reasoning_content_and_ours_keeps_it() -> None:
    reply = ScriptedReply(FINAL, reasoning=f"Draft: {DRAFT}")
    with ScriptedOpenAIServer(lambda prompt: reply) as server:
        kwargs: dict[str, Any] = {"model": "x", "base_url": server.base_url, "api_key": "k"}
        stock, ours = ChatOpenAI(**kwargs), ReasoningChatOpenAI(**kwargs)
        for message in (stock.invoke("hi"), _stream(stock)):
            assert "reasoning_content" not in message.additional_kwargs  # why the subclass exists
        for message in (ours.invoke("hi"), _stream(ours)):
            assert message.content == FINAL
            assert message.additional_kwargs["reasoning_content"] == f"Draft: {DRAFT}"


@pytest.mark.parametrize(
    "reply",
    [
        ScriptedReply(f"```sql\n{FINAL}\n```", reasoning=f"```sql\n{DRAFT}\n```"),
        f"<think>\nFirst try:\n```sql\n{DRAFT}\n```\n</think>\n```sql\n{FINAL}\n```",
    ],
    ids=["reasoning_content", "think-in-content"],
)
def test_reasoning_is_kept_apart_from_the_answer(reply: Any) -> None:
    with ScriptedOpenAIServer(lambda prompt: reply) as server:
        answered = call_model(_settings(server), "decomposer", "question")
    assert DRAFT not in answered.text and FINAL in answered.text
    assert DRAFT in answered.reasoning
    if isinstance(reply, ScriptedReply):  # the server counted its reasoning tokens
        assert answered.usage["decomposer"]["reasoning_tokens"] > 0


def test_a_cut_off_reply_says_so_and_the_limit_is_sent() -> None:
    cut = ScriptedReply("```sql\nSELECT count(*) FROM", finish_reason="length")
    with ScriptedOpenAIServer([cut]) as server:
        answered = call_model(_settings(server, max_tokens=123), "decomposer", "question")
        body = server.bodies[0]
    assert answered.cut_off and answered.finish_reason == "length"
    assert (body.get("max_tokens") or body.get("max_completion_tokens")) == 123


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
@pytest.mark.needs_data("spider")
def test_ask_with_a_reasoning_model_keeps_the_draft_out(
    stream: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    reply = ScriptedReply(f"SQL\n```sql\n{FINAL}\n```", reasoning=f"```sql\n{DRAFT}\n```")
    with ScriptedOpenAIServer(lambda prompt: reply) as server:
        args = ["ask", "How many singers?", "--db", CONCERT, "--json", "--dataset-style"]
        args += ["spider", "--model", "openai:scripted", "--base-url", server.base_url]
        code = main([*args, "--api-key", "k", *(["--stream"] if stream else [])])
    captured = capsys.readouterr()
    out = json.loads(captured.out.strip().splitlines()[-1])
    assert code == 0 and out["sql"] == FINAL and out["rows"] == [[6]]
    if stream:  # the reasoning is in the trace (the stream's events), never the answer
        assert "[decomposer] reasoning" in captured.err and DRAFT in captured.err


@pytest.mark.needs_data("spider")
def test_a_cut_off_decomposer_is_asked_once_more_for_the_final_query(scripted: Any) -> None:
    cut = ScriptedReply("Sub question 1: ...\nSQL\n```sql\nSELECT count(*) FROM sing", "", "length")
    model, context = scripted([cut, f"```sql\n{FINAL}\n```"], dataset_style="spider")
    out = graph.invoke({"question": "How many singers?", "db": CONCERT}, context=context)
    assert out["sql"] == FINAL and out["attempts"] == 1 and out["status"] == "ok"
    assert out["usage"]["decomposer"]["calls"] == 2
    assert "stopped at the length limit" in model.prompts[1]
    assert [f["kind"] for f in out["fallbacks"]] == ["cut_off"]


@pytest.mark.needs_data("spider")
def test_a_cut_off_reply_with_a_closed_block_is_used_and_marked_on_its_attempt(
    scripted: Any,
) -> None:
    cut = ScriptedReply(f"```sql\n{FINAL}\n```\nThis counts every singer in the", "", "length")
    model, context = scripted([cut], dataset_style="spider")
    states = graph.stream(
        {"question": "How many singers?", "db": CONCERT}, context=context, stream_mode="values"
    )
    final = list(states)[-1]
    assert final["sql"] == FINAL and len(model.prompts) == 1  # complete: not asked again
    assert [t.get("finish_reason") for t in final["tries"]] == ["length"]


@pytest.mark.needs_data("spider")
def test_the_refiner_hears_what_a_reply_held_instead_of_sql(scripted: Any) -> None:
    model, context = scripted(
        [
            "```sql\nSELECT count(*) FROM singer WHERE\n```",
            "I'm sorry, I cannot write that query.",
            f"```sql\n{FINAL}\n```",
        ],
        dataset_style="spider",
    )
    out = graph.invoke({"question": "How many singers?", "db": CONCERT}, context=context)
    assert out["sql"] == FINAL and out["status"] == "ok"
    assert "not one complete sqlite query" in model.prompts[1]  # a broken block, with why
    assert "incomplete WHERE" in model.prompts[1]
    assert "held no SQL query" in model.prompts[2] and "sorry" in model.prompts[2]
    assert [f["kind"] for f in out["fallbacks"]] == ["no_sql", "no_sql"]


@pytest.mark.needs_data("spider")
def test_fallbacks_are_in_ask_json_for_the_selector(capsys: pytest.CaptureFixture[str]) -> None:
    wide = str(spider_db("world_1"))

    def respond(prompt: str) -> str:
        if "You are the Selector" in prompt:
            return "I would keep the country table."  # no JSON: the full schema is kept
        return "SELECT count(*) FROM country"

    with ScriptedOpenAIServer(respond) as server:
        args = ["ask", "How many countries?", "--db", wide, "--json", "--model", "openai:x"]
        code = main([*args, "--base-url", server.base_url, "--api-key", "k"])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0 and out["selector_used"]
    assert [(f["agent"], f["kind"]) for f in out["fallbacks"]] == [("selector", "unreadable_reply")]
    with ScriptedOpenAIServer(respond) as server:  # and in the human-readable output
        args = ["ask", "How many countries?", "--db", wide, "--model", "openai:x"]
        assert main([*args, "--base-url", server.base_url, "--api-key", "k"]) == 0
    assert "note: [selector] the Selector's reply holds no table map" in capsys.readouterr().out


class _Answer(BaseModel):
    sql: str


def test_the_server_speaks_tool_calls_and_json_schema_streaming_and_not() -> None:
    with ScriptedOpenAIServer(lambda prompt: {"sql": FINAL}) as server:
        model = ReasoningChatOpenAI(model="x", base_url=server.base_url, api_key="k")
        for method in ("function_calling", "json_schema"):
            structured = model.with_structured_output(_Answer, method=method)  # type: ignore[arg-type]
            assert structured.invoke("q") == _Answer(sql=FINAL)
            chunks = list(structured.stream("q"))
            assert chunks[-1] == _Answer(sql=FINAL)
        assert server.bodies[0]["tools"] and server.bodies[2]["response_format"]


def test_structured_output_when_supported_and_its_refusal_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with ScriptedOpenAIServer(lambda prompt: {"reasoning": "r", "sql": FINAL}) as server:
        answered = call_model(_settings(server), "decomposer", "q", schema=SqlAnswer)
    assert answered.structured == {"reasoning": "r", "sql": FINAL}

    replies = [{"reasoning": "r", "sql": FINAL}] * 2
    run = StructuredRun()  # one run: the refusal is remembered and said once
    with ScriptedOpenAIServer(replies, reject_structured=True) as server:
        settings = _settings(server)
        with caplog.at_level(logging.WARNING, logger="macsql"):
            first = call_model(settings, "decomposer", "q", schema=SqlAnswer, structured_run=run)
            second = call_model(settings, "decomposer", "q", schema=SqlAnswer, structured_run=run)
        refused = [b for b in server.bodies if b.get("response_format") or b.get("tools")]
    assert len(refused) == 1 and server.requests == 3  # one refusal, then text twice
    assert first.structured is None and FINAL in first.text
    assert first.usage["decomposer"]["calls"] == 2  # the refused request counts
    assert len(first.notes) == 1 and "not supported" in first.notes[0]
    assert second.notes == [] and second.usage["decomposer"]["calls"] == 1
    assert len([r for r in caplog.records if "structured output" in r.getMessage()]) == 1


def test_a_model_that_cannot_bind_a_schema_falls_back_to_text(scripted: Any) -> None:
    model, context = scripted([f"```sql\n{FINAL}\n```"], reply_format="structured")
    answered = call_agent(context, Agent.DECOMPOSER, "q", schema=SqlAnswer)
    assert answered.text.endswith("```") and answered.structured is None
    assert answered.notes and len(model.prompts) == 1


def test_reply_settings_are_checked() -> None:
    with pytest.raises(ContextError, match="reply_format"):
        Context(reply_format="xml")  # type: ignore[arg-type]
    with pytest.raises(ContextError, match="max_output_tokens"):
        Context(max_output_tokens=0)
    assert Context().reply_format == "text" and Context().max_output_tokens == 4096


# --------------------------------------------------------------------------- issue 24


def test_an_answer_that_does_not_fit_the_schema_is_read_as_text_said_once_a_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The server accepts response_format but answers free text, then JSON of another shape.
    replies = [f"```sql\n{FINAL}\n```", json.dumps({"answer": FINAL})] * 2
    with ScriptedOpenAIServer(replies) as server:
        settings = _settings(server)
        with caplog.at_level(logging.WARNING, logger="macsql"):
            for run in (StructuredRun(), StructuredRun()):
                first = call_model(
                    settings, "decomposer", "q", schema=SqlAnswer, structured_run=run
                )
                second = call_model(
                    settings, "decomposer", "q", schema=SqlAnswer, structured_run=run
                )
                assert first.error is None and first.structured is None
                assert [read_sql(r.text).sql for r in (first, second)] == [FINAL, FINAL]
                assert len(first.notes) == 1 and second.notes == []  # once a run
                assert "reply_format=text" in first.notes[0]
        asked = [b for b in server.bodies if b.get("response_format") or b.get("tools")]
    assert len(asked) == 4 and server.requests == 4  # one request each: nothing asked twice
    assert len([r for r in caplog.records if "structured-output" in r.getMessage()]) == 2


@pytest.mark.needs_data("spider")
def test_a_refusal_is_remembered_for_the_run_not_the_process() -> None:
    # A long-lived host: each run (a new context) asks for structured output again.
    with ScriptedOpenAIServer(
        lambda prompt: f"```sql\n{FINAL}\n```", reject_structured=True
    ) as server:
        outputs = [
            graph.invoke(
                {"question": "How many singers?", "db": CONCERT},
                context=Context(
                    model="openai:scripted",
                    base_url=server.base_url,
                    api_key="k",
                    dataset_style="spider",
                    reply_format="structured",
                ),
            )
            for _ in range(2)
        ]
        refused = [b for b in server.bodies if b.get("response_format") or b.get("tools")]
    assert len(refused) == 2  # once in each run
    for out in outputs:
        assert out["sql"] == FINAL
        assert [f["kind"] for f in out["fallbacks"]] == ["structured_output"]


def test_a_tool_call_nobody_offered_is_read() -> None:
    reply = ScriptedReply("", tool_calls=(("execute_sql", {"query": FINAL}),))
    with ScriptedOpenAIServer(lambda prompt: reply) as server:
        answered = call_model(_settings(server), "decomposer", "question")
        streamed = ReasoningChatOpenAI(model="x", base_url=server.base_url, api_key="k")
        assert _stream(streamed).tool_calls[0]["args"] == {"query": FINAL}
    assert answered.error is None and read_sql(answered.text).sql == FINAL


@pytest.mark.needs_data("spider")
def test_how_the_query_was_chosen_is_on_its_attempt_and_an_ambiguous_choice_is_a_fallback(
    scripted: Any,
) -> None:
    replies = [
        f"```sql\n{FINAL}\n```\nFor example, you could also write:\n```sql\n{DRAFT}\n```",
        f"For example:\n```sql\n{FINAL}\n```",  # only an example: used, and said
    ]
    for reply, ambiguous in zip(replies, (False, True), strict=True):
        _model, context = scripted([reply], dataset_style="spider")
        states = graph.stream(
            {"question": "How many singers?", "db": CONCERT}, context=context, stream_mode="values"
        )
        final = list(states)[-1]
        assert final["sql"] == FINAL
        reading = final["tries"][0].get("reply_reading", {})
        kinds = [f["kind"] for f in final["fallbacks"]]
        if ambiguous:
            assert kinds == ["ambiguous_sql"] and "introduced as an example" in reading["ambiguous"]
        else:
            assert kinds == [] and reading["candidates"] == 2
            assert reading["passed_over"] == [f"an alternative ('could also'): {DRAFT!r}"]


@pytest.mark.needs_data("spider")
@pytest.mark.parametrize(
    ("selection", "fallback"),
    [
        ('{"tables": {"COUNTRY": "keep", "city": false, "countrylanguage": false}}', None),
        ('["country"]', None),
        ('{"country": "keep_all", "planets": "keep_all"}', "unknown table 'planets' ignored"),
        ('{"tables": {"planets": "keep_all"}}', "names no table of the schema, full schema kept"),
        ('{"country": "maybe", "city": "drop_all"}', "unrecognised choice for 'country'"),
    ],
)
def test_the_selectors_reply_is_applied_or_its_fallback_says_why(
    selection: str, fallback: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    def respond(prompt: str) -> str:
        if "You are the Selector" in prompt:
            return selection
        return "SELECT count(*) FROM country"

    with ScriptedOpenAIServer(respond) as server:
        args = ["ask", "How many countries?", "--db", str(spider_db("world_1")), "--json"]
        code = main([*args, "--model", "openai:x", "--base-url", server.base_url, "--api-key", "k"])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0 and out["selector_used"] and out["rows"] == [[239]]
    details = [f["detail"] for f in out["fallbacks"] if f["agent"] == "selector"]
    assert len(details) == (0 if fallback is None else 1)
    assert fallback is None or fallback in details[0]
