"""The schema as the agents read it: MAC-SQL's per-table blocks and `t1.c = t2.c` key lines.

Everything that comes from the database (value examples, descriptions) appears only as a quoted,
one-line, length-limited JSON string with `<` and `>` escaped, so no value can read as an
instruction or close the prompts' `<schema>` block; names that do not look like names are shown
the same way (`prompts/quoting.py`).
"""

from __future__ import annotations

from macsql.database.schema import ColumnInfo, SchemaInfo, once_per_schema
from macsql.prompts.quoting import quoted as _quoted
from macsql.prompts.quoting import shown_name

MAX_EXAMPLE_CHARS = 40
MAX_DESCRIPTION_CHARS = 240


def render_column(col: ColumnInfo) -> str:
    parts = [f"{shown_name(col.name)}: {shown_name(col.type) if col.type else 'ANY'}"]
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
        lines = [f"# Table: {shown_name(table.name)}", "["]
        lines += [f"  {render_column(c)}," for c in table.columns]
        if len(lines) > 2:
            lines[-1] = lines[-1].rstrip(",")
        lines.append("]")
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def render_foreign_keys(schema: SchemaInfo) -> str:
    """`t1.c = t2.c` lines, columns quoted the way the database's dialect quotes them."""
    q = '"' if schema.dialect == "postgres" else "`"

    def column(name: str) -> str:
        shown = shown_name(name)
        return f"{q}{shown}{q}" if shown == name else shown

    return "\n".join(
        f"{shown_name(fk.table)}.{column(fk.column)} = "
        f"{shown_name(fk.ref_table)}.{column(fk.ref_column)}"
        for fk in schema.foreign_keys
    )


@once_per_schema
def rendered_schema(schema: SchemaInfo) -> tuple[str, str]:
    """`(render_schema(schema), render_foreign_keys(schema))`, computed once per schema object:
    a cached schema serves every question on its database."""
    return render_schema(schema), render_foreign_keys(schema)
