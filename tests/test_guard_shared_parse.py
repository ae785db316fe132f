"""A query is checked twice per eval item: with no policy as its reply is read, with its
database's as it runs. The two checks share one parse of the model's text, and still reach each
policy's own verdict (the cached tree is only read). The text written back from it, which is
what runs, is parsed afresh by each check that allows the query (its writer may rearrange it)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlglot.parser import Parser

from macsql.database.guard import GuardKind, check_statement, make_policy
from macsql.database.guard_relations import Relations


def _tables(*names: str) -> Relations:
    return Relations(frozenset(("main", n) for n in names), frozenset(), ("main",))


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = Parser.parse

    def counted(self: Parser, raw_tokens: Any, sql: str | None = None) -> Any:
        seen.append(sql or "")
        return real(self, raw_tokens, sql)

    monkeypatch.setattr(Parser, "parse", counted)
    return seen


def test_checks_under_different_policies_parse_once(parses: list[str]) -> None:
    sql = "SELECT name FROM singer_shared_parse WHERE age > 30"
    assert check_statement(sql, "sqlite").allowed  # no inventory: the table may exist
    known = make_policy(_tables("singer_shared_parse"))
    assert check_statement(sql, "sqlite", known).allowed
    other = make_policy(_tables("concert"))
    verdict = check_statement(sql, "sqlite", other)
    assert not verdict.allowed and verdict.kind == GuardKind.UNKNOWN_RELATION
    written = check_statement(sql, "sqlite").sql
    assert parses == [sql, written, written]  # the third check refused: nothing written


def test_a_function_refused_by_one_policy_and_allowed_by_another(parses: list[str]) -> None:
    sql = "SELECT my_udf_shared_parse(name) FROM singer"
    assert check_statement(sql, "sqlite").kind == GuardKind.FORBIDDEN_FUNCTION
    allowed = make_policy(None, ["my_udf_shared_parse"])
    assert check_statement(sql, "sqlite", allowed).allowed
    assert check_statement(sql, "sqlite").kind == GuardKind.FORBIDDEN_FUNCTION
    assert parses == [sql, check_statement(sql, "sqlite", allowed).sql]
