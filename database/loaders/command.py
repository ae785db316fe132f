"""`macsql load`: copy Spider (or any) SQLite databases into PostgreSQL, MySQL/MariaDB or DuckDB.

    python -m macsql.database.loaders.command --admin-url postgresql+psycopg://u:p@host/postgres \
        --spider-dir ../shared/data/spider concert_singer pets_1
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence

from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from macsql.database.loaders.plan import LoaderError, LoadReport
from macsql.database.loaders.postgres import (
    DEFAULT_SPIDER_DATABASES,
    copy_sqlite_to_postgres,
    ensure_reader_role,
    load_spider_databases,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="macsql load",
        description="Copy Spider (or any) SQLite databases into PostgreSQL, MySQL/MariaDB or "
        "DuckDB, one database each, and print where each was written.",
    )
    parser.add_argument(
        "db_ids",
        nargs="*",
        help=f"Spider database ids (default: {' '.join(DEFAULT_SPIDER_DATABASES)})",
    )
    parser.add_argument(
        "--admin-url",
        default=os.environ.get("MACSQL_PG_URL"),
        help="SQLAlchemy URL of the server's maintenance database, with a role that may "
        "create databases (default: $MACSQL_PG_URL)",
    )
    parser.add_argument(
        "--to",
        metavar="URL",
        help="where to load: a PostgreSQL URL (as --admin-url); mysql://user:pw@host/ or "
        "mariadb://... (one MySQL database each); duckdb:///DIR (one DIR/<db_id>.duckdb file "
        "each), duckdb:///DIR/{db_id}.duckdb, or duckdb:///FILE.duckdb for one database",
    )
    parser.add_argument(
        "--spider-dir",
        default=os.environ.get("MACSQL_SPIDER_DIR", "../shared/data/spider"),
        help="Spider's folder, holding database/<id>/<id>.sqlite (default: $MACSQL_SPIDER_DIR "
        "or ../shared/data/spider)",
    )
    parser.add_argument(
        "--sqlite",
        action="append",
        default=[],
        metavar="PATH",
        help="also load this SQLite file (database named after the file); repeatable",
    )
    parser.add_argument("--replace", action="store_true", help="drop and reload existing ones")
    parser.add_argument(
        "--grant-select-to",
        metavar="ROLE",
        help="role given read access (CONNECT, USAGE, SELECT), created as a login role with no "
        "other privilege when it does not exist: the role macsql should connect as",
    )
    parser.add_argument(
        "--reader-password",
        default=os.environ.get("MACSQL_READER_PASSWORD"),
        help="password of a --grant-select-to role this command creates "
        "(default: $MACSQL_READER_PASSWORD)",
    )
    parser.add_argument(
        "--keep-numeric-text",
        action="store_true",
        help="keep numbers stored as text as text columns (default: load them as numbers)",
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="print every warning")
    return parser


def main_load(argv: Sequence[str] | None = None) -> int:
    """Entry point of `macsql load` (and `python -m macsql.database.loaders.postgres`).

    Returns the process exit status: 0 on success, 2 on a usage or loading error. Any failure
    of the load (a server that is down, a wrong password, a driver's error) is one line on
    stderr, whichever the backend; `--verbose` adds the traceback.
    """
    args = build_parser().parse_args(argv)
    try:
        return _main_load(args)
    except Exception as exc:  # each driver has its own error classes; none deserves a traceback
        if args.verbose:
            traceback.print_exc()
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2


def _one_line(exc: BaseException) -> str:
    from macsql.database.connection_errors import describe_database_error, first_line

    if isinstance(exc, LoaderError):
        return first_line(str(exc), limit=500)
    return f"loading failed: {describe_database_error(exc)} ({type(exc).__name__})"


def _main_load(args: argparse.Namespace) -> int:
    db_ids = args.db_ids or ([] if args.sqlite else list(DEFAULT_SPIDER_DATABASES))
    backend = make_url(args.to).get_backend_name() if args.to else "postgresql"
    if backend in ("duckdb", "mysql", "mariadb"):
        return _main_other(args, db_ids, backend)
    if backend != "postgresql":
        print(
            f"error: cannot load into {backend}: --to takes a PostgreSQL, MySQL/MariaDB or "
            "DuckDB URL",
            file=sys.stderr,
        )
        return 2
    if args.to:
        args.admin_url = args.to
    if not args.admin_url:
        print("error: no --to, no --admin-url and MACSQL_PG_URL is not set", file=sys.stderr)
        return 2
    try:
        if args.grant_select_to and ensure_reader_role(
            args.admin_url, args.grant_select_to, args.reader_password
        ):
            print(f"created the read-only role {args.grant_select_to}")
        reports = load_spider_databases(
            args.spider_dir,
            args.admin_url,
            db_ids,
            replace=args.replace,
            grant_select_to=args.grant_select_to,
            numeric_text=not args.keep_numeric_text,
        )
        reports += [
            copy_sqlite_to_postgres(
                path,
                args.admin_url,
                replace=args.replace,
                grant_select_to=args.grant_select_to,
                numeric_text=not args.keep_numeric_text,
            )
            for path in args.sqlite
        ]
    except (LoaderError, DBAPIError) as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    _print_reports(reports, args.verbose)
    return 0


def _print_reports(reports: list[LoadReport], verbose: bool) -> None:
    for report in reports:
        print(report.summary())
        if verbose:
            for warning in report.warnings:
                print(f"  warning: {warning}")


def _main_other(args: argparse.Namespace, db_ids: list[str], backend: str) -> int:
    """`--to` a DuckDB or MySQL/MariaDB URL: their loaders, imported only when asked for."""
    from macsql.database.drivers import check_driver

    problem = check_driver(make_url(args.to))
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        if backend == "duckdb":
            if args.grant_select_to:
                print(
                    "error: --grant-select-to needs a backend with roles; DuckDB has none",
                    file=sys.stderr,
                )
                return 2
            from macsql.database.loaders.duckdb import load_into_duckdb

            reports = load_into_duckdb(
                args.spider_dir,
                args.to,
                db_ids,
                args.sqlite,
                replace=args.replace,
                numeric_text=not args.keep_numeric_text,
            )
        else:
            from macsql.database.loaders.mysql import ensure_reader_user, load_into_mysql

            if args.grant_select_to and ensure_reader_user(
                args.to, args.grant_select_to, args.reader_password
            ):
                print(f"created the read-only user {args.grant_select_to}")
            reports = load_into_mysql(
                args.spider_dir,
                args.to,
                db_ids,
                args.sqlite,
                replace=args.replace,
                grant_select_to=args.grant_select_to,
                numeric_text=not args.keep_numeric_text,
            )
    except LoaderError as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    _print_reports(reports, args.verbose)
    return 0


if __name__ == "__main__":
    sys.exit(main_load())
