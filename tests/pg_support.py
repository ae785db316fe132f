"""PostgreSQL for the tests: the server named by `MACSQL_PG_URL`, with Spider databases loaded.

`scripts/ci_postgres.sh` starts such a server and writes the variables to `.ci/pg.env`:
`MACSQL_PG_URL`, an admin role that loads and inspects databases, and `MACSQL_PG_READER_URL`,
a role that may only read them. macsql refuses to run model SQL as a role that may write, so
the databases tests query (`pg_spider`) are reached as the reader; a test that means to use a
privileged role says so with `allow_privileged(url)`. The rule for tests that need PostgreSQL:

- `MACSQL_PG_URL` set: use it (an unreachable server is a failure, not a skip);
- unset and `CI=true`: fail loudly, since CI must test PostgreSQL for real;
- unset otherwise: skip, with the reason and the command that starts a server.

`tests/conftest.py` registers the fixtures below.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.pool import NullPool

from macsql.database.connection import DatabaseRef, resolve_database
from macsql.database.least_privilege import ALLOW_PRIVILEGED_PARAM
from macsql.database.loaders.postgres import (
    DEFAULT_SPIDER_DATABASES,
    database_url,
    ensure_reader_role,
    load_spider_databases,
    psycopg_url,
)

PG_ENV = "MACSQL_PG_URL"
PG_READER_ENV = "MACSQL_PG_READER_URL"
PG_SPIDER_DATABASES: tuple[str, ...] = DEFAULT_SPIDER_DATABASES
DEFAULT_READER = "macsql_reader"


def require_pg_url() -> str:
    """The admin URL of the test server, or skip / fail by the rule above."""
    url = os.environ.get(PG_ENV, "").strip()
    if url:
        return url
    message = (
        f"{PG_ENV} is not set: PostgreSQL tests need a server. Start one with "
        f"`bash scripts/ci_postgres.sh && source .ci/pg.env`."
    )
    skip_or_fail_in_ci(message)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() == "true"


def skip_or_fail_in_ci(message: str) -> NoReturn:
    """Skip the test for `message`; under CI=true fail it, since CI must run every test."""
    if in_ci():
        pytest.fail(f"CI=true but {message}", pytrace=False)
    pytest.skip(message)


def writable_engine(url: str) -> Engine:
    """A writable engine for fixtures that inspect or prepare the server (never for model SQL)."""
    plain = psycopg_url(url).difference_update_query([ALLOW_PRIVILEGED_PARAM])
    return create_engine(plain, isolation_level="AUTOCOMMIT", poolclass=NullPool)


def allow_privileged(url: str) -> str:
    """`url` with macsql's documented override: a role that may write is accepted."""
    return make_url(url).update_query_dict({ALLOW_PRIVILEGED_PARAM: "1"}).render_as_string(False)


def reader_name(reader_url: str) -> str:
    return str(make_url(reader_url).username)


@pytest.fixture(scope="session")
def pg_admin_url() -> str:
    """`MACSQL_PG_URL`, checked to answer."""
    url = require_pg_url()
    engine = writable_engine(url)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:
        pytest.fail(f"{PG_ENV} is set but the server does not answer: {exc}", pytrace=False)
    finally:
        engine.dispose()
    return url


@pytest.fixture(scope="session")
def pg_reader_url(pg_admin_url: str) -> str:
    """`MACSQL_PG_READER_URL`: a role that may only read what it is granted. A server set up
    without one gets one now, as scripts/ci_postgres.sh makes it."""
    url = os.environ.get(PG_READER_ENV, "").strip()
    if url:
        return url
    ensure_reader_role(pg_admin_url, DEFAULT_READER, DEFAULT_READER)
    reader = psycopg_url(pg_admin_url).set(username=DEFAULT_READER, password=DEFAULT_READER)
    return reader.render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def pg_spider(
    pg_admin_url: str, pg_reader_url: str, spider_dir: Path
) -> Iterator[Callable[[str], DatabaseRef]]:
    """`pg_spider(db_id)` -> the DatabaseRef of a Spider database loaded into PostgreSQL, as
    the read-only role.

    The databases in `PG_SPIDER_DATABASES` are loaded once per session (a no-op when the CI
    script already loaded them from the same files), from the Spider data (`spider_dir`, which
    skips or fails by the data rule in conftest.py), with SELECT granted to the reader.
    """
    load_spider_databases(
        spider_dir, pg_admin_url, PG_SPIDER_DATABASES, grant_select_to=reader_name(pg_reader_url)
    )

    def get(db_id: str) -> DatabaseRef:
        assert db_id in PG_SPIDER_DATABASES, f"{db_id} is not loaded into PostgreSQL"
        return resolve_database(database_url(pg_reader_url, db_id))

    yield get


def pg_checksum(ref: DatabaseRef) -> str:
    """A digest of everything the hostile corpus could change in or around a PG database.

    Every row of every table in every user schema (ordered), the column layout, table ACLs and
    owners, roles (with password hashes), databases and their settings, extensions, large
    objects and sequences. Read as the admin role (`MACSQL_PG_URL`) when it is known.
    """
    admin = os.environ.get(PG_ENV, "").strip()
    database = make_url(ref.url).database or "postgres"
    engine = writable_engine(database_url(admin, database) if admin else ref.url)
    digest = hashlib.sha256()
    try:
        with engine.connect() as conn:
            superuser = conn.execute(
                text("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
            ).scalar()
            tables = conn.execute(
                text(
                    "SELECT table_schema, table_name FROM information_schema.tables "
                    "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') "
                    "ORDER BY 1, 2"
                )
            ).all()
            for schema, table in tables:
                qualified = f'"{schema}"."{table}"'
                rows = conn.execute(
                    text(f"SELECT t::text FROM {qualified} AS t ORDER BY 1")
                ).scalars()
                digest.update(f"{schema}.{table}\n".encode())
                for row in rows:
                    digest.update(row.encode() + b"\n")
            for query in (
                "SELECT table_schema, table_name, column_name, data_type, ordinal_position "
                "FROM information_schema.columns WHERE table_schema NOT IN "
                "('pg_catalog', 'information_schema') ORDER BY 1, 2, 5",
                "SELECT c.relname, c.relkind, c.relowner::regrole::text, "
                "coalesce(c.relacl::text, '') FROM pg_class c JOIN pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname NOT IN ('pg_catalog', "
                "'information_schema', 'pg_toast') ORDER BY 1",
                # pg_authid (with password hashes) needs a superuser, as the CI role is
                "SELECT rolname, rolsuper, rolcanlogin, coalesce(rolpassword, '') "
                "FROM pg_authid ORDER BY 1"
                if superuser
                else "SELECT rolname, rolsuper, rolcanlogin FROM pg_roles ORDER BY 1",
                "SELECT datname, coalesce(datacl::text, ''), "
                "coalesce(shobj_description(oid, 'pg_database'), '') FROM pg_database ORDER BY 1",
                "SELECT coalesce(setdatabase::text, ''), coalesce(setrole::text, ''), "
                "setconfig::text FROM pg_db_role_setting ORDER BY 1, 2",
                "SELECT extname, extversion FROM pg_extension ORDER BY 1",
                "SELECT count(*)::text FROM pg_largeobject_metadata",
                "SELECT nspname FROM pg_namespace ORDER BY 1",
                "SELECT schemaname || '.' || sequencename || '=' || coalesce(last_value, 0) "
                "FROM pg_sequences ORDER BY 1",
            ):
                for row in conn.execute(text(query)):
                    digest.update(repr(tuple(row)).encode() + b"\n")
    finally:
        engine.dispose()
    return digest.hexdigest()
