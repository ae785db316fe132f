"""The statement guard: layer 1 of macsql's defences against model-written SQL.

`check_statement(sql, dialect, policy)` decides, with sqlglot and in the database's own dialect,
whether a statement may run. It allows exactly one read-only query: a SELECT, possibly with
CTEs, set operations (UNION, INTERSECT, EXCEPT) or parentheses, a VALUES list, or PostgreSQL's
`TABLE t`.
Everything else is refused with a classified `GuardVerdict` whose `reason` is written for the
Refiner (and for a human reading a trace):

- more than one statement, or none;
- text the parser cannot read (`kind="syntax"`), or that sqlglot cannot analyse;
- data changes: INSERT, UPDATE, DELETE, MERGE, REPLACE, TRUNCATE, COPY, `SELECT ... INTO`, and
  data-modifying CTEs such as `WITH d AS (DELETE ... RETURNING *) SELECT ...`;
- DDL and privileges: CREATE, DROP, ALTER, GRANT, COMMENT, REINDEX, ...;
- transaction and session commands: BEGIN, COMMIT, SAVEPOINT, SET, RESET, LISTEN, PREPARE, ...;
- other commands: PRAGMA, ATTACH, DETACH, VACUUM, EXPLAIN, DO, CALL, LOCK, ...;
- row locks (`SELECT ... FOR UPDATE` and friends);
- calls of functions that are not on the function allow-list (`guard_functions`: sqlglot's
  typed functions minus a reviewed exclusion, plus reviewed names per dialect, plus
  `Context.allowed_functions`); the functions in `FORBIDDEN_FUNCTIONS` and
  `FORBIDDEN_FUNCTION_PATTERNS` (files, the server, extensions, locks, sequences, SQL given as
  text) are refused even when a user lists them;
- reads of relations that are not on the relation allow-list (`guard_relations`: the
  database's own tables and views, the query's CTEs, reviewed information views, plus
  `Context.allowed_relations`): system catalogs, other databases, unknown names.

The guard is an allow-list at every level: the statement's first keyword must start a query,
the parsed root must be a query node, every function and relation inside it must be listed,
and every node is also checked against the statement kinds above.
It is not the only layer: connections are read-only at the engine (SQLite: `mode=ro`,
`PRAGMA query_only` and an authorizer; PostgreSQL: `READ ONLY` transactions inside a server-side
cursor) and bounded by a timeout and a row cap (`macsql.database.execution`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from sqlglot import exp
from sqlglot.errors import ErrorLevel, ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from macsql.database.dialect_refusals import (
    dialect_command_reason,
    dialect_function_reason,
    dialect_word_reason,
)
from macsql.database.guard_costs import PATTERN_TOO_LONG, CostCheck
from macsql.database.guard_dialects import guard_dialect
from macsql.database.guard_functions import COMMON_FUNCTIONS, SAFE_FUNCTIONS, UNSAFE_TYPED_FUNCTIONS
from macsql.database.guard_limits import (
    DEFAULT_LIMITS,
    StatementLimits,
    TreeSize,
    token_problem,
)
from macsql.database.guard_relations import (
    CteScopes,
    Relations,
    RelationVerdict,
    check_relation,
    confine_information_views,
    is_cte_reference,
    looks_like_a_file,
    relation_label,
)
from macsql.database.guard_verdicts import GuardKind, GuardVerdict

MAX_SQL_CHARS = DEFAULT_LIMITS.max_chars
"""Longer statements are refused before parsing (`StatementLimits.max_chars`, by default)."""


_OK = GuardVerdict(True, GuardKind.OK)
_ONLY_SELECT = "Only one read-only SELECT query may run"


def _refuse(kind: GuardKind, reason: str) -> GuardVerdict:
    return GuardVerdict(False, kind, reason)


# --- statement level ----------------------------------------------------------------------

_QUERY_STARTS = frozenset({TokenType.SELECT, TokenType.WITH, TokenType.VALUES, TokenType.TABLE})
_QUERY_STARTS_BY_DIALECT = {"duckdb": _QUERY_STARTS | {TokenType.FROM}}

# First keyword of a statement that is not a query -> (kind, what it does).
_COMMANDS: dict[str, tuple[GuardKind, str]] = {
    **{
        word: (GuardKind.WRITE, "changes data")
        for word in (
            "INSERT",
            "UPDATE",
            "DELETE",
            "REPLACE",
            "MERGE",
            "UPSERT",
            "TRUNCATE",
            "REFRESH",
        )
    },
    **{
        word: (GuardKind.DDL, "changes the schema or privileges")
        for word in (
            "CREATE",
            "DROP",
            "ALTER",
            "RENAME",
            "COMMENT",
            "GRANT",
            "REVOKE",
            "REINDEX",
            "CLUSTER",
            "SECURITY",
            "IMPORT",
            "REASSIGN",
            "UNDROP",
            "OPTIMIZE",
        )
    },
    **{
        word: (GuardKind.TRANSACTION, "controls transactions")
        for word in (
            "BEGIN",
            "START",
            "COMMIT",
            "END",
            "ROLLBACK",
            "ABORT",
            "SAVEPOINT",
            "RELEASE",
        )
    },
    **{
        word: (GuardKind.SESSION, "changes or inspects the session")
        for word in (
            "SET",
            "RESET",
            "LISTEN",
            "UNLISTEN",
            "NOTIFY",
            "DISCARD",
            "PREPARE",
            "EXECUTE",
            "EXEC",
            "DEALLOCATE",
            "DECLARE",
            "FETCH",
            "MOVE",
            "CLOSE",
            "USE",
            "SHOW",
        )
    },
    "LOCK": (GuardKind.LOCKING, "locks tables"),
    "PRAGMA": (GuardKind.FORBIDDEN_COMMAND, "reads or changes database settings"),
    "ATTACH": (GuardKind.FORBIDDEN_COMMAND, "opens another database file"),
    "DETACH": (GuardKind.FORBIDDEN_COMMAND, "closes an attached database"),
    "VACUUM": (GuardKind.FORBIDDEN_COMMAND, "rewrites the database (or writes a copy)"),
    "ANALYZE": (GuardKind.FORBIDDEN_COMMAND, "writes statistics"),
    "COPY": (GuardKind.FORBIDDEN_COMMAND, "reads or writes files and programs"),
    "DO": (GuardKind.FORBIDDEN_COMMAND, "runs procedural code"),
    "CALL": (GuardKind.FORBIDDEN_COMMAND, "runs a stored procedure"),
    "CHECKPOINT": (GuardKind.FORBIDDEN_COMMAND, "controls the server"),
    "EXPLAIN": (GuardKind.FORBIDDEN_COMMAND, "is not a query (EXPLAIN ANALYZE even runs it)"),
    "DESCRIBE": (GuardKind.FORBIDDEN_COMMAND, "is not a query"),
    "DESC": (GuardKind.FORBIDDEN_COMMAND, "is not a query"),
    "INSTALL": (GuardKind.FORBIDDEN_COMMAND, "installs an extension"),
    "LOAD": (GuardKind.FORBIDDEN_COMMAND, "loads a library, an extension or data"),
    "KILL": (GuardKind.FORBIDDEN_COMMAND, "controls the server"),
    "SHUTDOWN": (GuardKind.FORBIDDEN_COMMAND, "controls the server"),
    "HANDLER": (GuardKind.FORBIDDEN_COMMAND, "is not a query"),
    "WAITFOR": (GuardKind.FORBIDDEN_COMMAND, "waits"),
}

# Expression types that must not appear anywhere in an allowed statement.
_NODE_KINDS: tuple[tuple[type[exp.Expression], GuardKind, str], ...] = tuple(
    (node_type, kind, label)
    for name, kind, label in (
        ("Insert", GuardKind.WRITE, "INSERT"),
        ("Update", GuardKind.WRITE, "UPDATE"),
        ("Delete", GuardKind.WRITE, "DELETE"),
        ("Merge", GuardKind.WRITE, "MERGE"),
        ("TruncateTable", GuardKind.WRITE, "TRUNCATE"),
        ("Copy", GuardKind.FORBIDDEN_COMMAND, "COPY"),
        ("LoadData", GuardKind.WRITE, "LOAD DATA"),
        ("Refresh", GuardKind.WRITE, "REFRESH"),
        ("Into", GuardKind.WRITE, "SELECT ... INTO"),
        ("Create", GuardKind.DDL, "CREATE"),
        ("Drop", GuardKind.DDL, "DROP"),
        ("Alter", GuardKind.DDL, "ALTER"),
        ("Grant", GuardKind.DDL, "GRANT"),
        ("Revoke", GuardKind.DDL, "REVOKE"),
        ("Comment", GuardKind.DDL, "COMMENT"),
        ("Cache", GuardKind.DDL, "CACHE"),
        ("Uncache", GuardKind.DDL, "UNCACHE"),
        ("Transaction", GuardKind.TRANSACTION, "BEGIN"),
        ("Commit", GuardKind.TRANSACTION, "COMMIT"),
        ("Rollback", GuardKind.TRANSACTION, "ROLLBACK"),
        ("Set", GuardKind.SESSION, "SET"),
        ("Use", GuardKind.SESSION, "USE"),
        ("Execute", GuardKind.SESSION, "EXECUTE"),
        ("Declare", GuardKind.SESSION, "DECLARE"),
        ("Show", GuardKind.SESSION, "SHOW"),
        ("Lock", GuardKind.LOCKING, "FOR UPDATE / FOR SHARE"),
        ("Pragma", GuardKind.FORBIDDEN_COMMAND, "PRAGMA"),
        ("Attach", GuardKind.FORBIDDEN_COMMAND, "ATTACH"),
        ("Detach", GuardKind.FORBIDDEN_COMMAND, "DETACH"),
        ("Analyze", GuardKind.FORBIDDEN_COMMAND, "ANALYZE"),
        ("Describe", GuardKind.FORBIDDEN_COMMAND, "DESCRIBE"),
        ("Kill", GuardKind.FORBIDDEN_COMMAND, "KILL"),
        ("Install", GuardKind.FORBIDDEN_COMMAND, "INSTALL"),
        ("Export", GuardKind.FORBIDDEN_COMMAND, "EXPORT"),
        ("Put", GuardKind.FORBIDDEN_COMMAND, "PUT"),
        ("Get", GuardKind.FORBIDDEN_COMMAND, "GET"),
        ("Command", GuardKind.FORBIDDEN_COMMAND, "a command"),
    )
    if (node_type := getattr(exp, name, None)) is not None
)
_FORBIDDEN_NODE_TYPES = tuple(node_type for node_type, _, _ in _NODE_KINDS)
_ALLOWED_ROOTS = (exp.Select, exp.SetOperation, exp.Subquery, exp.Values)

# --- functions ------------------------------------------------------------------------------

_FILES = "reads or writes files on the server"
_SERVER = "controls the database server"
_SLEEP = "makes the server wait"
_EXTENSION = "loads native code"
_SQL_TEXT = "runs SQL given as text"
_LOCKS = "takes locks"
_SEQUENCES = "changes a sequence (a write)"
_CONFIG = "changes server or session settings"
_REMOTE = "connects to another server"
_LARGE_OBJECTS = "reads, writes or exports large objects"
_WRITES = "writes to the database or its WAL"
_MEMORY = "allocates unbounded memory"

FORBIDDEN_FUNCTIONS: dict[str, str] = {
    # SQLite and its shell / loadable extensions
    "load_extension": _EXTENSION,
    "readfile": _FILES,
    "writefile": _FILES,
    "edit": "starts an editor",
    "fsdir": _FILES,
    "zipfile": _FILES,
    "zipfile_cds": _FILES,
    "fts3_tokenizer": _EXTENSION,
    "eval": _SQL_TEXT,
    "zeroblob": _MEMORY,
    "randomblob": _MEMORY,
    # PostgreSQL: files and server
    "pg_stat_file": _FILES,
    "pg_current_logfile": _FILES,
    "pg_hba_file_rules": _FILES,
    "pg_ident_file_mappings": _FILES,
    "pg_show_all_file_settings": _FILES,
    "pg_terminate_backend": _SERVER,
    "pg_cancel_backend": _SERVER,
    "pg_signal_backend": _SERVER,
    "pg_reload_conf": _SERVER,
    "pg_rotate_logfile": _SERVER,
    "pg_rotate_logfile_old": _SERVER,
    "pg_log_backend_memory_contexts": _SERVER,
    "pg_promote": _SERVER,
    "pg_switch_wal": _SERVER,
    "pg_switch_xlog": _SERVER,
    "pg_create_restore_point": _SERVER,
    "pg_log_standby_snapshot": _SERVER,
    "pg_export_snapshot": _SERVER,
    "pg_import_system_collations": _WRITES,
    "pg_extension_config_dump": _WRITES,
    "pg_nextoid": _WRITES,
    "pg_truncate_visibility_map": _WRITES,
    "heap_force_kill": _WRITES,
    "heap_force_freeze": _WRITES,
    "pg_prewarm": _SERVER,
    "autoprewarm_start_worker": _SERVER,
    "autoprewarm_dump_now": _SERVER,
    "pg_notify": "sends a notification",
    "txid_current": "assigns a transaction id (a write)",
    "pg_current_xact_id": "assigns a transaction id (a write)",
    "set_config": _CONFIG,
    "nextval": _SEQUENCES,
    "setval": _SEQUENCES,
    "loread": _LARGE_OBJECTS,
    "lowrite": _LARGE_OBJECTS,
    "query_to_xml": _SQL_TEXT,
    "query_to_xmlschema": _SQL_TEXT,
    "query_to_xml_and_xmlschema": _SQL_TEXT,
    "cursor_to_xml": _SQL_TEXT,
    "cursor_to_xmlschema": _SQL_TEXT,
    "table_to_xml": _SQL_TEXT,
    "table_to_xmlschema": _SQL_TEXT,
    "table_to_xml_and_xmlschema": _SQL_TEXT,
    "schema_to_xml": _SQL_TEXT,
    "schema_to_xmlschema": _SQL_TEXT,
    "schema_to_xml_and_xmlschema": _SQL_TEXT,
    "database_to_xml": _SQL_TEXT,
    "database_to_xmlschema": _SQL_TEXT,
    "database_to_xml_and_xmlschema": _SQL_TEXT,
    "ts_stat": _SQL_TEXT,
    "ts_rewrite": _SQL_TEXT,
    # MySQL / MariaDB
    "sleep": _SLEEP,
    "benchmark": _SLEEP,
    "load_file": _FILES,
    "get_lock": _LOCKS,
    "release_lock": _LOCKS,
    "release_all_locks": _LOCKS,
    "sys_exec": _SERVER,
    "sys_eval": _SERVER,
    # SQL Server
    "xp_cmdshell": _SERVER,
    "openrowset": _FILES,
    "opendatasource": _REMOTE,
    "openquery": _REMOTE,
    # DuckDB
    "read_csv": _FILES,
    "read_csv_auto": _FILES,
    "read_parquet": _FILES,
    "parquet_scan": _FILES,
    "read_json": _FILES,
    "read_json_auto": _FILES,
    "read_ndjson": _FILES,
    "read_text": _FILES,
    "read_blob": _FILES,
    "sniff_csv": _FILES,
}

FORBIDDEN_FUNCTION_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), why)
    for pattern, why in (
        (r"^pg_sleep", _SLEEP),
        (r"^pg_read_", _FILES),
        (r"^pg_ls_", _FILES),
        (r"^pg_file_", _FILES),
        (r"^pg_logdir_", _FILES),
        (r"^lo_", _LARGE_OBJECTS),
        (r"^dblink", _REMOTE),
        (r"advisory", _LOCKS),
        (r"^pg_stat\w*_reset", _WRITES),
        (r"^pg_(set|clear|restore)_\w*stats", _WRITES),
        (r"^pg_(create|drop|copy|sync)_\w*(slot|slots)$", _SERVER),
        (r"^pg_replication_slot_", _SERVER),
        (r"^pg_replication_origin_", _SERVER),
        (r"^pg_logical_", _WRITES),
        (r"^pg_(start|stop)_backup$", _SERVER),
        (r"^pg_backup_", _SERVER),
        (r"^pg_wal_replay_", _SERVER),
        (r"^binary_upgrade_", _WRITES),
        (r"^dbms_", _SERVER),
        (r"^utl_", _SERVER),
        (r"^xp_", _SERVER),
        (r"^sp_", _SERVER),
    )
)

# Functions refused in one dialect only, where the name means something harmless elsewhere
# (SQLite's glob() is a string match; DuckDB's reads the file system).
_DIALECT_FUNCTIONS: dict[str, dict[str, str]] = {
    "duckdb": {
        name: (_SQL_TEXT if name.startswith("query") else _FILES)
        for name in (
            "glob",
            "query",
            "query_table",
            "parquet_metadata",
            "parquet_schema",
            "parquet_file_metadata",
            "parquet_kv_metadata",
            "read_json_objects",
            "read_json_objects_auto",
            "read_xlsx",
            "st_read",
            "delta_scan",
            "iceberg_scan",
            "sqlite_scan",
            "sqlite_attach",
            "postgres_scan",
            "postgres_attach",
            "mysql_scan",
        )
    },
}
# MySQL and MariaDB run the text of /*! ... */ and /*M! ... */ comments as SQL.
_EXECUTABLE_COMMENT = ("!", "M!")

_PLAIN_NAME = re.compile(r"^[a-z_][a-z0-9_$]*$")


@functools.lru_cache(maxsize=4096)
def forbidden_function_reason(name: str) -> str | None:
    """Why the function `name` is known to be unsafe (never allowed, not even when a user adds
    it to `Context.allowed_functions`), or None when it is not on the known-unsafe list."""
    lowered = name.lower()
    if not _PLAIN_NAME.match(lowered):
        return "has an escaped or unusual name, which could hide another function"
    why = FORBIDDEN_FUNCTIONS.get(lowered)
    if why is not None:
        return why
    for pattern, why in FORBIDDEN_FUNCTION_PATTERNS:
        if pattern.search(lowered):
            return why
    return None


def _known_unsafe(name: str, dialect: str) -> str | None:
    return forbidden_function_reason(name) or _DIALECT_FUNCTIONS.get(dialect, {}).get(name.lower())


def function_allowed(name: str, dialect: str, extra: frozenset[str] = frozenset()) -> bool:
    """Whether a call of `name` (as the database names it) is allowed in `dialect`: on the
    reviewed list of side-effect-free functions or in `extra`, and not known to be unsafe.
    SQLite's authorizer asks this too, so both layers agree."""
    lowered = name.lower()
    if lowered in ("->", "->>"):  # SQLite's JSON operators reach the authorizer as functions
        return dialect == "sqlite"
    if _known_unsafe(lowered, dialect) is not None:
        return False
    return lowered in SAFE_FUNCTIONS.get(dialect, COMMON_FUNCTIONS) or lowered in extra


# Nodes that keep the function's name as written (sqlglot did not map it to its own class).
_NAMED_FUNCTIONS = tuple(
    node_type
    for name in (
        "Anonymous",
        "AnonymousAggFunc",
        "CombinedAggFunc",
        "ParameterizedAgg",
        "CombinedParameterizedAgg",
    )
    if (node_type := getattr(exp, name, None)) is not None
)


@functools.cache
def _typed_function_names(func_type: Any) -> tuple[str, ...]:
    try:
        return tuple(name.lower() for name in func_type.sql_names())
    except Exception:  # an abstract base without a name
        return ()


@functools.cache
def _typed_refusal(func_type: Any, dialect: str) -> str | None:
    names = _typed_function_names(func_type)
    shown = names[0] if names else func_type.__name__.lower()
    if func_type.__name__ in UNSAFE_TYPED_FUNCTIONS:
        return _unsafe_message(shown, "has side effects or reads outside the database")
    for name in names:
        why = _known_unsafe(name, dialect)
        if why is not None:
            return _unsafe_message(name, why)
    return None


def _unsafe_message(name: str, why: str) -> str:
    return (
        f"Rejected: the function {name}() {why}; it is not allowed in a query. Rewrite the query "
        f"without it."
    )


def _function_refusal(node: exp.Func, dialect: str, extra: frozenset[str]) -> str | None:
    qualifier = _function_qualifier(node)
    if not isinstance(node, _NAMED_FUNCTIONS):
        func_type: Any = type(node)  # a class is hashable; mypy's Hashable check misreads it
        refusal = _typed_refusal(func_type, dialect)
        if refusal is not None or not qualifier:
            return refusal
        name = next(iter(_typed_function_names(func_type)), "")
    else:
        name = node.name
    why = _known_unsafe(name, dialect)
    if why is not None:
        return _unsafe_message(name, why)
    if qualifier:
        qualified = f"{qualifier}.{name}".lower()
        builtin = qualifier.lower() == _BUILTIN_SCHEMA.get(dialect)
        if qualified in extra or (builtin and function_allowed(name, dialect, extra)):
            return None
        shown = f"{qualifier}.{name}"
    elif function_allowed(name, dialect, extra):
        return None
    else:
        shown = name
    return (
        f"Rejected: the function {shown}() is not on macsql's list of functions known to be "
        f"free of side effects in {_DISPLAY.get(dialect, dialect or 'SQL')}. Rewrite the query "
        f"without it. (If it is a pure function of your own, add '{shown}' to "
        f"Context.allowed_functions.)"
    )


def _dialect_refusal(node: exp.Func, dialect: str) -> str | None:
    """The dialect's own refusals (`dialect_refusals`), whatever the allow-lists say."""
    if isinstance(node, _NAMED_FUNCTIONS):
        names: tuple[str, ...] = (node.name,)
    else:
        func_type: Any = type(node)
        names = _typed_function_names(func_type)
    for name in names:
        why = dialect_function_reason(name, dialect)
        if why is not None:
            return _unsafe_message(name, why)
    return None


def _shadowed_function(node: exp.Func, policy: GuardPolicy) -> str | None:
    user_functions = policy.relations.user_functions if policy.relations else frozenset()
    if not user_functions:
        return None
    if isinstance(node, _NAMED_FUNCTIONS):
        names: tuple[str, ...] = (node.name.lower(),)
    else:
        func_type: Any = type(node)
        names = _typed_function_names(func_type)
    for name in names:
        if name in user_functions and name not in policy.allowed_functions:
            return (
                f"Rejected: {name}() is also the name of a function defined in the database's "
                f"own schemas, which the database may call instead of the built-in one. "
                f"Rewrite the query without it. (If that function is free of side effects, "
                f"add '{name}' to Context.allowed_functions.)"
            )
    return None


# A function named with its schema is that schema's function; only the built-in one is known.
_BUILTIN_SCHEMA = {"postgres": "pg_catalog"}
_DISPLAY = {"sqlite": "SQLite", "postgres": "PostgreSQL", "mysql": "MySQL", "duckdb": "DuckDB"}


def _function_qualifier(node: exp.Func) -> str:
    parent = node.parent
    if isinstance(parent, exp.Dot) and parent.expression is node:
        return parent.this.sql() if isinstance(parent.this, exp.Expression) else str(parent.this)
    return ""


# --- dialects and tokens ------------------------------------------------------------------


def split_statements(tokens: list[Token]) -> list[list[Token]]:
    """The tokens of each statement, split at semicolons (empty statements dropped)."""
    statements: list[list[Token]] = []
    current: list[Token] = []
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if current:
                statements.append(current)
                current = []
        else:
            current.append(token)
    if current:
        statements.append(current)
    return statements


def _first_token(tokens: list[Token]) -> Token | None:
    for token in tokens:
        if token.token_type != TokenType.L_PAREN:
            return token
    return None


def _first_word(tokens: list[Token]) -> str:
    token = _first_token(tokens)
    return token.text.upper() if token is not None else ""


def _command_verdict(word: str, dialect: str = "") -> GuardVerdict:
    shown = word if len(word) <= 40 else word[:40] + "..."
    dialect_reason = dialect_command_reason(word, dialect)
    if dialect_reason is not None:
        return _refuse(
            GuardKind.FORBIDDEN_COMMAND, f"Rejected: {shown} {dialect_reason}. {_ONLY_SELECT}."
        )
    command = _COMMANDS.get(word)
    if command is None:
        # No SQL statement of any dialect we know starts like this: most likely a typo.
        return _refuse(
            GuardKind.SYNTAX,
            f"SQL syntax error: a statement cannot start with '{shown}'; a query starts with "
            f"SELECT, WITH or VALUES.",
        )
    kind, what = command
    return _refuse(kind, f"Rejected: {shown} {what}. {_ONLY_SELECT}.")


_TOKEN_REPR = re.compile(r"<Token token_type: TokenType\.\w+, text: (.*?), line: .*?>")
_MISSING_ARG = re.compile(r"Required keyword: '\w+' missing for <class '[\w.]*\.(\w+)'>")


def _readable(description: str) -> str:
    """sqlglot's parser messages without its internal object names."""
    description = _TOKEN_REPR.sub(r"'\1'", description).replace("'SENTINEL'", "the end")
    return _MISSING_ARG.sub(lambda m: f"incomplete {m.group(1).upper()} expression", description)


def _syntax_verdict(error: ParseError) -> GuardVerdict:
    if error.errors:
        first = error.errors[0]
        description = _readable(str(first.get("description") or "invalid SQL"))
        where = f"line {first.get('line')}, column {first.get('col')}"
        near = (first.get("highlight") or "").strip()
        detail = f"{description} at {where}" + (f", near '{near}'" if near else "")
    else:
        detail = _readable(str(error).splitlines()[0])
    return _refuse(GuardKind.SYNTAX, f"SQL syntax error: {detail}.")


# --- the guard ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GuardPolicy:
    """What the allow-lists hold beyond macsql's reviewed ones, for one database.

    `relations` is the database's inventory (None: unknown, see `guard_relations`);
    `allowed_functions` and `allowed_relations` come from `Context.allowed_functions` and
    `Context.allowed_relations`, in lower case.
    """

    relations: Relations | None = None
    allowed_functions: frozenset[str] = frozenset()
    allowed_relations: frozenset[str] = frozenset()
    limits: StatementLimits = DEFAULT_LIMITS


def make_policy(
    relations: Relations | None = None,
    allowed_functions: Iterable[str] = (),
    allowed_relations: Iterable[str] = (),
    limits: StatementLimits = DEFAULT_LIMITS,
) -> GuardPolicy:
    """A `GuardPolicy` with the user's names cleaned (stripped, lower case, empty ones dropped)."""

    def clean(names: Iterable[str]) -> frozenset[str]:
        return frozenset(n.strip().lower() for n in names if n and n.strip())

    return GuardPolicy(relations, clean(allowed_functions), clean(allowed_relations), limits)


_NO_POLICY = GuardPolicy()


def check_statement(sql: str, dialect: str, policy: GuardPolicy | None = None) -> GuardVerdict:
    """Allow exactly one read-only query in `dialect` (sqlglot's name); refuse the rest.

    Functions and relations must be on the allow-lists (`guard_functions`, `guard_relations`),
    extended by `policy`. Without a policy the user's tables are unknown: see `guard_relations`.
    Never raises for any input text: a statement the guard cannot analyse is refused. A verdict
    depends on nothing but its arguments, so verdicts on texts of ordinary length are cached:
    an eval checks each prediction twice, in the pipeline's executor and in scoring.
    """
    policy = policy or _NO_POLICY
    if len(sql) <= _CACHED_TEXT_MAX_CHARS:
        return _cached_verdict(sql, dialect, policy)
    return _verdict(sql, dialect, policy)


_CACHED_TEXT_MAX_CHARS = 4_000


def _verdict(sql: str, dialect: str, policy: GuardPolicy) -> GuardVerdict:
    parsed = _statement(sql, dialect, policy.limits)
    if isinstance(parsed, GuardVerdict):
        return parsed
    verdict = _check_tree(parsed, dialect, policy)
    if not verdict.allowed:
        return verdict
    return _executable(parsed, dialect, policy)


def _statement(
    sql: str, dialect: str, limits: StatementLimits = DEFAULT_LIMITS
) -> GuardVerdict | exp.Expression:
    """The one query's tree, or the refusal of a text that is not one read-only query: all
    that the policy does not change (the tree is only read after)."""
    if len(sql) > limits.max_chars:
        return _refuse(
            GuardKind.TOO_LONG,
            f"Rejected: the SQL is {len(sql):,} characters long; the limit is "
            f"{limits.max_chars:,} (Context.max_sql_chars).",
        )
    dialect_obj = guard_dialect(dialect)
    try:
        tokens = dialect_obj.tokenize(sql)
    except TokenError as exc:
        return _refuse(
            GuardKind.SYNTAX,
            f"SQL syntax error: {str(exc).splitlines()[0]} (an unterminated string, quoted "
            f"name or comment?).",
        )
    except Exception as exc:
        return _unsupported(exc)

    statements = split_statements(tokens)
    if not statements:
        return _refuse(
            GuardKind.EMPTY, "Rejected: there is no SQL statement, only comments or semicolons."
        )
    if len(statements) > 1:
        others = ", ".join(_first_word(s) or "?" for s in statements[1:4])
        return _refuse(
            GuardKind.MULTIPLE_STATEMENTS,
            f"Rejected: found {len(statements)} statements separated by ';' "
            f"(then: {others}). Send exactly one SELECT query.",
        )

    statement = statements[0]
    first = _first_token(statement)
    if first is None:
        return _refuse(GuardKind.SYNTAX, "SQL syntax error: only parentheses, no query.")
    if first.token_type not in _QUERY_STARTS_BY_DIALECT.get(dialect, _QUERY_STARTS):
        return _command_verdict(first.text.upper(), dialect)
    for token in tokens:  # all of them: a comment after the final ';' counts too
        for comment in token.comments:
            if comment.lstrip().startswith(_EXECUTABLE_COMMENT):
                return _refuse(
                    GuardKind.FORBIDDEN_COMMAND,
                    "Rejected: a comment starting with '!' is code to MySQL and MariaDB "
                    "(an executable comment). Remove the comment.",
                )

    bare = (t.text.upper() for t in statement if t.token_type not in _QUOTED_TOKENS)
    word_reason = dialect_word_reason(bare, dialect)
    if word_reason is not None:
        return _refuse(GuardKind.WRITE, f"Rejected: {word_reason}. {_ONLY_SELECT}.")
    too_large = token_problem(statement, limits)
    if too_large is not None:
        return _too_complex(too_large)
    try:
        parsed = dialect_obj.parser().parse(statement, sql)
    except ParseError as exc:
        return _syntax_verdict(exc)
    except RecursionError:
        return _too_complex("the statement is nested too deeply to analyse")
    except Exception as exc:  # sqlglot's own failure
        return _unsupported(exc)
    roots = [root for root in parsed if isinstance(root, exp.Expression)]
    if len(roots) != 1:
        return _refuse(
            GuardKind.MULTIPLE_STATEMENTS,
            f"Rejected: found {len(roots)} statements. Send exactly one SELECT query.",
        )
    return roots[0]


_QUOTED_TOKENS = frozenset({TokenType.STRING, TokenType.IDENTIFIER})

# Trees are not cached, only verdicts: a verdict writes its text from a tree of its own
# without copying it (the writer may rearrange a tree), and a text is rarely checked under two
# policies (the reply reader asks only about texts that do not start like a query).
_cached_verdict = functools.lru_cache(maxsize=8192)(_verdict)


def _unsupported(exc: Exception) -> GuardVerdict:
    return _refuse(
        GuardKind.UNSUPPORTED,
        f"Rejected: the SQL checker could not analyse this statement "
        f"({type(exc).__name__}: {str(exc)[:200]}). Rewrite it in plain SQL.",
    )


def _too_complex(problem: str) -> GuardVerdict:
    return _refuse(
        GuardKind.TOO_COMPLEX, f"Rejected: {problem}. Write a smaller query (or raise the limit)."
    )


def _check_tree(root: exp.Expression, dialect: str, policy: GuardPolicy) -> GuardVerdict:
    if not isinstance(root, _ALLOWED_ROOTS):
        kind, label = _classify_node(root)
        return _refuse(kind, f"Rejected: {label} is not a read-only query. {_ONLY_SELECT}.")
    # One walk: the tree's size, each node's own rules, the costs. Counting stops the walk at
    # the first limit passed, so a huge tree costs no more than the limit.
    size = TreeSize(policy.limits)
    costs = CostCheck(dialect, policy.limits)
    unstoppable: str | None = None
    scopes = CteScopes(dialect)
    for node in root.walk():
        node_type: Any = type(node)  # a class is hashable; mypy's Hashable check misreads it
        if _unruled(node_type, dialect):  # most nodes: columns, names, literals, operators
            too_large = size.count()
            if too_large is not None:
                return _too_complex(too_large)
            continue
        too_large = size.see(node)
        if too_large is not None:
            return _too_complex(too_large)
        if unstoppable is None:
            unstoppable = costs.see(node)
        if isinstance(node, _FORBIDDEN_NODE_TYPES):
            return _nested_verdict(node)
        if isinstance(node, exp.Func):
            refusal = (
                _dialect_refusal(node, dialect)
                or _function_refusal(node, dialect, policy.allowed_functions)
                or _shadowed_function(node, policy)
            )
            if refusal is not None:
                return _refuse(GuardKind.FORBIDDEN_FUNCTION, refusal)
        elif isinstance(node, exp.Table):
            verdict = _relation_verdict(node, dialect, policy, scopes)
            if verdict is not None:
                return verdict
        elif isinstance(node, exp.DataType) and _catalog_type(node):
            return _refuse(
                GuardKind.FORBIDDEN_RELATION,
                f"Rejected: a cast to {node.sql(dialect=guard_dialect(dialect))} looks names up "
                f"in the system catalogs (roles, relations, functions). Query the database's "
                f"tables only.",
            )
        elif _reads_a_variable(node, dialect):
            return _refuse(
                GuardKind.SESSION,
                f"Rejected: {node.sql(dialect=guard_dialect(dialect))[:60]} reads or sets a "
                f"server or session variable, which is not the database's data. Query its "
                f"tables only.",
            )
    if unstoppable is not None:
        if unstoppable.startswith(PATTERN_TOO_LONG):
            return _too_complex(unstoppable)
        return _refuse(GuardKind.UNSTOPPABLE, f"Rejected: {unstoppable}.")
    return _OK


@functools.cache
def _unruled(node_type: Any, dialect: str) -> bool:
    """Whether no rule of `_check_tree` applies to a node of this type in `dialect` (it is
    only counted): decided once per type, instead of a dozen isinstance tests per node."""
    ruled = (
        *TreeSize.SEEN,
        *CostCheck.SEEN,
        *_FORBIDDEN_NODE_TYPES,
        exp.Func,
        exp.Table,
        exp.DataType,
        *_VARIABLE_NODES,
        *(_MYSQL_VARIABLE_NODES if dialect == "mysql" else ()),
    )
    return not issubclass(node_type, ruled)


def _catalog_type(node: exp.DataType) -> bool:
    """PostgreSQL's object identifier types (regclass, regrole, regproc, ...): a cast to one
    looks a name or a number up in the catalogs, so a loop over integers lists them all."""
    name = node.this.value if isinstance(node.this, exp.DataType.Type) else str(node.this or "")
    return name.upper().startswith("REG")


_VARIABLE_NODES: tuple[type[exp.Expression], ...] = (exp.SessionParameter,)
# MySQL's @name user variables, and := assignments to them, are session state too.
_MYSQL_VARIABLE_NODES: tuple[type[exp.Expression], ...] = (exp.Parameter, exp.PropertyEQ)


def _reads_a_variable(node: object, dialect: str) -> bool:
    if isinstance(node, _VARIABLE_NODES):
        return True
    return dialect == "mysql" and isinstance(node, _MYSQL_VARIABLE_NODES)


def _write(tree: exp.Expression, dialect: str) -> str:
    """The statement as the database will read it: no comments (an executable comment, or one
    that ends where the server and sqlglot disagree, never reaches the server). The tree must
    be the caller's alone: the writer may rearrange it, so it is not copied first."""
    return tree.sql(
        dialect=guard_dialect(dialect),
        comments=False,
        unsupported_level=ErrorLevel.RAISE,
        copy=False,
    )


def _executable(root: exp.Expression, dialect: str, policy: GuardPolicy) -> GuardVerdict:
    """The allowed verdict carrying the text to run: written from the checked tree, read back,
    written again to the same text, and the tree it reads as checked again. So the server runs
    exactly what the guard saw, whatever the model's text held (comments, odd spaces, quoting
    the server would read otherwise); a statement that does not survive this is refused."""
    tree = confine_information_views(root, dialect, policy.relations, policy.allowed_relations)
    limits = _written_limits(policy.limits)
    try:
        # Every tree here is this call's alone (its own parse, or the confined copy of it).
        text = _write(tree or root, dialect)
        reread = _statement(text, dialect, limits)
        if not isinstance(reread, exp.Expression):
            return _refuse(
                GuardKind.UNSUPPORTED,
                "Rejected: the SQL checker cannot write this statement so that it reads back "
                "the same; it is not run. Rewrite it in plain SQL.",
            )
        checked = _check_tree(reread, dialect, replace(policy, limits=limits))
        if not checked.allowed:
            return checked
        again = _write(reread, dialect)
    except RecursionError:
        return _too_complex("the statement is nested too deeply to write back")
    except Exception as exc:  # sqlglot cannot write this construct in the dialect
        return _refuse(
            GuardKind.UNSUPPORTED,
            f"Rejected: the SQL checker cannot write this statement back in "
            f"{_DISPLAY.get(dialect, dialect or 'SQL')} ({type(exc).__name__}: "
            f"{str(exc)[:160]}). Rewrite it in plain SQL.",
        )
    if again != text:
        return _refuse(
            GuardKind.UNSUPPORTED,
            "Rejected: the SQL checker cannot write this statement so that it reads back the "
            "same; it is not run. Rewrite it in plain SQL.",
        )
    return GuardVerdict(True, GuardKind.OK, None, text, _result_columns(reread))


def _result_columns(tree: exp.Expression) -> int | None:
    """How many columns the query returns: its (first) SELECT's expressions, when none is a
    `*` or `t.*`; None when the tree does not say (a star, VALUES)."""
    node = tree
    while isinstance(node, exp.Subquery | exp.SetOperation):
        node = node.this  # a set operation returns its first query's columns
    if not isinstance(node, exp.Select):
        return None
    if any(column.is_star for column in node.expressions):
        return None
    return len(node.expressions) or None


@functools.lru_cache(maxsize=64)
def _written_limits(limits: StatementLimits) -> StatementLimits:
    """The limits the written text is checked against: the same rules, but confining the
    information views adds a SELECT and a few nodes per view, and the model's text has already
    passed the size limits."""
    return replace(
        limits, max_chars=10**9, max_nodes=10**9, max_depth=10**6, max_query_blocks=10**6
    )


def _relation_verdict(
    table: exp.Table, dialect: str, policy: GuardPolicy, scopes: CteScopes | None = None
) -> GuardVerdict | None:
    source = table.this
    if source is None or isinstance(source, exp.Func):
        return None  # ROWS FROM (...) or a table-valued function: the calls are checked
    label = relation_label(table)
    if not isinstance(source, exp.Identifier):
        return _refuse(
            GuardKind.FORBIDDEN_RELATION,
            f"Rejected: the relation {label or source.sql()!r} is not a table name. Query the "
            f"database's tables only.",
        )
    if is_cte_reference(table, dialect, scopes):
        return None
    verdict = check_relation(table, dialect, policy.relations, policy.allowed_relations)
    if verdict is RelationVerdict.ALLOWED:
        return None
    if dialect == "duckdb" and looks_like_a_file(table.name):
        return _refuse(
            GuardKind.FORBIDDEN_FUNCTION,
            f"Rejected: the table {table.name!r} looks like a file path, which DuckDB would "
            f"read. Query the database's tables only.",
        )
    hint = f"(If the query may read it, add '{label}' to Context.allowed_relations.)"
    if verdict is RelationVerdict.UNKNOWN:
        return _refuse(
            GuardKind.UNKNOWN_RELATION,
            f"no such table: {label} (it is not a table or view of the database's schemas). {hint}",
        )
    return _refuse(
        GuardKind.FORBIDDEN_RELATION,
        f"Rejected: {label} is a system catalog or another database's relation, not one of "
        f"the database's own tables; a query may read only those and the information_schema "
        f"views of tables and columns. {hint}",
    )


def _classify_node(node: exp.Expression) -> tuple[GuardKind, str]:
    for node_type, kind, label in _NODE_KINDS:
        if isinstance(node, node_type):
            return kind, label
    return GuardKind.FORBIDDEN_COMMAND, f"a {type(node).__name__} expression"


def _nested_verdict(node: exp.Expression) -> GuardVerdict:
    kind, label = _classify_node(node)
    if isinstance(node, exp.Into):
        reason = (
            "Rejected: SELECT ... INTO creates a table or writes a file. Remove the INTO clause."
        )
    elif isinstance(node, exp.Lock):
        reason = "Rejected: FOR UPDATE / FOR SHARE locks rows. Remove the locking clause."
    elif node.find_ancestor(exp.CTE) is not None:
        reason = (
            f"Rejected: the WITH clause contains {label}, which is not read-only "
            f"(a data-modifying CTE). {_ONLY_SELECT}."
        )
    else:
        reason = f"Rejected: the query contains {label}, which is not read-only. {_ONLY_SELECT}."
    return _refuse(kind, reason)
