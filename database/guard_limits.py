"""The statement limits (`statement_limits.StatementLimits`), checked before the server sees a
query.

Every limit is checked in one pass over the tokens (before the parser) or one walk of the tree
(before the server), so the guard's cost grows linearly with the statement, and a server never
plans a query whose size alone makes it slow.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from macsql.database.statement_limits import (  # noqa: F401  (re-exported for the guard)
    DEFAULT_LIMITS,
    DEFAULT_MAX_BUILT_BYTES,
    StatementLimits,
    statement_limits,
)


def token_problem(tokens: Sequence[Token], limits: StatementLimits) -> str | None:
    """Why the token stream is too large or too deeply nested to parse, or None."""
    if len(tokens) > limits.max_nodes:
        return (
            f"the statement has {len(tokens):,} tokens; the limit is {limits.max_nodes:,} "
            "(Context.max_sql_nodes)"
        )
    depth = deepest = 0
    for token in tokens:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
            deepest = max(deepest, depth)
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
    if deepest > limits.max_depth:
        return (
            f"parentheses are nested {deepest} deep; the limit is {limits.max_depth} "
            "(Context.max_sql_depth)"
        )
    return None


class TreeSize:
    """Counts a tree's nodes, CTEs and SELECTs as the guard's one walk meets them."""

    __slots__ = ("ctes", "limits", "nodes", "selects")

    SEEN: tuple[type, ...] = (exp.CTE, exp.Select, exp.In)
    """The node types `see` does more with than count; `count` is `see` for any other."""

    def __init__(self, limits: StatementLimits) -> None:
        self.limits = limits
        self.nodes = self.ctes = self.selects = 0

    def count(self) -> str | None:
        """`see` for a node of none of the `SEEN` types."""
        self.nodes += 1
        if self.nodes > self.limits.max_nodes:
            return (
                f"the statement has more than {self.limits.max_nodes:,} syntax nodes "
                "(Context.max_sql_nodes)"
            )
        return None

    def see(self, node: object) -> str | None:
        """Why the tree is too large for a server to plan quickly, once it is; else None."""
        limits = self.limits
        too_many = self.count()
        if too_many is not None:
            return too_many
        if isinstance(node, exp.CTE):
            self.ctes += 1
            if self.ctes > limits.max_ctes:
                return (
                    f"the statement has more than {limits.max_ctes} CTEs; the limit is "
                    f"{limits.max_ctes} (Context.max_ctes)"
                )
        elif isinstance(node, exp.Select):
            self.selects += 1
            if self.selects > limits.max_query_blocks:
                return (
                    f"the statement has more than {limits.max_query_blocks} SELECTs; the limit "
                    f"is {limits.max_query_blocks} (Context.max_query_blocks)"
                )
        elif isinstance(node, exp.In) and len(node.expressions) > limits.max_in_list:
            return (
                f"an IN list has {len(node.expressions):,} values; the limit is "
                f"{limits.max_in_list:,} (Context.max_in_list). Use a join or a range instead"
            )
        return None


def tree_problem(root: exp.Expression, limits: StatementLimits) -> str | None:
    """Why the parsed statement is too large for a server to plan quickly, or None."""
    size = TreeSize(limits)
    for node in root.walk():
        problem = size.see(node)
        if problem is not None:
            return problem
    return None
