"""A verdict writes its text from a tree of its own, parsed for it, without copying the tree
first: the writer may rearrange the tree it writes, so no tree is shared between verdicts.
Verdicts, not trees, are cached: a text checked under several policies is parsed once per
policy (in an eval each text meets one policy, its database's), and each policy still reaches
its own verdict."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from sqlglot import exp
from sqlglot.parser import Parser

from macsql.database import guard
from macsql.database.guard import GuardKind, check_statement, make_policy
from macsql.database.guard_relations import Relations


def _gold_queries(spider: Path, n: int, seed: int) -> list[str]:
    dev = json.loads((spider / "dev.json").read_text(encoding="utf-8"))
    return [d["query"] for d in random.Random(seed).sample(dev, n)]


def test_a_new_verdict_copies_no_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    copies: list[int] = []
    real_copy, real_deepcopy = exp.Expression.copy, exp.Expression.__deepcopy__

    def counted_copy(self: exp.Expression) -> exp.Expression:
        copies.append(1)
        return real_copy(self)

    def counted_deepcopy(self: exp.Expression, memo: Any) -> exp.Expression:
        copies.append(1)
        return real_deepcopy(self, memo)

    monkeypatch.setattr(exp.Expression, "copy", counted_copy)
    monkeypatch.setattr(exp.Expression, "__deepcopy__", counted_deepcopy)
    guard._cached_verdict.cache_clear()
    verdict = check_statement("SELECT name FROM singer WHERE age > 30 -- the oldest", "sqlite")
    assert verdict.allowed and verdict.sql == "SELECT name FROM singer WHERE age > 30"
    assert copies == []


@pytest.mark.needs_data("spider")
def test_one_text_under_two_policies_gets_the_same_written_text(spider_dir: Path) -> None:
    """Each verdict parses its own tree: writing one in place cannot change what the other
    verdict of the same text writes (seeded sample of Spider dev gold queries)."""
    tables = frozenset(("main", f"t{i}") for i in range(3))
    other = make_policy(Relations(tables, frozenset(), ("main",)), ("json_extract",))
    for sql in _gold_queries(spider_dir, 60, seed=35):
        guard._cached_verdict.cache_clear()
        first = check_statement(sql, "sqlite")
        second = check_statement(sql, "sqlite", other)
        again = check_statement(sql, "sqlite")
        assert first == again
        if first.allowed and second.allowed:
            assert first.sql == second.sql


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


def test_each_policy_parses_the_text_and_what_it_wrote(parses: list[str]) -> None:
    sql = "SELECT name FROM singer_tree_owner WHERE age > 30"
    assert check_statement(sql, "sqlite").allowed  # no inventory: the table may exist
    known = make_policy(_tables("singer_tree_owner"))
    assert check_statement(sql, "sqlite", known).allowed
    other = make_policy(_tables("concert"))
    verdict = check_statement(sql, "sqlite", other)
    assert not verdict.allowed and verdict.kind == GuardKind.UNKNOWN_RELATION
    written = check_statement(sql, "sqlite").sql  # cached: no parse
    # the third check refused before writing anything
    assert parses == [sql, written, sql, written, sql]


def test_a_function_refused_by_one_policy_and_allowed_by_another(parses: list[str]) -> None:
    sql = "SELECT my_udf_tree_owner(name) FROM singer"
    assert check_statement(sql, "sqlite").kind == GuardKind.FORBIDDEN_FUNCTION
    allowed = make_policy(None, ["my_udf_tree_owner"])
    assert check_statement(sql, "sqlite", allowed).allowed
    assert check_statement(sql, "sqlite").kind == GuardKind.FORBIDDEN_FUNCTION  # cached
    assert parses == [sql, sql, check_statement(sql, "sqlite", allowed).sql]
