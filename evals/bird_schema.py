"""Schema-only SQLite databases built from BIRD's ``dev_tables.json``.

BIRD's data is shipped without its SQLite files here; its tables file still names every table
and column with types, primary keys and foreign keys. A database built from it has no rows, but
gold SQL runs on it, the schema tools can read it, and the Selector sees BIRD's wide schemas.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

_TYPES = {
    "text": "TEXT",
    "integer": "INTEGER",
    "real": "REAL",
    "number": "NUMERIC",
    "numeric": "NUMERIC",
    "date": "DATE",
    "datetime": "DATETIME",
    "time": "TIME",
    "boolean": "BOOLEAN",
    "blob": "BLOB",
}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def create_table_statements(entry: Mapping[str, Any]) -> list[str]:
    """``CREATE TABLE`` statements for one tables-file entry (Spider or BIRD format).

    Columns keep their original names and declared types; primary keys (single or composite)
    and foreign keys are declared. A repeated column name in one table keeps its first column.
    """
    tables: list[str] = list(entry["table_names_original"])
    columns: list[tuple[int, str]] = [(int(t), str(c)) for t, c in entry["column_names_original"]]
    types: list[str] = list(entry.get("column_types") or ["text"] * len(columns))
    by_table: dict[int, list[int]] = {i: [] for i in range(len(tables))}
    seen: dict[int, set[str]] = {i: set() for i in range(len(tables))}
    for col_id, (table_id, name) in enumerate(columns):
        if table_id < 0 or name.lower() in seen[table_id]:
            continue
        seen[table_id].add(name.lower())
        by_table[table_id].append(col_id)

    primary: dict[int, list[int]] = {}
    for key in entry.get("primary_keys") or []:
        ids = [int(k) for k in key] if isinstance(key, list) else [int(key)]
        if ids:
            primary.setdefault(columns[ids[0]][0], []).extend(ids)
    foreign: dict[int, list[tuple[int, int]]] = {}
    for source, target in entry.get("foreign_keys") or []:
        foreign.setdefault(columns[int(source)][0], []).append((int(source), int(target)))

    statements = []
    for table_id, table in enumerate(tables):
        parts = [
            f"{_quote(columns[c][1])} {_TYPES.get(str(types[c]).lower(), '')}".rstrip()
            for c in by_table[table_id]
        ]
        keys = [c for c in dict.fromkeys(primary.get(table_id, [])) if c in by_table[table_id]]
        if keys:
            parts.append("PRIMARY KEY (" + ", ".join(_quote(columns[c][1]) for c in keys) + ")")
        for source, target in foreign.get(table_id, []):
            ref_table = tables[columns[target][0]]
            parts.append(
                f"FOREIGN KEY ({_quote(columns[source][1])}) REFERENCES "
                f"{_quote(ref_table)} ({_quote(columns[target][1])})"
            )
        statements.append(f"CREATE TABLE {_quote(table)} (\n  " + ",\n  ".join(parts) + "\n)")
    return statements


def build_schema_only_sqlite(tables_json_entry: Mapping[str, Any], path: str | Path) -> Path:
    """Write an empty SQLite database with the entry's tables, keys and column types."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    try:
        with conn:
            for statement in create_table_statements(tables_json_entry):
                conn.execute(statement)
    finally:
        conn.close()
    return path


def build_schema_only_layout(
    source_dir: str | Path,
    target_dir: str | Path,
    *,
    db_ids: Iterable[str] | None = None,
    question_files: Iterable[str] = ("dev.json",),
) -> Path:
    """A BIRD-layout folder with schema-only databases: question files, ``dev_tables.json``,
    and ``dev_databases/<db>/<db>.sqlite`` plus each ``database_description/`` found."""
    source, target = Path(source_dir), Path(target_dir)
    target.mkdir(parents=True, exist_ok=True)
    tables_file = source / "dev_tables.json"
    entries = json.loads(tables_file.read_text(encoding="utf-8"))
    wanted = set(db_ids) if db_ids is not None else None
    shutil.copyfile(tables_file, target / "dev_tables.json")
    for name in question_files:
        if (source / name).is_file():
            shutil.copyfile(source / name, target / name)
    for entry in entries:
        db_id = entry["db_id"]
        if wanted is not None and db_id not in wanted:
            continue
        folder = target / "dev_databases" / db_id
        build_schema_only_sqlite(entry, folder / f"{db_id}.sqlite")
        descriptions = source / "dev_databases" / db_id / "database_description"
        if descriptions.is_dir():
            shutil.copytree(descriptions, folder / "database_description", dirs_exist_ok=True)
    return target
