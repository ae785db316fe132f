"""How large a statement may be before anything parses or runs it: `StatementLimits`.

Every limit is checked in one pass over the tokens (before the parser) or one walk of the tree
(before the server), so the guard's cost grows linearly with the statement, and a server never
plans a query whose size alone makes it slow: a PostgreSQL planner spent 10 s on a chain of 600
CTEs, deaf to its `statement_timeout`. The defaults sit far above any real text-to-SQL query (the
largest of Spider's and BIRD's 9,568 gold queries has 1,446 characters, 361 tokens, 272 tree
nodes, parentheses 7 deep, 3 CTEs, 8 SELECTs and an IN list of 18), and far below what slows
either the guard or a server. `Context` exposes each one (`max_sql_chars`, ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

DEFAULT_MAX_BUILT_BYTES = 2 * 1024 * 1024
"""The most a query may ask functions to build from constants in one row (repeat, lpad, printf
widths, ...): one such call is one step no engine interrupts, and SQLite's printf('%.*c', n)
took 0.6 s for 10 million characters, whatever its length limit. No text-to-SQL query builds
megabytes of padding."""


@dataclass(frozen=True, slots=True)
class StatementLimits:
    """The most a statement may hold; see the module's rationale for the defaults."""

    max_chars: int = 20_000
    """Characters of SQL text."""
    max_nodes: int = 4_000
    """Tokens, and nodes of the syntax tree."""
    max_depth: int = 24
    """Parentheses nested in one another (subqueries, calls, expressions)."""
    max_ctes: int = 16
    """Common table expressions (WITH ... AS) in the whole statement."""
    max_query_blocks: int = 32
    """SELECTs in the whole statement (subqueries, CTEs and set operations each add one)."""
    max_in_list: int = 500
    """Values in one IN (...) list."""
    max_pattern_chars: int = 200
    """Characters of a constant LIKE, SIMILAR TO or regular-expression pattern, and of the
    short constant side of an edit-distance function."""
    max_built_bytes: int = DEFAULT_MAX_BUILT_BYTES
    """The bytes a query may ask functions to build from constants in one row, summed over its
    builders (repeat, lpad, printf widths, ...); at most the result's byte budget."""


DEFAULT_LIMITS = StatementLimits()

# The Context field of each limit.
_SETTINGS = {
    "max_chars": "max_sql_chars",
    "max_nodes": "max_sql_nodes",
    "max_depth": "max_sql_depth",
    "max_ctes": "max_ctes",
    "max_query_blocks": "max_query_blocks",
    "max_in_list": "max_in_list",
    "max_pattern_chars": "max_pattern_chars",
    "max_built_bytes": "max_result_bytes",
}


def statement_limits(settings: object | None) -> StatementLimits:
    """The limits a `Context` (or any object with its field names) sets; defaults for the
    fields it lacks."""
    if settings is None:
        return DEFAULT_LIMITS
    values = {
        limit: int(value)
        for limit, name in _SETTINGS.items()
        if isinstance(value := getattr(settings, name, None), int) and not isinstance(value, bool)
    }
    if "max_built_bytes" in values:
        values["max_built_bytes"] = min(values["max_built_bytes"], DEFAULT_MAX_BUILT_BYTES)
    return StatementLimits(**values) if values else DEFAULT_LIMITS


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

    def __init__(self, limits: StatementLimits) -> None:
        self.limits = limits
        self.nodes = self.ctes = self.selects = 0

    def see(self, node: object) -> str | None:
        """Why the tree is too large for a server to plan quickly, once it is; else None."""
        limits = self.limits
        self.nodes += 1
        if self.nodes > limits.max_nodes:
            return (
                f"the statement has more than {limits.max_nodes:,} syntax nodes "
                "(Context.max_sql_nodes)"
            )
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
