"""The SQL finder's rule on the classes of issue 24 (examples; `test_reply_generated` draws
thousands more): containers without `;`, several candidates, model-family markup.
"""

from __future__ import annotations

import json

import pytest

from macsql.llm.reasoning import split_reasoning
from macsql.replies.reader import read_sql

FINAL = "SELECT name FROM singer WHERE age > 30"
DRAFT = "SELECT * FROM concert"

# (case, reply): every reply holds FINAL as its one final query.
CONTAINERS = [
    ("sql tag", f"<sql>{FINAL}</sql>"),
    ("SQL tag on its own lines", f"<SQL>\n{FINAL}\n</SQL>"),
    ("answer tag in another case", f"Here:\n<Answer>{FINAL}</Answer>"),
    ("query tag around a fence", f"<query>\n```sql\n{FINAL}\n```\n</query>"),
    ("inline code with prose after", f"The query `{FINAL}` lists them."),
    ("label, a comment after", f"Query: {FINAL} -- lists the names"),
    ("label, a clause after", f"Answer: {FINAL}, which lists the names."),
    ("label, a word of prose after", f"SQL: {FINAL} which lists the names"),
    ("label, prose on the next line", f"SQL: {FINAL}\nThis lists the names."),
    ("bold label", f"**Final SQL:** {FINAL}"),
    ("a full stop after the query", f"The query is {FINAL}. Done."),
]

CANDIDATES = [
    (
        "an answer, then an example fence",
        f"```sql\n{FINAL}\n```\nFor example:\n```sql\n{DRAFT}\n```",
    ),
    ("an answer, then an alternative", f"{FINAL};\n\nAlternatively, you could write {DRAFT};"),
    ("a fenced draft, then the final unfenced", f"Draft:\n```sql\n{DRAFT}\n```\nFinal:\n{FINAL}"),
    (
        "sub-question fences, then a final SQL line",
        f"Sub question 1: x\nSQL\n```sql\n{DRAFT}\n```\nSub question 2: y\nSQL: {FINAL}",
    ),
    ("DDL echoed after the SELECT", f"```sql\n{FINAL}\n```\n```sql\nCREATE TABLE t (a INT)\n```"),
    ("a wrong query after the final", f"Final answer: {FINAL}\n\nThis one is wrong: {DRAFT}"),
    (
        "the final marker before a later plain query",
        f"<answer>{FINAL}</answer>\n```sql\n{DRAFT}\n```",
    ),
    (
        "a subquery quoted after the answer",
        "```sql\nSELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer)\n```\n"
        "The part `SELECT avg(age) FROM singer` computes the mean.",
    ),
    ("examples in other languages", f"例如：{DRAFT}；\n最终答案：{FINAL}；"),
]

MARKUP = [
    (
        "gpt-oss channels",
        f"<|channel|>analysis<|message|>Maybe {DRAFT}.<|end|>"
        f"<|start|>assistant<|channel|>final<|message|>{FINAL}<|return|>",
    ),
    ("channels with the specials removed", f"analysisMaybe {DRAFT}.assistantfinal{FINAL}"),
    ("template tokens left in", f"<|im_start|>assistant\n{FINAL}<|im_end|>"),
    ("DeepSeek's full-width tokens", f"{FINAL}<｜end▁of▁sentence｜>"),
    ("a full-width semicolon", f"{FINAL}；"),
    ("a full-width colon and semicolon", f"查询如下：{FINAL}；这个查询返回名字。"),
    ("JSON under an answer key", json.dumps({"answer": FINAL})),
    ("JSON under a final key, with a draft", json.dumps({"draft": DRAFT, "final": FINAL})),
    (
        "tool-call shaped text",
        "<tool_call>\n"
        + json.dumps({"name": "execute_sql", "arguments": {"query": FINAL}})
        + "\n</tool_call>",
    ),
    (
        "tool call with string arguments",
        json.dumps({"name": "sql", "arguments": json.dumps({"sql": FINAL})}),
    ),
    ("OpenAI tool calls as text", json.dumps([{"name": "run_sql", "arguments": {"query": FINAL}}])),
]


@pytest.mark.parametrize(
    "reply", [c[1] for c in CONTAINERS + CANDIDATES + MARKUP],
    ids=[c[0] for c in CONTAINERS + CANDIDATES + MARKUP],
)  # fmt: skip
def test_the_one_final_query_is_read(reply: str) -> None:
    reading = read_sql(reply, "sqlite")
    expected = "SELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer)"
    assert reading.sql in (FINAL, expected), reading
    assert reading.ambiguous == ""


def test_a_full_width_semicolon_inside_a_string_is_data() -> None:
    sql = "SELECT name FROM city WHERE district = '北京；东城'"
    assert read_sql(f"{sql}；", "sqlite").sql == sql


def test_the_reading_says_which_rule_chose_and_what_was_passed_over() -> None:
    reading = read_sql(f"```sql\n{FINAL}\n```\nFor example:\n```sql\n{DRAFT}\n```", "sqlite")
    assert reading.candidates == 2 and reading.rule.startswith("the last query")
    assert reading.passed_over == (f"an example ('example'): {DRAFT!r}",)
    assert reading.record() == {
        "rule": reading.rule,
        "candidates": 2,
        "passed_over": list(reading.passed_over),
    }
    assert read_sql(FINAL, "sqlite").record() == {}  # a lone query needs no record
    final = read_sql(f"Draft: {DRAFT}\n\nFinal answer: {FINAL}", "sqlite")
    assert final.rule == "marked final (answer)" and final.sql == FINAL


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (f"<answer>{FINAL}</answer>\n<answer>{DRAFT}</answer>", "2 different queries"),
        (f"For example:\n```sql\n{DRAFT}\n```", "introduced as an example"),
        (f"Alternatively: {DRAFT}; or e.g. {FINAL};", "introduced as an example"),
    ],
)
def test_an_ambiguous_choice_says_so(reply: str, why: str) -> None:
    reading = read_sql(reply, "sqlite")
    assert reading.sql is not None and why in reading.ambiguous


def test_two_queries_in_a_row_are_introduced_alike() -> None:
    # "For example:" introduces both fences; the plain query before them is the answer.
    reply = f"{FINAL};\n\nFor example:\n```sql\n{DRAFT}\n```\n```sql\nSELECT 1 FROM t\n```"
    assert read_sql(reply, "sqlite").sql == FINAL


def test_ddl_alone_is_read_so_that_the_guard_refuses_it_by_name() -> None:
    reading = read_sql("```sql\nDROP TABLE singer\n```", "sqlite")
    assert reading.sql == "DROP TABLE singer" and reading.ambiguous == ""


def test_prose_is_never_a_query() -> None:
    for prose in (
        "Select the names from singers older than 30.",
        "I would join the singer table with the concert table.",
        "With the singer table, select all of them.",
        "Use `SELECT DISTINCT` to drop duplicates.",
    ):
        assert read_sql(prose, "sqlite").sql is None, prose


def test_channel_markers_are_reasoning() -> None:
    reply = (
        f"<|channel|>analysis<|message|>Try {DRAFT}<|end|>"
        f"<|start|>assistant<|channel|>final<|message|>```sql\n{FINAL}\n```<|return|>"
    )
    answer, reasoning = split_reasoning(reply)
    assert answer == f"```sql\n{FINAL}\n```" and reasoning == f"Try {DRAFT}"
    # Without a final channel, the analysis is still reasoning and the rest the answer.
    answer, reasoning = split_reasoning(f"<|channel|>analysis<|message|>hmm<|end|>{FINAL}")
    assert answer == FINAL and reasoning == "hmm"


@pytest.mark.parametrize(
    "reply",
    [
        json.dumps({"sql": "SELECT 1"}),
        json.dumps([{"name": "run_sql", "arguments": {"sql": "SELECT 1;"}}]),  # a tool call
        "```sql\nSELECT 1\n```",
    ],
)
def test_a_query_without_from_in_the_answers_own_field_is_read(reply: str) -> None:
    # A fence labelled sql took it; the JSON `sql` field refused it as "not one query (it does
    # not parse)", which it does.
    assert read_sql(reply, "sqlite").sql == "SELECT 1"


def test_prose_in_the_answers_own_field_is_still_not_a_query() -> None:
    assert read_sql(json.dumps({"sql": "Select all singers"}), "sqlite").sql is None
