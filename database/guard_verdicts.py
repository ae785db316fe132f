"""The read-only guard's verdicts, apart from the guard itself: the nodes that read model
replies and the executor name these kinds before any SQL needs parsing, without importing
sqlglot."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class GuardKind(StrEnum):
    """Why the guard allowed or refused a statement."""

    OK = "ok"
    EMPTY = "empty"
    SYNTAX = "syntax"
    UNSUPPORTED = "unsupported"
    TOO_LONG = "too_long"
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

    def __bool__(self) -> bool:
        return self.allowed
