"""sqlglot runs as its compiled build (sqlglotc), and the guard's MySQL writer works with it.

The compiled writer classes cannot be subclassed in Python: the guard's one change to MySQL's
writer (REGEXP written as the operator both MySQL and MariaDB read, not REGEXP_LIKE) must
hold there, or every MySQL statement with a regular expression is refused as unwritable.
"""

from __future__ import annotations

import random

from sqlglot import tokens

from macsql.database.guard import check_statement


def test_the_compiled_build_is_installed() -> None:
    # pyproject asks for sqlglot[c]; without it every parse costs about three times the CPU.
    assert tokens.SQLGLOTC_INSTALLED


def test_mysql_regular_expressions_are_written_as_the_operator() -> None:
    rng = random.Random(31)
    columns = ["name", "country", "song_name"]
    for _ in range(200):
        column = rng.choice(columns)
        pattern = "".join(rng.choice("abcJ^$[]-z.") for _ in range(rng.randint(1, 8)))
        pattern = pattern.replace("'", "")
        word = rng.choice(["REGEXP", "RLIKE", "regexp", "NOT REGEXP"])
        sql = f"SELECT {column} FROM singer WHERE {column} {word} '{pattern}'"
        verdict = check_statement(sql, "mysql")
        if not verdict.allowed:  # a pattern the guard refuses as unbounded, never as unwritable
            assert verdict.kind != "unsupported", (sql, verdict.reason)
            continue
        assert verdict.sql is not None
        assert "REGEXP_LIKE" not in verdict.sql.upper(), verdict.sql
        assert f"{column} REGEXP '" in verdict.sql, verdict.sql
