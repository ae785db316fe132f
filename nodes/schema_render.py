"""The schema as the agents read it: MAC-SQL's per-table blocks and `t1.c = t2.c` key lines.

Everything that comes from the database (value examples, descriptions) appears only as a quoted,
one-line, length-limited JSON string with `<` and `>` escaped, so no value can read as an
instruction or close the prompts' `<schema>` block.
"""

from __future__ import annotations

import json
import threading
import weakref
from typing import Any

from macsql.database.schema import ColumnInfo, SchemaInfo

MAX_EXAMPLE_CHARS = 40
MAX_DESCRIPTION_CHARS = 240


def _quoted(value: Any, limit: int) -> str:
    """A value as a JSON literal, cut to `limit` characters: data, never instructions."""
    if isinstance(value, str):
        flat = " ".join(value.split())
        if len(flat) > limit:
            flat = flat[: limit - 1] + "…"
        return _escape_markup(json.dumps(flat, ensure_ascii=False))
    if isinstance(value, int | float | bool):
        return json.dumps(value)
    return _escape_markup(json.dumps(str(value)))


def _escape_markup(literal: str) -> str:
    """`<` and `>` as JSON escapes, so no value can close the prompt's <schema> block."""
    return literal.replace("<", "\\u003c").replace(">", "\\u003e")


def render_column(col: ColumnInfo) -> str:
    parts = [f"{col.name}: {col.type or 'ANY'}"]
    if col.primary_key:
        parts.append("primary key")
    if col.full_name and col.full_name.lower() != col.name.lower():
        parts.append(f"full name {_quoted(col.full_name, MAX_DESCRIPTION_CHARS)}")
    if col.description and col.description.lower() not in (col.name.lower(), col.full_name.lower()):
        parts.append(f"description {_quoted(col.description, MAX_DESCRIPTION_CHARS)}")
    if col.value_description:
        parts.append(f"values mean {_quoted(col.value_description, MAX_DESCRIPTION_CHARS)}")
    if col.examples:
        shown = ", ".join(_quoted(v, MAX_EXAMPLE_CHARS) for v in col.examples)
        parts.append(f"value examples [{shown}]")
    if col.has_nulls:
        parts.append("contains NULL")
    return "(" + ", ".join(parts) + ")"


def render_schema(schema: SchemaInfo) -> str:
    """One block per table, in MAC-SQL's layout."""
    blocks = []
    for table in schema.tables:
        lines = [f"# Table: {table.name}", "["]
        lines += [f"  {render_column(c)}," for c in table.columns]
        if len(lines) > 2:
            lines[-1] = lines[-1].rstrip(",")
        lines.append("]")
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def render_foreign_keys(schema: SchemaInfo) -> str:
    """`t1.c = t2.c` lines, columns quoted the way the database's dialect quotes them."""
    q = '"' if schema.dialect == "postgres" else "`"
    return "\n".join(
        f"{fk.table}.{q}{fk.column}{q} = {fk.ref_table}.{q}{fk.ref_column}{q}"
        for fk in schema.foreign_keys
    )


_rendered: dict[int, tuple[str, str]] = {}
_rendered_lock = threading.Lock()


def rendered_schema(schema: SchemaInfo) -> tuple[str, str]:
    """`(render_schema(schema), render_foreign_keys(schema))`, computed once per schema object:
    a cached schema serves every question on its database."""
    key = id(schema)
    with _rendered_lock:
        hit = _rendered.get(key)
    if hit is None:
        hit = (render_schema(schema), render_foreign_keys(schema))
        with _rendered_lock:
            _rendered[key] = hit
        weakref.finalize(schema, _rendered.pop, key, None)
    return hit
