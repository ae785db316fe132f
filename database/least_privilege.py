"""Least privilege, checked on every new connection: a role that can write, read or write the
server's files, or change its settings is refused unless the user says so.

The guard and the read-only sessions are two layers; the role's own privileges are the third,
and the one that holds whatever a parser gets wrong. When the guard was bypassed on MariaDB
(issue 26), the CI's role with ALL PRIVILEGES read `/etc/passwd` with `LOAD_FILE`, wrote files
with `INTO OUTFILE` and read `mysql.user`; a SELECT-only role could have done none of it. So
on every new pooled connection macsql reads what the role may do:

- **PostgreSQL**: the role's attributes (SUPERUSER, CREATEROLE, CREATEDB, REPLICATION,
  BYPASSRLS), membership of the roles that reach the server (`pg_read_server_files`,
  `pg_write_server_files`, `pg_execute_server_program`, `pg_write_all_data`,
  `pg_signal_backend`, `pg_checkpoint`), INSERT/UPDATE/DELETE/TRUNCATE/TRIGGER or ownership of
  any relation in the user schemas, CREATE on the database or on a user schema, and
  (PostgreSQL 15+) SET or ALTER SYSTEM granted on a parameter;
- **MySQL/MariaDB**: `SHOW GRANTS` (and the grants of the roles it names): anything but
  SELECT, SHOW VIEW and USAGE, or WITH GRANT OPTION;
- **DuckDB**: the file is open read-only, external access (files, URLs, extensions) is off and
  the configuration locked;
- **SQLite**: the file is opened `mode=ro` with `PRAGMA query_only` by macsql itself.

A privileged role is refused with `PrivilegedRoleError`, naming what it may do and how to make
a read-only one. The override is explicit and per database URL: the query parameter
`macsql_allow_privileged=1` (removed before the URL reaches the driver); macsql then connects
and warns once on stderr.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from macsql.database.connection_errors import DatabaseUnavailableError

ALLOW_PRIVILEGED_PARAM = "macsql_allow_privileged"
"""The URL query parameter that lets macsql connect as a privileged role (value 1 or true)."""


class PrivilegedRoleError(DatabaseUnavailableError):
    """The role macsql connected as may write, reach the server's files or change settings."""


_SERVER_ROLES = (
    "pg_read_server_files",
    "pg_write_server_files",
    "pg_execute_server_program",
    "pg_write_all_data",
    "pg_signal_backend",
    "pg_checkpoint",
)

_PG_PRIVILEGES = f"""
SELECT r.rolname, r.rolsuper, r.rolcreaterole, r.rolcreatedb, r.rolreplication, r.rolbypassrls,
  ARRAY(SELECT s.rolname FROM pg_roles s
        WHERE s.rolname IN ({", ".join(f"'{name}'" for name in _SERVER_ROLES)})
          AND pg_has_role(r.oid, s.oid, 'MEMBER') ORDER BY 1),
  (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f') AND n.nspname NOT LIKE 'pg\\_%'
     AND n.nspname <> 'information_schema'
     AND (pg_has_role(c.relowner, 'MEMBER')
          OR has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE, TRIGGER'))),
  (SELECT count(*) FROM pg_namespace n WHERE n.nspname NOT LIKE 'pg\\_%'
     AND n.nspname <> 'information_schema' AND has_schema_privilege(n.oid, 'CREATE')),
  has_database_privilege(current_database(), 'CREATE'),
  current_setting('server_version_num')::int
FROM pg_roles r WHERE r.rolname = current_user
"""
_PG_PARAMETERS = (
    "SELECT count(*) FROM pg_parameter_acl WHERE has_parameter_privilege(parname, 'SET') "
    "OR has_parameter_privilege(parname, 'ALTER SYSTEM')"
)


def postgres_privileges(dbapi_connection: Any) -> tuple[str, list[str]]:
    """(role, what it may do beyond reading) of a psycopg connection; leaves no transaction."""
    try:
        with dbapi_connection.cursor() as cursor:
            cursor.execute(_PG_PRIVILEGES)
            row = cursor.fetchone()
            (role, superuser, createrole, createdb, replication, bypassrls) = row[:6]
            members, writable, creatable, create_in_db, version = row[6:]
            parameters = 0
            if version >= 150000 and not superuser:
                cursor.execute(_PG_PARAMETERS)
                parameters = cursor.fetchone()[0]
    finally:
        dbapi_connection.rollback()
    found: list[str] = []
    for flag, label in (
        (superuser, "is a SUPERUSER"),
        (createrole, "has CREATEROLE"),
        (createdb, "has CREATEDB"),
        (replication, "has REPLICATION"),
        (bypassrls, "has BYPASSRLS"),
    ):
        if flag:
            found.append(label)
    if members:
        found.append(f"is a member of {', '.join(members)}")
    if writable:
        found.append(f"owns or may change {writable} relation(s)")
    if creatable:
        found.append(f"may CREATE in {creatable} schema(s)")
    if create_in_db:
        found.append("may CREATE schemas in the database")
    if parameters:
        found.append(f"may SET or ALTER SYSTEM {parameters} parameter(s)")
    return str(role), found


_GRANT = re.compile(r"^GRANT (?P<what>.+?) ON (?P<on>.+?) TO ", re.IGNORECASE)
_ROLE_GRANT = re.compile(r"^GRANT (?P<roles>.+?) TO ", re.IGNORECASE)
_READ_PRIVILEGES = frozenset({"SELECT", "SHOW VIEW", "USAGE"})


def mysql_grant_problems(lines: list[str]) -> tuple[list[str], list[str]]:
    """(privileges beyond reading, roles granted) in `SHOW GRANTS` output lines."""
    problems: list[str] = []
    roles: list[str] = []
    for line in lines:
        text = line.strip()
        if not text.upper().startswith("GRANT "):
            continue  # MariaDB's SET DEFAULT ROLE lines
        if " WITH GRANT OPTION" in text.upper() or " WITH ADMIN OPTION" in text.upper():
            problems.append("may grant privileges (WITH GRANT OPTION)")
        match = _GRANT.match(text)
        if match is None:
            role_match = _ROLE_GRANT.match(text)
            if role_match:
                roles += [r.strip() for r in role_match["roles"].split(",") if r.strip()]
            continue
        what = re.sub(r"\([^)]*\)", "", match["what"])  # column lists
        for privilege in (p.strip().upper() for p in what.split(",")):
            if privilege and privilege not in _READ_PRIVILEGES:
                problems.append(f"{privilege} on {match['on'].strip()}")
    return problems, roles


def mysql_privileges(dbapi_connection: Any) -> tuple[str, list[str]]:
    """(user, what it may do beyond reading) of a PyMySQL connection, its roles' grants too."""
    with dbapi_connection.cursor() as cursor:
        cursor.execute("SELECT CURRENT_USER()")
        user = str(cursor.fetchone()[0])
        cursor.execute("SHOW GRANTS")
        problems, roles = mysql_grant_problems([str(row[0]) for row in cursor.fetchall()])
        seen: set[str] = set()
        while roles:
            role = roles.pop()
            if role in seen or len(seen) > 50:
                continue
            seen.add(role)
            cursor.execute(f"SHOW GRANTS FOR {role}")
            more, nested = mysql_grant_problems([str(row[0]) for row in cursor.fetchall()])
            problems += [f"{problem} (through the role {role})" for problem in more]
            roles += nested
    return user, problems


def duckdb_problems(dbapi_connection: Any) -> list[str]:
    """What a DuckDB connection allows beyond reading its file."""
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(
            "SELECT current_setting('access_mode'), current_setting('enable_external_access'), "
            "current_setting('lock_configuration')"
        )
        access_mode, external, locked = cursor.fetchone()
    finally:
        cursor.close()
    problems = []
    if str(access_mode).lower() != "read_only":
        problems.append(f"the file is open {access_mode}, not read-only")
    if str(external).lower() not in ("false", "0"):
        problems.append("external access (files, URLs, extensions) is enabled")
    if str(locked).lower() not in ("true", "1"):
        problems.append("the configuration is not locked")
    return problems


_noted: dict[str, str] = {}
_noted_lock = threading.Lock()


def enforce(key: str, shown: str, who: str, problems: list[str], allowed: bool) -> None:
    """Refuse a connection whose role may do more than read, unless `allowed`; then note it
    for `privileged_note` (the warning)."""
    if not problems:
        return
    what = "; ".join(problems[:6]) + ("; ..." if len(problems) > 6 else "")
    if not allowed:
        raise PrivilegedRoleError(
            f"refusing to run model-written SQL on {shown} as {who}, which {what}. Connect as a "
            f"role that may only read (see docs/safety.md: `macsql load --to URL "
            f"--grant-select-to ROLE` makes one), or add ?{ALLOW_PRIVILEGED_PARAM}=1 to the "
            f"URL to accept the risk"
        )
    with _noted_lock:
        _noted.setdefault(key, f"{who}, which {what}")


def privileged_note(key: str) -> str | None:
    """What the privileged role of an overridden connection may do, once it connected."""
    with _noted_lock:
        return _noted.get(key)
