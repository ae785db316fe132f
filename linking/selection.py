"""Applying the Selector's reply to a schema: MAC-SQL's keep_all / drop_all / column lists."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from macsql.database.schema import SchemaInfo, TableInfo

Selection = dict[str, Any]  # table -> "keep_all" | "drop_all" | [columns]


@dataclass
class SelectionResult:
    schema: SchemaInfo
    notes: list[str]
    applied: bool


def apply_selection(
    schema: SchemaInfo, selection: Selection, always_keep: Iterable[tuple[str, str]] = ()
) -> SelectionResult:
    """Prune `schema` by a Selector reply; keys always stay, dropped tables lose their FK lines.

    Unknown tables or columns are ignored and noted. A selection that would leave no table is
    not applied (`applied=False`), so the caller falls back to the full schema. The columns
    in `always_keep` (table, column) stay like keys: the columns of matched stored values.
    """
    pinned: dict[str, set[str]] = {}
    for table_name, column_name in always_keep:
        pinned.setdefault(table_name.lower(), set()).add(column_name.lower())
    notes: list[str] = []
    decisions: dict[str, Any] = {}
    for name, choice in selection.items():
        table = schema.table(str(name))
        if table is None:
            notes.append(f"unknown table {name!r} ignored")
            continue
        # Models write the keywords in any case ("Keep_All", "DROP_ALL").
        decisions[table.name] = choice.strip().lower() if isinstance(choice, str) else choice
    kept: list[TableInfo] = []
    for table in schema.tables:
        choice = decisions.get(table.name, "keep_all")
        extra = pinned.get(table.name.lower(), set())
        if choice == "drop_all" and not extra:
            continue
        if choice == "drop_all":
            choice = []
        if isinstance(choice, list):
            wanted = {str(c).strip('`"[] ').lower() for c in choice}
            known = {c.name.lower() for c in table.columns}
            notes += [f"unknown column {table.name}.{c!r} ignored" for c in sorted(wanted - known)]
            keys = {k.lower() for k in schema.key_columns(table.name)}
            columns = [c for c in table.columns if c.name.lower() in wanted | keys | extra]
            kept.append(TableInfo(table.name, columns or list(table.columns)))
        else:
            if choice != "keep_all":
                notes.append(f"unrecognised choice for {table.name!r}: kept whole")
            kept.append(table)
    if not kept:
        return SelectionResult(schema, [*notes, "selection dropped every table"], False)
    names = {t.name for t in kept}
    fks = [fk for fk in schema.foreign_keys if fk.table in names and fk.ref_table in names]
    return SelectionResult(SchemaInfo(schema.db_name, schema.dialect, kept, fks), notes, True)
