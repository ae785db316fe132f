"""The guard's walk applies its per-node rules (costs, sizes, functions, relations, statement
kinds) only to nodes of the types they concern, decided once per node type: the other nodes of a
tree (columns, names, literals, operators: most of them) are only counted."""

from __future__ import annotations

from typing import Any

import pytest
from sqlglot import exp

from macsql.database import guard
from macsql.database.guard import GuardKind, make_policy
from macsql.database.guard_costs import CostCheck
from macsql.database.guard_limits import StatementLimits
from macsql.database.guard_relations import Relations

SQL = (
    "SELECT T1.name, count(*) FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.singer_id "
    "WHERE T1.name LIKE 'A%' AND T2.year > 2014 GROUP BY T1.name ORDER BY 2 DESC LIMIT 3"
)


def _policy() -> guard.GuardPolicy:
    tables = frozenset(("main", n) for n in ("singer", "concert"))
    return make_policy(Relations(tables, frozenset(), ("main",)))


def test_cost_rules_see_only_calls_and_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[type[Any]] = []
    real = CostCheck.see

    def counted(self: CostCheck, node: object) -> str | None:
        seen.append(type(node))
        return real(self, node)

    monkeypatch.setattr(CostCheck, "see", counted)
    tree = guard._statement(SQL, "sqlite")
    assert isinstance(tree, exp.Expression)
    assert guard._check_tree(tree, "sqlite", _policy()).allowed
    walked: list[Any] = [type(node) for node in tree.walk()]
    assert seen == [t for t in walked if not guard._unruled(t, "sqlite")]
    assert exp.Count in seen and exp.Like in seen
    for only_counted in (exp.Column, exp.Identifier, exp.Literal, exp.GT, exp.Ordered):
        assert only_counted in walked and only_counted not in seen


def test_only_counted_nodes_still_count_toward_the_node_limit() -> None:
    # most of the statement's nodes are only counted: the count still reaches the limit
    tree = guard._statement(SQL, "sqlite")  # the parse's token count is checked before
    assert isinstance(tree, exp.Expression)
    verdict = guard._check_tree(tree, "sqlite", make_policy(limits=StatementLimits(max_nodes=10)))
    assert verdict.kind == GuardKind.TOO_COMPLEX
    assert "more than 10 syntax nodes" in (verdict.reason or "")


@pytest.mark.parametrize("dialect", ["sqlite", "postgres", "mysql", "duckdb"])
def test_a_type_is_only_counted_when_no_rule_names_it(dialect: str) -> None:
    counted: list[Any] = [exp.Column, exp.Identifier, exp.Literal, exp.EQ]
    ruled: list[Any] = [exp.Select, exp.CTE, exp.In, exp.Anonymous, exp.Like]
    ruled += [exp.SimilarTo, exp.Table, exp.DataType, exp.Insert, exp.Command]
    assert all(guard._unruled(node_type, dialect) for node_type in counted)
    assert not any(guard._unruled(node_type, dialect) for node_type in ruled)
    assert guard._unruled(exp.Parameter, dialect) == (dialect != "mysql")
