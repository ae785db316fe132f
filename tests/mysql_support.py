"""MySQL/MariaDB for the tests: the server named by `MACSQL_MYSQL_URL`, Spider databases loaded.

`scripts/ci_mariadb.sh` starts such a server and writes the variables to `.ci/mysql.env`:
`MACSQL_MYSQL_URL`, an admin user that loads and inspects, and `MACSQL_MYSQL_READER_URL`, a
user with SELECT on the loaded databases only, which the databases tests query
(`mysql_spider`) are reached as. The rule is PostgreSQL's (`tests/pg_support.py`):

- `MACSQL_MYSQL_URL` set: use it (an unreachable server is a failure, not a skip);
- unset and `CI=true`: fail loudly, since CI must test MySQL/MariaDB for real;
- unset otherwise: skip, with the reason and the command that starts a server.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from typing import Any

import pytest
from conftest import SPIDER
from sqlalchemy.engine import make_url

from macsql.database.connection import DatabaseRef, resolve_database

MYSQL_ENV = "MACSQL_MYSQL_URL"
MYSQL_READER_ENV = "MACSQL_MYSQL_READER_URL"
MYSQL_SPIDER_DATABASES = ("concert_singer", "pets_1", "car_1")
DEFAULT_READER = "macsql_reader"


def require_mysql_url() -> str:
    url = os.environ.get(MYSQL_ENV, "").strip()
    if url:
        return url
    message = (
        f"{MYSQL_ENV} is not set: MySQL/MariaDB tests need a server. Start one with "
        f"`bash scripts/ci_mariadb.sh && source .ci/mysql.env`."
    )
    if os.environ.get("CI", "").strip().lower() == "true":
        pytest.fail(f"CI=true but {message}", pytrace=False)
    pytest.skip(message)


def admin_connection(url: str, database: str | None = None) -> Any:
    """A writable PyMySQL connection for fixtures that inspect the server (never model SQL)."""
    import pymysql

    parsed = make_url(url)
    return pymysql.connect(
        host=parsed.host or "127.0.0.1",
        port=parsed.port or 3306,
        user=parsed.username or "",
        password=parsed.password or "",
        database=database,
        autocommit=True,
    )


def database_url(admin_url: str, database: str) -> str:
    return admin_url.rstrip("/") + "/" + database


def allow_privileged(url: str) -> str:
    """`url` with macsql's documented override: a user that may write is accepted."""
    from macsql.database.least_privilege import ALLOW_PRIVILEGED_PARAM

    return f"{url}{'&' if '?' in url else '?'}{ALLOW_PRIVILEGED_PARAM}=1"


@pytest.fixture(scope="session")
def mysql_admin_url() -> str:
    url = require_mysql_url()
    try:
        admin_connection(url).close()
    except Exception as exc:
        pytest.fail(f"{MYSQL_ENV} is set but the server does not answer: {exc}", pytrace=False)
    return url


@pytest.fixture(scope="session")
def mysql_reader_url(mysql_admin_url: str) -> str:
    """`MACSQL_MYSQL_READER_URL`: a user with no privilege but the loader's SELECT grants. A
    server set up without one gets one now, as scripts/ci_mariadb.sh makes it."""
    url = os.environ.get(MYSQL_READER_ENV, "").strip()
    if url:
        return url
    from macsql.database.loaders.mysql import ensure_reader_user

    host = make_url(mysql_admin_url).host or "127.0.0.1"
    ensure_reader_user(mysql_admin_url, f"{DEFAULT_READER}@{host}", DEFAULT_READER)
    reader = make_url(mysql_admin_url).set(username=DEFAULT_READER, password=DEFAULT_READER)
    return reader.render_as_string(hide_password=False)


def reader_grantee(reader_url: str) -> str:
    parsed = make_url(reader_url)
    return f"{parsed.username}@{parsed.host or '%'}"


@pytest.fixture(scope="session")
def mysql_spider(mysql_admin_url: str, mysql_reader_url: str) -> Callable[[str], DatabaseRef]:
    """`mysql_spider(db_id)` -> the DatabaseRef of a Spider database loaded into MySQL, as the
    read-only user."""
    from macsql.database.loaders.mysql import load_into_mysql

    load_into_mysql(
        SPIDER,
        mysql_admin_url,
        MYSQL_SPIDER_DATABASES,
        grant_select_to=reader_grantee(mysql_reader_url),
    )

    def get(db_id: str) -> DatabaseRef:
        assert db_id in MYSQL_SPIDER_DATABASES, f"{db_id} is not loaded into MySQL"
        return resolve_database(database_url(mysql_reader_url, db_id))

    return get


def mysql_checksum(admin_url: str) -> str:
    """A digest of what the hostile corpus could change on the server: every row of every user
    table (CHECKSUM TABLE), the tables and columns of every schema, users with password hashes,
    privileges, routines, triggers, events and a few global settings."""
    conn = admin_connection(admin_url)
    digest = hashlib.sha256()
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT table_schema, table_name FROM information_schema.tables WHERE "
                "table_schema NOT IN ('mysql', 'information_schema', 'performance_schema', "
                "'sys') AND table_type = 'BASE TABLE' ORDER BY 1, 2"
            )
            for schema, table in cur.fetchall():
                cur.execute(f"CHECKSUM TABLE `{schema}`.`{table}` EXTENDED")
                digest.update(repr(cur.fetchall()).encode())
            for query in (
                "SELECT schema_name FROM information_schema.schemata ORDER BY 1",
                "SELECT table_schema, table_name, column_name, column_type FROM "
                "information_schema.columns WHERE table_schema NOT IN ('mysql', "
                "'information_schema', 'performance_schema', 'sys') ORDER BY 1, 2, 3",
                "SELECT user, host, authentication_string FROM mysql.user ORDER BY 1, 2",
                "SELECT * FROM information_schema.user_privileges ORDER BY 1, 3",
                "SELECT * FROM information_schema.schema_privileges ORDER BY 1, 3, 4",
                "SELECT routine_schema, routine_name FROM information_schema.routines "
                "ORDER BY 1, 2",
                "SELECT trigger_schema, trigger_name FROM information_schema.triggers ORDER BY 1",
                "SELECT event_schema, event_name FROM information_schema.events ORDER BY 1, 2",
                "SELECT @@GLOBAL.max_connections, @@GLOBAL.sql_mode, @@GLOBAL.read_only, "
                "@@GLOBAL.general_log, @@GLOBAL.max_statement_time",
            ):
                cur.execute(query)
                digest.update(repr(cur.fetchall()).encode())
    finally:
        conn.close()
    return digest.hexdigest()
