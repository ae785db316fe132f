"""Statements and functions refused in one dialect only: DuckDB's and MySQL/MariaDB's.

The guard (`macsql.database.guard`) consults this table on top of its own lists, whatever shape
those take: a statement that starts with a word below, or a call to a function matched below,
is refused in that dialect. The names are refused where they mean file, network, server or
session access in that dialect, and left alone elsewhere (SQLite's `glob()` is a string match).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

_FILES = "reads or writes files or URLs"
_SERVER = "controls the database (checkpoints, settings, secrets)"
_SESSION = "reads the server's environment or secrets"

# First word of a statement -> what it does (its kind is the guard's FORBIDDEN_COMMAND).
DIALECT_COMMANDS: dict[str, dict[str, str]] = {
    "duckdb": {
        "EXPORT": "writes the database to files",
        "IMPORT": "reads a database from files",
        "FORCE": "forces an INSTALL or a CHECKPOINT",
        "SUMMARIZE": "is not a query",
        "CHECKPOINT": "writes the database file",
        "ATTACH": "opens another database file or server",
        "INSTALL": "installs an extension",
        "LOAD": "loads an extension",
        "PRAGMA": "reads or changes database settings",
        "COPY": "reads or writes files",
    },
    "mysql": {
        "HANDLER": "reads tables outside a query",
        "DO": "evaluates expressions for their side effects",
        "LOAD": "loads data from a file (LOAD DATA / LOAD XML)",
        "SET": "changes session or server variables",
        "FLUSH": "controls the server",
        "PURGE": "deletes server logs",
        "INSTALL": "installs a plugin",
        "UNINSTALL": "removes a plugin",
        "CACHE": "controls the server",
        "BINLOG": "replays binary log events",
        "CHANGE": "changes replication",
        "RESET": "resets server state",
        "XA": "controls transactions",
        "CHECK": "is not a query",
        "CHECKSUM": "is not a query",
        "REPAIR": "rewrites tables",
        "LOCK TABLES": "locks tables",
        "UNLOCK TABLES": "unlocks tables",
    },
}

# Words that make any statement a write, wherever they stand (outside strings and quoted names).
DIALECT_WORDS: dict[str, dict[str, str]] = {
    "mysql": {
        "OUTFILE": "SELECT ... INTO OUTFILE writes a file on the server",
        "DUMPFILE": "SELECT ... INTO DUMPFILE writes a file on the server",
    },
}

# Regular expressions over a called function's lower-cased name -> why it is refused.
DIALECT_FUNCTION_PATTERNS: dict[str, tuple[tuple[re.Pattern[str], str], ...]] = {
    dialect: tuple((re.compile(pattern), why) for pattern, why in rules)
    for dialect, rules in {
        "duckdb": (
            (r"^read_", _FILES),
            (r"^write_", _FILES),
            (r"_scan$", _FILES),
            (r"^(sqlite|postgres|mysql|iceberg|delta|parquet)_|^st_read", _FILES),
            (r"^(glob|sniff_csv|from_csv_auto|from_parquet|from_json)$", _FILES),
            (r"^(query|query_table|query_table_by_name)$", "runs SQL given as text"),
            (r"checkpoint", _SERVER),
            (r"^pragma_", _SERVER),
            (r"^(getenv|duckdb_secrets|which_secret|load_aws_credentials)$", _SESSION),
            (r"^(set_variable|getvariable)$", _SESSION),
            (r"^(nextval|setval|currval)$", "changes a sequence (a write)"),
        ),
        "mysql": (
            (r"^(sleep|benchmark)$", "makes the server wait"),
            (r"^(load_file)$", _FILES),
            (
                r"(^get_lock|^release_lock|^release_all_locks|^is_free_lock|^is_used_lock)$",
                "takes locks",
            ),
            (
                r"^master_pos_wait$|^source_pos_wait$|^wait_for_executed_gtid_set$",
                "makes the server wait",
            ),
            (r"^(sys_exec|sys_eval|sys_get|sys_set)$", _SERVER),
            (r"^(setval|nextval|lastval)$", "changes a sequence (a write)"),
        ),
    }.items()
}


def dialect_command_reason(word: str, dialect: str) -> str | None:
    """What a statement starting with `word` does, when it is refused in `dialect`."""
    return DIALECT_COMMANDS.get(dialect, {}).get(word.upper())


@functools.lru_cache(maxsize=4096)
def dialect_function_reason(name: str, dialect: str) -> str | None:
    """Why calling `name` is refused in `dialect`, or None."""
    lowered = name.lower()
    for pattern, why in DIALECT_FUNCTION_PATTERNS.get(dialect, ()):
        if pattern.search(lowered):
            return why
    return None


def dialect_word_reason(words: Iterable[str], dialect: str) -> str | None:
    """What a statement containing one of `words` (bare words, upper case) does, if refused."""
    table = DIALECT_WORDS.get(dialect)
    if not table:
        return None
    return next((table[word] for word in words if word in table), None)
