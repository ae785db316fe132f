"""The allow-list guard on a real PostgreSQL server, as a SELECT-only role and as the superuser.

A copy of Spider's concert_singer is loaded into a database of this test's own, with a BRIN and
a GIN index and the `tablefunc` extension (crosstab), and with `--grant-select-to` a fresh
role `guard_ro_<random>`. Each dangerous statement of issue 13 is then run twice through
`execute_sql`: with the guard (refused), and with the guard bypassed at the test level, to show
what the engine layer alone does: a SELECT-only role is stopped by privileges except for
crosstab, through which it still terminates another of its sessions; the superuser is stopped
by nothing but the READ ONLY transaction, which does not stop index maintenance. That is why
macsql refuses, at connect, a role that may do more than read (issue 26): the superuser and the
owner are reached here only through the documented override, `?macsql_allow_privileged=1`.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from unittest import mock

import pytest
from conftest import spider_db
from pg_support import allow_privileged, writable_engine
from sqlalchemy import create_engine, text

from macsql.database import execution, relation_inventory
from macsql.database.connection import DatabaseRef, check_database, get_engine, resolve_database
from macsql.database.connection_errors import DatabaseUnavailableError
from macsql.database.execution import Outcome, execute_sql
from macsql.database.guard import GuardKind, GuardVerdict
from macsql.database.loaders.postgres import copy_sqlite_to_postgres, database_url, psycopg_url
from macsql.database.relation_inventory import clear_inventories, take_privilege_warning

ALLOW_ALL = GuardVerdict(True, "ok")  # patched in to bypass the guard

pytestmark = pytest.mark.postgres

CATALOGS = ("pg_authid", "pg_hba_file_rules", "pg_file_settings", "pg_shadow")
MAINTENANCE = (
    "SELECT brin_summarize_new_values('singer_age_brin')",
    "SELECT brin_summarize_range('singer_age_brin', 0)",
    "SELECT brin_desummarize_range('singer_age_brin', 0)",
    "SELECT gin_clean_pending_list('singer_name_gin')",
)


@dataclass
class Server:
    admin: DatabaseRef
    reader: DatabaseRef
    owner: DatabaseRef
    reader_url: str
    admin_refused: DatabaseRef
    owner_refused: DatabaseRef
    files_refused: DatabaseRef


@pytest.fixture(scope="module")
def server(pg_admin_url: str) -> Iterator[Server]:
    suffix = secrets.token_hex(4)
    name, reader, owner = f"guard_db_{suffix}", f"guard_ro_{suffix}", f"guard_own_{suffix}"
    files = f"guard_files_{suffix}"
    password = secrets.token_hex(12)
    admin = writable_engine(pg_admin_url)
    with admin.connect() as conn:
        for role in (reader, owner, files):
            conn.execute(text(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'"))
        conn.execute(text(f"GRANT pg_read_server_files TO {files}"))
    copy_sqlite_to_postgres(spider_db("concert_singer"), pg_admin_url, name, grant_select_to=reader)
    url = database_url(pg_admin_url, name)
    db = writable_engine(url)
    with db.connect() as conn:
        conn.execute(text("CREATE EXTENSION IF NOT EXISTS tablefunc"))
        conn.execute(text("CREATE EXTENSION IF NOT EXISTS pg_trgm"))
        conn.execute(text("CREATE INDEX singer_age_brin ON singer USING brin (age)"))
        conn.execute(
            text(
                "CREATE INDEX singer_name_gin ON singer USING gin (name gin_trgm_ops) "
                "WITH (fastupdate = on)"
            )
        )
        # a user function with a built-in's name, picked by overload resolution for integers
        conn.execute(
            text(
                "CREATE FUNCTION public.lower(integer) RETURNS text "
                "LANGUAGE sql AS $$ SELECT 'shadowed' $$"
            )
        )
        for role in (owner, files):
            conn.execute(text(f"GRANT CONNECT ON DATABASE {name} TO {role}"))
            conn.execute(text(f"GRANT USAGE ON SCHEMA public TO {role}"))
        conn.execute(text(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {files}"))
        conn.execute(text(f"ALTER TABLE stadium OWNER TO {owner}"))
    db.dispose()
    reader_url = psycopg_url(url).set(username=reader, password=password).render_as_string(False)
    owner_url = psycopg_url(url).set(username=owner, password=password).render_as_string(False)
    files_url = psycopg_url(url).set(username=files, password=password).render_as_string(False)
    refs = Server(
        resolve_database(allow_privileged(url)),
        resolve_database(reader_url),
        resolve_database(allow_privileged(owner_url)),
        reader_url,
        resolve_database(url),
        resolve_database(owner_url),
        resolve_database(files_url),
    )
    clear_inventories()
    try:
        yield refs
    finally:
        for ref in (refs.admin, refs.reader, refs.owner, refs.admin_refused):
            get_engine(ref).dispose()
        for ref in (refs.owner_refused, refs.files_refused):
            get_engine(ref).dispose()
        clear_inventories()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            for role in (reader, owner, files):
                conn.execute(text(f"DROP ROLE IF EXISTS {role}"))
        admin.dispose()


def bypassed(ref: DatabaseRef, sql: str) -> execution.ExecutionResult:
    """`execute_sql` with the guard switched off: only the engine's layers remain."""
    with mock.patch.object(
        relation_inventory, "guard_verdict", return_value=GuardVerdict(True, "ok")
    ):
        return execute_sql(ref, sql, timeout=10)


@pytest.mark.parametrize("role", ["reader", "admin"])
def test_the_guard_refuses_every_case_for_every_role(server: Server, role: str) -> None:
    ref = getattr(server, role)
    cases = [
        *MAINTENANCE,
        "SELECT * FROM crosstab('SELECT 1::text, 1::text, 1::text') AS t(r text, c text)",
        "SELECT * FROM connectby('singer', 'singer_id', 'age', '1', 0) AS t(a text, b text, c int)",
        "SELECT * FROM xpath_table('singer_id', 'name', 'singer', '/a', 'true') "
        "AS t(k text, a text)",
        *(f"SELECT * FROM {catalog}" for catalog in CATALOGS),
        "SELECT pid, query FROM pg_stat_activity",
    ]
    for sql in cases:
        result = execute_sql(ref, sql, timeout=10)
        assert result.outcome == Outcome.REJECTED, (sql, result)
        assert result.error_class == "GuardRejection"
    ok = execute_sql(ref, "SELECT count(*) FROM singer JOIN stadium ON true")
    assert ok.outcome == Outcome.OK, ok.error


def test_engine_alone_stops_the_select_only_role_from_maintenance_and_catalogs(
    server: Server,
) -> None:
    for sql in MAINTENANCE:
        result = bypassed(server.reader, sql)
        assert not result.outcome.ran, (sql, result)
        assert "must be owner" in (result.error or ""), result.error
    for catalog in CATALOGS:
        result = bypassed(server.reader, f"SELECT * FROM {catalog}")
        assert not result.outcome.ran, (catalog, result)
        assert "permission denied" in (result.error or "")


def test_engine_alone_lets_the_superuser_run_index_maintenance_in_read_only(
    server: Server,
) -> None:
    # The gap the allow-list closes: READ ONLY does not stop these for the owner/superuser.
    result = bypassed(server.admin, "SELECT brin_summarize_new_values('singer_age_brin')")
    assert result.outcome == Outcome.OK, result.error
    hashes = bypassed(server.admin, "SELECT rolname, rolpassword FROM pg_authid")
    assert hashes.outcome == Outcome.OK and hashes.rows


def test_crosstab_kills_a_session_of_the_select_only_role_unless_the_guard_refuses(
    server: Server,
) -> None:
    def victim_session() -> tuple[object, int]:
        engine = create_engine(server.reader_url)
        conn = engine.connect()
        pid = conn.execute(text("SELECT pg_backend_pid()")).scalar()
        assert isinstance(pid, int)
        return (engine, conn), pid

    def alive(handle: object) -> bool:
        _, conn = handle  # type: ignore[misc]
        try:
            conn.execute(text("SELECT 1"))
            return True
        except Exception:
            return False

    kill = (
        "SELECT * FROM crosstab('SELECT 1::text, 1::text, pg_terminate_backend({pid})::text') "
        "AS t(r text, c text)"
    )
    handle, pid = victim_session()
    try:
        refused = execute_sql(server.reader, kill.format(pid=pid))
        assert refused.outcome == Outcome.REJECTED
        assert refused.error and "crosstab()" in refused.error
        assert alive(handle)
        ran = bypassed(server.reader, kill.format(pid=pid))
        assert ran.outcome == Outcome.OK, ran.error  # READ ONLY and SELECT-only did not stop it
        assert not alive(handle)
    finally:
        engine, conn = handle  # type: ignore[misc]
        conn.invalidate()
        engine.dispose()


@pytest.mark.parametrize(
    ("role", "what"),
    [
        ("admin_refused", "is a SUPERUSER"),
        ("owner_refused", "owns or may change 1 relation(s)"),
        ("files_refused", "is a member of pg_read_server_files"),
    ],
)
def test_a_role_that_may_do_more_than_read_is_refused_at_connect(
    server: Server, role: str, what: str
) -> None:
    ref = getattr(server, role)
    result = execute_sql(ref, "SELECT count(*) FROM singer")
    assert result.outcome == Outcome.DATABASE_ERROR, result
    assert result.error and what in result.error and "macsql_allow_privileged=1" in result.error
    with pytest.raises(DatabaseUnavailableError, match="refusing to run model-written SQL"):
        check_database(ref)
    assert get_engine(ref).pool.checkedout() == 0


def test_privilege_warning_once_when_allowed_never_for_select_only(server: Server) -> None:
    clear_inventories()
    assert execute_sql(server.admin, "SELECT count(*) FROM singer").rows == [(6,)]
    first = take_privilege_warning(server.admin)
    assert first and "SUPERUSER" in first and "--grant-select-to ROLE" in first
    assert take_privilege_warning(server.admin) is None  # once
    assert execute_sql(server.owner, "SELECT count(*) FROM stadium").outcome == Outcome.OK
    owner = take_privilege_warning(server.owner)
    assert owner and "owns or may change 1 relation(s)" in owner
    assert execute_sql(server.reader, "SELECT count(*) FROM singer").rows == [(6,)]
    assert take_privilege_warning(server.reader) is None
    assert take_privilege_warning(resolve_database(str(spider_db("concert_singer")))) is None


def test_select_only_role_sees_its_tables_and_information_views(server: Server) -> None:
    result = execute_sql(
        server.reader,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
    )
    assert result.outcome == Outcome.OK, result.error
    assert [row[0] for row in result.rows] == ["concert", "singer", "singer_in_concert", "stadium"]
    unknown = execute_sql(server.reader, "SELECT * FROM singers")
    assert unknown.outcome == Outcome.UNKNOWN_OBJECT
    assert unknown.error and unknown.error.startswith("no such table: singers")
    assert GuardKind.UNKNOWN_RELATION.value == "unknown_relation"


def test_a_user_function_shadowing_a_built_in_is_refused(server: Server) -> None:
    refused = execute_sql(server.reader, "SELECT lower(1)")
    assert refused.outcome == Outcome.REJECTED
    assert refused.error and "defined in the database's own schemas" in refused.error
    # without the guard, PostgreSQL calls the user's function, not the built-in
    assert bypassed(server.reader, "SELECT lower(1)").rows == [("shadowed",)]
    widened = execute_sql(server.reader, "SELECT lower(1)", allowed_functions=("lower",))
    assert widened.rows == [("shadowed",)]
