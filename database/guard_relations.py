"""The guard's relation allow-list: which tables and views a query may read.

A relation in FROM or JOIN is allowed when it is

- a CTE of the query, where the database would resolve the name to it (a CTE's own name is
  visible inside its body only when the WITH is RECURSIVE, or on SQLite);
- a table or view of the user's schemas (`Relations.user`: SQLite's main database; for
  PostgreSQL every schema but pg_catalog, information_schema, pg_toast and the temp schemas);
- one of the reviewed information views in `INFORMATION_VIEWS` (they describe the user's own
  tables: `information_schema.tables`, `.columns`, ...; SQLite's `sqlite_schema`); or
- named in `Context.allowed_relations` (`name` matches in any schema, `schema.name` only there).

Anything else is refused: system catalogs (`pg_authid`, `pg_hba_file_rules`, `pg_file_settings`,
`pg_shadow`, `pg_stat_activity`, `sqlite_temp_master`, `mysql.user`, ...), another database,
and names the database does not have. Table-valued functions (`FROM generate_series(...)`)
are calls, checked by the function allow-list.

`Relations` is the database's inventory (`macsql.database.relation_inventory` reads it). Without
one, as when `check_statement` is called with no policy, the guard cannot know the user's
tables: it then refuses schema-qualified names outside the dialect's default schema and names
that belong to the dialect's system catalogs (`pg_*`, `sqlite_*`, DuckDB file paths), and lets
the other names through. `execute_sql` always checks with the inventory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any

from sqlglot import exp

_INFORMATION_SCHEMA_VIEWS = frozenset(
    ("information_schema", view)
    for view in (
        "tables",
        "columns",
        "views",
        "schemata",
        "table_constraints",
        "key_column_usage",
        "referential_constraints",
        "constraint_column_usage",
        "check_constraints",
    )
)
INFORMATION_VIEWS: dict[str, frozenset[tuple[str, str]]] = {
    # the user's own schema as SQL text; sqlite_temp_* and sqlite_stat* stay refused
    "sqlite": frozenset({("main", "sqlite_schema"), ("main", "sqlite_master")}),
}
"""Reviewed views, as (schema, name) in lower case, readable without being a user relation.
Dialects not listed get the standard `information_schema` views above."""

_SYSTEM_SCHEMAS: dict[str, frozenset[str]] = {
    "sqlite": frozenset({"temp"}),
    "postgres": frozenset({"pg_catalog", "information_schema", "pg_toast"}),
    "mysql": frozenset({"information_schema", "mysql", "performance_schema", "sys"}),
    "duckdb": frozenset({"information_schema", "pg_catalog", "system", "temp"}),
}
_DEFAULT_SYSTEM_SCHEMAS = frozenset({"information_schema", "pg_catalog", "sys", "system"})
_DEFAULT_SCHEMA = {"sqlite": "main", "postgres": "public", "duckdb": "main"}
# Name prefixes of system relations, for the check without an inventory.
_SYSTEM_PREFIXES = {"sqlite": ("sqlite_", "dbstat"), "postgres": ("pg_",), "duckdb": ("duckdb_",)}
# Dialects whose quoted identifiers keep their case; elsewhere names compare case-insensitively.
_CASE_SENSITIVE_QUOTED = frozenset({"postgres"})
_FILE_SUFFIX = re.compile(
    r"\.(csv|tsv|txt|json|jsonl|ndjson|parquet|xlsx|gz|zst|db|sqlite|duckdb)$", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class Relations:
    """A database's inventory, as the guard needs it.

    Names are stored as the database folds them: lower case, except PostgreSQL names created
    quoted with capitals. `search_path` lists the schemas an unqualified name is looked up in,
    in order (PostgreSQL looks in pg_catalog first, so `pg_authid` is found there).
    """

    user: frozenset[tuple[str, str]]
    system: frozenset[tuple[str, str]]
    search_path: tuple[str, ...]
    system_schemas: frozenset[str] = frozenset()
    catalog: str = ""
    user_functions: frozenset[str] = frozenset()
    """Names (lower case) of functions defined in the user's schemas: PostgreSQL may resolve a
    call of a built-in's name to one of them, so the guard refuses those names unless listed."""


class RelationVerdict(Enum):
    ALLOWED = "allowed"
    FORBIDDEN = "forbidden"
    UNKNOWN = "unknown"


def _key(identifier: exp.Expression | None, dialect: str) -> str:
    if not isinstance(identifier, exp.Identifier):
        return ""
    if identifier.quoted and dialect in _CASE_SENSITIVE_QUOTED:
        return identifier.this
    return identifier.this.lower()


def relation_label(table: exp.Table) -> str:
    """The relation's name as written, qualified as written."""
    return ".".join(part for part in (table.catalog, table.db, table.name) if part)


def is_cte_reference(table: exp.Table, dialect: str, scopes: CteScopes | None = None) -> bool:
    """True when the database resolves this unqualified name to a CTE of the query.

    `scopes` (one per statement) remembers each WITH clause's names, so that a statement's
    relations are resolved in time linear in its size; without it each call builds its own.
    """
    if table.args.get("db") is not None or table.args.get("catalog") is not None:
        return False
    scopes = scopes or CteScopes(dialect)
    name = _key(table.this, dialect)
    prev: Any = table
    node: Any = table.parent
    while node is not None:
        if isinstance(node, exp.With):
            if isinstance(prev, exp.CTE) and scopes.visible_from(node, prev, name):
                return True
        else:
            with_ = node.args.get("with_")
            if isinstance(with_, exp.With) and with_ is not prev and scopes.defines(with_, name):
                return True
        prev, node = node, node.parent
    return False


class CteScopes:
    """The names each WITH clause of one statement defines, read once per clause."""

    def __init__(self, dialect: str) -> None:
        self._dialect = dialect
        self._first: dict[int, dict[str, int]] = {}
        self._position: dict[int, dict[int, int]] = {}

    def _read(self, with_: exp.With) -> tuple[dict[str, int], dict[int, int]]:
        first = self._first.get(id(with_))
        if first is None:
            first, position = {}, {}
            for index, cte in enumerate(with_.expressions):
                first.setdefault(_cte_key(cte, self._dialect), index)
                position[id(cte)] = index
            self._first[id(with_)] = first
            self._position[id(with_)] = position
        return first, self._position[id(with_)]

    def defines(self, with_: exp.With, name: str) -> bool:
        return name in self._read(with_)[0]

    def visible_from(self, with_: exp.With, cte: exp.CTE, name: str) -> bool:
        """Whether `name` inside `cte`'s body means a CTE of `with_`: an earlier one, or `cte`
        itself when the WITH is RECURSIVE (always on SQLite)."""
        first, position = self._read(with_)
        index = position.get(id(cte))
        found = first.get(name)
        if index is None or found is None:
            return False
        if found < index:
            return True
        own = bool(with_.args.get("recursive")) or self._dialect == "sqlite"
        return own and _cte_key(cte, self._dialect) == name


def _cte_key(cte: exp.Expression, dialect: str) -> str:
    alias = cte.args.get("alias")
    return _key(alias.this if isinstance(alias, exp.TableAlias) else None, dialect)


# Each reviewed information view, and its column naming the schema a row describes.
_VIEW_SCHEMA_COLUMNS = {
    "tables": "table_schema",
    "columns": "table_schema",
    "views": "table_schema",
    "schemata": "schema_name",
    "table_constraints": "table_schema",
    "key_column_usage": "table_schema",
    "referential_constraints": "constraint_schema",
    "constraint_column_usage": "table_schema",
    "check_constraints": "constraint_schema",
}


def user_schemas(relations: Relations) -> tuple[str, ...]:
    """The schemas holding the user's relations, and the non-system ones of the search path."""
    schemas = {schema for schema, _ in relations.user}
    schemas |= {
        schema
        for schema in relations.search_path
        if schema not in relations.system_schemas and not schema.startswith("pg_")
    }
    return tuple(sorted(schemas))


def confine_information_views(
    root: exp.Expression,
    dialect: str,
    relations: Relations | None,
    allowed_relations: frozenset[str],
) -> exp.Expression | None:
    """A copy of `root` whose reads of the reviewed information views see only rows about the
    user's own schemas (`information_schema.tables` lists pg_catalog's tables, and on MariaDB
    every database and the `mysql` schema); None when `root` reads none. A view named in
    `Context.allowed_relations` is read whole. Without an inventory nothing is confined."""
    views = INFORMATION_VIEWS.get(dialect, _INFORMATION_SCHEMA_VIEWS)
    if relations is None or not any(
        _is_information_view(t, dialect, views, allowed_relations) for t in root.find_all(exp.Table)
    ):
        return None
    copy = root.copy()
    scopes = CteScopes(dialect)
    schemas = user_schemas(relations) or ("",)
    for table in list(copy.find_all(exp.Table)):
        if not _is_information_view(table, dialect, views, allowed_relations):
            continue
        if is_cte_reference(table, dialect, scopes):
            continue
        column = _VIEW_SCHEMA_COLUMNS.get(_key(table.this, dialect))
        if column is None:
            continue
        alias = table.alias or table.name
        source = table.copy()
        source.set("alias", None)
        confined = (
            exp.select("*")
            .from_(source)
            .where(exp.column(column).isin(*(exp.Literal.string(s) for s in schemas)))
        )
        table.replace(
            exp.Subquery(this=confined, alias=exp.TableAlias(this=exp.to_identifier(alias)))
        )
    return copy


def _is_information_view(
    table: exp.Table,
    dialect: str,
    views: frozenset[tuple[str, str]],
    allowed_relations: frozenset[str],
) -> bool:
    schema = _key(table.args.get("db"), dialect)
    name = _key(table.this, dialect)
    if schema != "information_schema" or (schema, name) not in views:
        return False
    return f"{schema}.{name}" not in allowed_relations and name not in allowed_relations


def check_relation(
    table: exp.Table,
    dialect: str,
    relations: Relations | None,
    allowed_relations: frozenset[str],
) -> RelationVerdict:
    """Whether a relation read by the query is allowed (see the module's rules)."""
    name = _key(table.this, dialect)
    schema = _key(table.args.get("db"), dialect)
    catalog = _key(table.args.get("catalog"), dialect)
    if name.lower() in allowed_relations or (
        schema and f"{schema}.{name}".lower() in allowed_relations
    ):
        return RelationVerdict.ALLOWED
    views = INFORMATION_VIEWS.get(dialect, _INFORMATION_SCHEMA_VIEWS)
    if relations is None:
        return _without_inventory(table, dialect, name, schema, catalog, views)
    if catalog and catalog != _fold(relations.catalog, dialect):
        return RelationVerdict.FORBIDDEN  # another database
    schemas = (schema,) if schema else relations.search_path
    for candidate in schemas:
        key = (candidate, name)
        if key in relations.user or key in views or f"{candidate}.{name}" in allowed_relations:
            return RelationVerdict.ALLOWED
        if key in relations.system:
            return RelationVerdict.FORBIDDEN
    if schema and (schema in relations.system_schemas or schema.startswith("pg_")):
        return RelationVerdict.FORBIDDEN
    return RelationVerdict.UNKNOWN


def _fold(name: str, dialect: str) -> str:
    return name if dialect in _CASE_SENSITIVE_QUOTED else name.lower()


def _without_inventory(
    table: exp.Table,
    dialect: str,
    name: str,
    schema: str,
    catalog: str,
    views: frozenset[tuple[str, str]],
) -> RelationVerdict:
    default = _DEFAULT_SCHEMA.get(dialect, "")
    if (schema or default, name) in views:
        return RelationVerdict.ALLOWED
    system_schemas = _SYSTEM_SCHEMAS.get(dialect, _DEFAULT_SYSTEM_SCHEMAS)
    if catalog or schema in system_schemas or schema.startswith("pg_"):
        return RelationVerdict.FORBIDDEN
    if dialect == "sqlite" and schema not in ("", "main"):
        return RelationVerdict.FORBIDDEN  # temp or an attached database
    if name.lower().startswith(_SYSTEM_PREFIXES.get(dialect, ("pg_", "sqlite_"))):
        return RelationVerdict.FORBIDDEN
    if dialect == "duckdb" and looks_like_a_file(table.name):
        return RelationVerdict.FORBIDDEN
    return RelationVerdict.ALLOWED


def looks_like_a_file(name: str) -> bool:
    """DuckDB reads a file named in FROM: a path, a URL or a data-file name."""
    return bool(name) and (
        "/" in name or "\\" in name or "://" in name or _FILE_SUFFIX.search(name) is not None
    )


def system_schemas(dialect: str) -> frozenset[str]:
    """The dialect's schemas that hold catalogs, not user data."""
    return _SYSTEM_SCHEMAS.get(dialect, _DEFAULT_SYSTEM_SCHEMAS)
