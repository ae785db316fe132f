"""Database error messages without the data they quote, for prompts that must not see values.

With `Context.send_rows_to_model` off, result cells never reach a model; an error message could
still carry one: PostgreSQL's `invalid input syntax for type integer: "<a secret cell>"`, DuckDB's
`Could not convert string '<cell>' to INT32`, MySQL's `Truncated incorrect DOUBLE value: '<cell>'`
(issue 26 found a secret cell in the Refiner's prompt this way). The rule: a message may echo
only what the model wrote. Every quoted span and every number in a database's message that does
not occur in the statement's own SQL is replaced by a placeholder; names and values the model
wrote itself (`column "nme" does not exist`) stay, so the Refiner still learns what was wrong.
macsql's own messages (the guard's refusals, the result check) quote nothing but the SQL and
are left whole.
"""

from __future__ import annotations

import re

HIDDEN = "[value hidden]"
_OWN_MESSAGES = frozenset({"GuardRejection", "ResultCheck", "NoSQL"})
_SINGLE = re.compile(r"'(?:[^']|'')*'")
_DOUBLE = re.compile(r'"(?:[^"\\]|\\.|"")*"')
_OTHER = re.compile(r"`[^`]*`|«[^»]*»|“[^”]*”")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?(?![\w])")
# PyMySQL's errors read as the tuple (code, "message").
_DRIVER_TUPLE = re.compile(r"^\((\d+), (['\"])(.*)\2\)$", re.DOTALL)


def scrub_values(message: str | None, sql: str, error_class: str | None = None) -> str | None:
    """`message` with every quoted span and number that `sql` does not contain hidden."""
    if not message or error_class in _OWN_MESSAGES:
        return message
    wrapped = _DRIVER_TUPLE.match(message.strip())
    if wrapped:
        code, quote, inner = wrapped.groups()
        return f"({code}, {quote}{_scrub(inner, sql)}{quote})"
    return _scrub(message, sql)


def _scrub(message: str, sql: str) -> str:
    known = sql.lower()

    def quoted(match: re.Match[str]) -> str:
        span = match.group(0)
        inner = span[1:-1]
        if HIDDEN in inner or (inner and inner.lower() in known):
            return span
        return f"{span[0]}{HIDDEN}{span[-1]}"

    def number(match: re.Match[str]) -> str:
        digits = match.group(0)
        pattern = rf"(?<![\w.]){re.escape(digits)}(?![\w])"
        return digits if re.search(pattern, sql) else HIDDEN

    for spans in (_SINGLE, _OTHER, _DOUBLE):
        message = spans.sub(quoted, message)
    return _NUMBER.sub(number, message)
