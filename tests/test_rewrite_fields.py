"""The rewriter's reply read as fields, whatever holds them (tags, HTML, tables, arrows).

The generated replies (`test_reply_generated.py`) draw these forms at random; these are the
examples, one per container, and the cases where a separator or a quote belongs to the question.
"""

from __future__ import annotations

import pytest

from macsql.replies.rewrite import read_rewrite

Q = "What are the names of singers older than 30?"


@pytest.mark.parametrize(
    ("reply", "builds"),
    [
        (f"<question>{Q}</question>\n<builds_on_previous_sql>yes</builds_on_previous_sql>", True),
        (f"<answer><standalone_question>{Q}</standalone_question></answer>", False),
        (f"<p><b>Question:</b> {Q}</p><p>Builds on the previous SQL: <i>yes</i></p>", True),
        (f"| field | value |\n|---|---|\n| question | {Q} |\n| builds | yes |", True),
        (f"Rewritten → {Q}", False),
        (f"Standalone question - {Q}\nBuilds on the previous SQL: no", False),
        (f'The standalone version is "{Q}"', False),
        (f"Question = {Q}", False),
    ],
)
def test_each_container_gives_the_question(reply: str, builds: bool) -> None:
    read = read_rewrite(reply)
    assert read.question == Q
    assert read.builds_on_sql is builds


def test_the_first_separator_ends_the_label() -> None:
    question = "What is the ratio: wins to losses for each team?"
    assert read_rewrite(f"Standalone question -> {question}").question == question
    assert read_rewrite(f'The standalone version is "{question}"').question == question


def test_an_imperative_question_in_quotes_is_read_without_them() -> None:
    question = "List the singer_id and name of every singer older than 30"
    assert read_rewrite(f'Rewritten, it reads "{question}"').question == question


def test_a_short_line_with_a_quoted_question_is_no_heading() -> None:
    read = read_rewrite(
        'Rewritten, it reads "北京的歌手有多少位？"\nBuilds on the previous SQL： No'
    )
    assert read.question == "北京的歌手有多少位？"


def test_a_dash_inside_a_bare_question_is_part_of_it() -> None:
    question = "Singers - how many are older than 30?"
    assert read_rewrite(question).question == question


def test_markup_escapes_are_read_as_text() -> None:
    read = read_rewrite("<p>Question: Which stadiums hold &gt; 5,000 people?</p>")
    assert read.question == "Which stadiums hold > 5,000 people?"
