"""Reading the agents' replies, whatever layout the model answers in.

One reader for SQL (`read_sql`), shared by every agent that writes a query, and one for JSON
objects (`extract_json_object`), shared by every agent that answers in fields. A reasoning
model's thinking (`<think>` blocks, a chat template's analysis channel) is never read as the
answer.

SQL: every candidate span of the reply that sqlglot reads as one statement in the database's
dialect, then one rule to choose: an explicit final marker beats position; examples,
alternatives, drafts and DDL lose; among equals the last wins (MAC-SQL's rule). See
`macsql.replies.finder`, and docs/replies.md for the user's view.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from macsql.llm.reasoning import split_reasoning
from macsql.replies.finder import SqlReading, find_sql
from macsql.replies.markup import bracketed_spans, fences, lenient_value

__all__ = [
    "SqlReading",
    "extract_json_object",
    "extract_json_value",
    "extract_sql",
    "json_field",
    "read_sql",
]


def read_sql(reply: str, dialect: str = "sqlite") -> SqlReading:
    """The final query of a reply in any layout; see the module's docstring."""
    answer, thinking = split_reasoning(reply or "")
    if not answer.strip():
        return SqlReading(None, "an empty reply" + (" (only reasoning)" if thinking else ""))
    return find_sql(answer, dialect)


def extract_sql(reply: str, dialect: str = "sqlite") -> str | None:
    """The final query of a reply, or None (prose never becomes a prediction)."""
    return read_sql(reply, dialect).sql


# --------------------------------------------------------------------------- JSON


def extract_json_object(reply: str, keys: Iterable[str] = ()) -> dict[str, Any] | None:
    """The last JSON object of a reply (one with any of `keys`, when given), or None.

    Read from fenced or bare JSON, Python-literal dicts (single quotes, True/None), and JSON
    with comments or trailing commas. A reasoning model's thinking is never read.
    """
    found = _json_values(reply, "{", keys)
    return found[-1] if found else None


def extract_json_value(reply: str) -> dict[str, Any] | list[Any] | None:
    """The last JSON object or list of a reply (a list of names is an answer too), or None."""
    objects = _positioned(reply, "{", ())
    lists = _positioned(reply, "[", ())
    # A list inside the last object is part of it: the outermost value that comes last wins.
    found = sorted(objects + lists, key=lambda item: (item[0], -item[1]))
    outermost: list[tuple[int, int, Any]] = []
    for start, end, value in found:
        if outermost and start < outermost[-1][1]:
            continue
        outermost.append((start, end, value))
    return outermost[-1][2] if outermost else None


def _json_values(reply: str, opening: str, keys: Iterable[str]) -> list[Any]:
    return [value for _, _, value in sorted(_positioned(reply, opening, keys), key=lambda v: v[0])]


def _positioned(reply: str, opening: str, keys: Iterable[str]) -> list[tuple[int, int, Any]]:
    answer, _thinking = split_reasoning(reply or "")
    wanted = {_norm(k) for k in keys}
    spans = bracketed_spans(answer, opening)
    texts = [(a, b, answer[a:b]) for a, b in spans]
    texts += [(f.start, f.end, f.body.strip()) for f in fences(answer)]
    found: list[tuple[int, int, Any]] = []
    for start, end, text in texts:
        value = lenient_value(text, opening)
        if value is None:
            continue
        if wanted and not (isinstance(value, dict) and any(_norm(str(k)) in wanted for k in value)):
            continue
        found.append((start, end, value))
    return found


def json_field(found: Mapping[str, Any], *names: str) -> Any:
    """The value of the first of `names` in `found`, ignoring case, spaces and underscores."""
    by_norm = {_norm(str(k)): v for k, v in found.items()}
    for name in names:
        if _norm(name) in by_norm:
            return by_norm[_norm(name)]
    return None


def _norm(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())
