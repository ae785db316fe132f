"""A reply's SQL split into statements without the tokenizer when it cannot hold two (issue 31).

The rule: a text with no comment and no semicolon but a final one is one statement spanning
its first to its last non-blank character. Checked against the tokenizer on generated texts:
where the tokenizer reads the text, the pieces are the same; where it cannot, the one piece is
refused by the guard, so every caller ends where it did.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from macsql.nodes import replies

FRAGMENTS = (
    "SELECT", "select", "name", "T1.age", "count(*)", "FROM", "singer AS T1", "JOIN", "ON",
    "T1.id = T2.id", "WHERE", "country = 'France'", "'it''s'", '"Name"', "`col`", "[col]",
    "ORDER BY", "LIMIT 3", "GROUP BY", "HAVING", "(", ")", ",", "*", "1.5e3", "x'ab'", "$1",
    ":name", "@v", "?", "||", "<>", ">=", "UNION", "WITH t AS (SELECT 1)", "CASE WHEN", "END",
)  # fmt: skip
ODD = (
    "\u00a0", "\ufeff", "\x0b", "\x0c", "\x00", "é", "\u2028", "\\", "{", "}", "'", '"', "`",
    "-", "/", "*", "#", ";", "$$", "\u3000",
)  # fmt: skip
BLANKS = (" ", "  ", "\t", "\n", "\r\n", "\n\n")
DIALECTS = ("sqlite", "postgres", "mysql", "snowflake", "duckdb")


def generated_texts(count: int, seed: int) -> Iterator[str]:
    rng = random.Random(seed)
    for _ in range(count):
        parts = [rng.choice(BLANKS) if rng.random() < 0.3 else ""]
        for _ in range(rng.randint(0, 12)):
            roll = rng.random()
            parts.append(rng.choice(ODD) if roll < 0.15 else rng.choice(FRAGMENTS))
            parts.append(rng.choice(BLANKS) if rng.random() < 0.8 else "")
        if rng.random() < 0.4:
            parts.append(";" + rng.choice(("", *BLANKS)))
        yield "".join(parts)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_split_is_the_tokenizers_or_a_piece_the_guard_refuses(dialect: str) -> None:
    taken = refused = 0
    for text in generated_texts(1500, seed=31):
        fast = replies._statements(text, dialect)
        slow = replies._tokenized_statements(text, dialect)
        if fast != slow:
            assert slow is None and fast is not None and len(fast) == 1, repr(text)
            assert not replies._is_statement(fast[0], dialect), repr(text)
            refused += 1
        taken += fast is not None and slow is not None
    assert taken > 300 and refused > 10  # the generator reaches every kind of text


@pytest.mark.parametrize(
    ("reply", "tokenized"),
    [
        ("```sql\nSELECT name FROM singer WHERE age > 30\n```", 0),
        ("SQL\n```sql\nSELECT count(*) FROM singer;\n```\nQuestion Solved.", 0),
        # bare SQL: only the prose check of its select list tokenizes it
        ("SELECT name FROM singer WHERE country = 'France'", 1),
    ],
)
def test_one_statement_is_split_without_the_tokenizer(
    reply: str, tokenized: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = replies._ParsingDialect.tokenize

    def counted(self: replies._ParsingDialect, sql: str) -> list[object]:
        calls.append(sql)
        return real(self, sql)

    monkeypatch.setattr(replies._ParsingDialect, "tokenize", counted)
    reading = replies.read_sql(reply)
    assert reading.sql is not None and reading.sql.startswith("SELECT")
    assert not reading.sql.endswith(";")
    assert len(calls) == tokenized
