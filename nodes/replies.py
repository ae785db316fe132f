"""Reading the agents' text replies: the last ```sql block, a JSON object."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n?(.*?)```", re.S)
_SQL_START = re.compile(r"^\s*(\(\s*)*(SELECT|WITH|VALUES)\b", re.I)


def extract_sql(reply: str) -> str | None:
    """The last ```sql block of a reply (MAC-SQL's rule), else the last SQL-looking block.

    A reply with no block returns None: prose never becomes a prediction.
    """
    blocks = [(lang.lower(), body.strip()) for lang, body in _FENCE.findall(reply or "")]
    sql_blocks = [body for lang, body in blocks if lang in ("sql", "sqlite", "postgresql")]
    if not sql_blocks:
        sql_blocks = [body for lang, body in blocks if lang == "" and _SQL_START.match(body)]
    if not sql_blocks:
        return None
    sql = sql_blocks[-1].strip().rstrip(";").strip()
    return sql or None


def extract_json_object(reply: str) -> dict[str, Any] | None:
    """The JSON object in a reply: a ```json block, else the outermost {...}; None if broken."""
    candidates = [
        body for lang, body in _FENCE.findall(reply or "") if lang.lower() in ("json", "")
    ]
    text = reply or ""
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (ValueError, TypeError):
            continue
        if isinstance(value, dict):
            return value
    return None
