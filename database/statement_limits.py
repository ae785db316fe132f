"""How large a statement may be before anything parses or runs it: `StatementLimits`.

The defaults sit far above any real text-to-SQL query (the largest of Spider's and BIRD's 9,568
gold queries has 1,446 characters, 361 tokens, 272 tree nodes, parentheses 7 deep, 3 CTEs, 8
SELECTs and an IN list of 18), and far below what slows either the guard or a server:
PostgreSQL 15 planned a chain of 64 CTEs in 0.02 s and one of 128 in 0.15 s, faster than
linear.
`Context` exposes each one (`max_sql_chars`, ...). No sqlglot here: the executor node builds
the limits before any SQL exists (`guard_limits` checks them).
"""

from __future__ import annotations

from dataclasses import dataclass

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
