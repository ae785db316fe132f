"""How text that came from the database reaches a prompt: as data, bounded, never as markup.

Values, descriptions, result cells and database messages appear as quoted, one-line, length-
limited JSON strings with `<` and `>` escaped, so none can read as an instruction, open a code
fence on a line of its own, or close the prompts' `<schema>` block. Table, column and type names
stay as written when they look like names (so the model copies them into SQL as they are), and
are quoted the same way when they do not: a column named `</schema>` followed by a fake ```sql
block, or one of a million characters, is shown as a bounded JSON string.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_NAME_CHARS = 128
MAX_CELL_CHARS = 80
MAX_MESSAGE_CHARS = 300

# Letters of any script, digits, spaces and the punctuation real schemas use ("Free Meal Count
# (K-12)", "rate%", "e-mail", "naïve"), and nothing that can start markup or a fence.
_PLAIN_NAME = re.compile(r"[\w $%&'()*+,\-./:;=?@#!^~{}\[\]]+")


def quoted(value: Any, limit: int) -> str:
    """A value as a JSON literal, flattened to one line and cut to `limit` characters."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return json.dumps(value)
    flat = " ".join(str(value).split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return escape_markup(json.dumps(flat, ensure_ascii=False))


def escape_markup(literal: str) -> str:
    """`<` and `>` as JSON escapes, so no value can close the prompt's <schema> block."""
    return literal.replace("<", "\\u003c").replace(">", "\\u003e")


def shown_name(name: Any) -> str:
    """A table, column or type name as a prompt shows it: as is when it looks like a name, else
    as a quoted, bounded JSON string."""
    text = str(name)
    if len(text) <= MAX_NAME_CHARS and _PLAIN_NAME.fullmatch(text):
        return text
    return quoted(text, MAX_NAME_CHARS)


def shown_cell(value: Any, limit: int = MAX_CELL_CHARS) -> str:
    """A result cell in a prompt's result table: NULL, a number, or a quoted string."""
    if value is None:
        return "NULL"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return json.dumps(value)
    return quoted(value, limit)


def shown_message(message: Any, limit: int = MAX_MESSAGE_CHARS) -> str:
    """A database or guard message in a prompt: quoted and bounded like a value."""
    return quoted(message if message else "none", limit)
