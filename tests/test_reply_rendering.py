"""A reply read as it renders: markdown quote marks, bold, numbered listings, HTML line breaks
and typographic punctuation are how the query was shown, not part of it.

Reading keeps positions: the rendered text has one character for each of the reply's.
"""

from __future__ import annotations

import random

import pytest
from reply_pieces import misread_queries

from macsql.replies.finder import find_sql
from macsql.replies.markup import as_rendered

GOLD = "SELECT name FROM singer WHERE country = 'France' AND age > 30"


@pytest.mark.parametrize(
    "reply",
    [
        "> SELECT name FROM singer\n> WHERE country = 'France' AND age > 30",
        "```sql\n1  SELECT name FROM singer\n2  WHERE country = 'France'\n3  AND age > 30\n```",
        "1 | SELECT name\n2 | FROM singer\n3 | WHERE country = 'France' AND age > 30",
        "SELECT name FROM singer<br>WHERE country = 'France' AND age > 30",
        f"**{GOLD}**",
        "SELECT name FROM singer WHERE country = ‘France’ AND age > 30",
        GOLD.replace(" ", "\u00a0"),
    ],
)
def test_a_rendered_query_reads_as_written(reply: str) -> None:
    assert " ".join((find_sql(reply, "sqlite").sql or "").split()) == GOLD


@pytest.mark.parametrize(
    ("reply", "sql"),
    [
        ("SELECT name FROM singer WHERE age\n> 30", "SELECT name FROM singer WHERE age\n> 30"),
        ("SELECT *\nFROM singer", "SELECT *\nFROM singer"),
        (
            "SELECT title FROM album WHERE title = 'It’s'",
            "SELECT title FROM album WHERE title = 'It’s'",
        ),
        ("SELECT count(*) FROM singer\n2 rows", "SELECT count(*) FROM singer"),
        ("SELECT __id__ FROM logs", "SELECT __id__ FROM logs"),
    ],
)
def test_what_only_looks_like_rendering_stays(reply: str, sql: str) -> None:
    assert find_sql(reply, "sqlite").sql == sql


def _render(rng: random.Random, sql: str) -> str:
    lines = sql.replace(" WHERE ", "\nWHERE ").replace(" FROM ", "\nFROM ").split("\n")
    form = rng.choice(["quote", "numbers", "br", "bold", "nbsp"])
    if form == "quote":
        return "\n".join(f"> {line}" for line in lines)
    if form == "numbers" and len(lines) >= 3:
        sep = rng.choice(["  ", " | ", ": ", ". "])
        return "\n".join(f"{n}{sep}{line}" for n, line in enumerate(lines, 1))
    if form == "br":
        return rng.choice(["<br>", "<br/>", "<BR />"]).join(lines)
    if form == "nbsp" and "'" not in sql and '"' not in sql:
        return sql.replace(" ", "\u00a0")
    return f"**{sql}**" if "\n" not in sql else sql


def test_every_query_reads_the_same_however_it_is_rendered() -> None:
    failures = misread_queries(_render, seed=5, cases=800)
    assert not failures, failures[:5]


def test_rendering_keeps_one_character_for_each() -> None:
    rng = random.Random(9)
    pieces = [
        "> ",
        "**",
        "__",
        "<br>",
        "1 ",
        "2 | ",
        "3. ",
        "\n",
        "\n\n",
        "SELECT a",
        " x ",
        "*",
        "_",
    ]
    for _ in range(2_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        assert len(as_rendered(text)) == len(text), text
