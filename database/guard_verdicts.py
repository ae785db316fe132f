"""The read-only guard's verdicts, apart from the guard itself: the nodes that read model
replies and the executor name these kinds before any SQL needs parsing, without importing
sqlglot."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class GuardKind(StrEnum):
    """Why the guard allowed or refused a statement."""

    OK = "ok"
    EMPTY = "empty"
    SYNTAX = "syntax"
    UNSUPPORTED = "unsupported"
    TOO_LONG = "too_long"
    TOO_COMPLEX = "too_complex"
    """Over a structural limit: tokens, nodes, nesting, CTEs, SELECTs, an IN list."""
    UNSTOPPABLE = "unstoppable"
    """Work the backend could not interrupt (a value built to a huge size, a regular expression
    that backtracks, an edit distance over long values)."""
    MULTIPLE_STATEMENTS = "multiple_statements"
    WRITE = "write"
    DDL = "ddl"
    TRANSACTION = "transaction"
    SESSION = "session"
    LOCKING = "locking"
    FORBIDDEN_COMMAND = "forbidden_command"
    FORBIDDEN_FUNCTION = "forbidden_function"
    FORBIDDEN_RELATION = "forbidden_relation"
    UNKNOWN_RELATION = "unknown_relation"


@dataclass(frozen=True, slots=True)
class GuardVerdict:
    """The guard's decision about one SQL text."""

    allowed: bool
    kind: GuardKind
    reason: str | None = None
    sql: str | None = field(default=None, compare=False)
    """For an allowed statement: the text to run, written from the checked tree (comments and
    the model's spelling gone); what the server receives instead of the model's text."""
    columns: int | None = field(default=None, compare=False)
    """For an allowed statement: how many columns it returns, when its tree says (no `*`)."""

    def __bool__(self) -> bool:
        return self.allowed
