"""`macsql serve`: the pipelines on a self-hosted LangGraph-SDK-compatible server (Aegra) backed
by PostgreSQL. See `macsql.serving.engine` and docs/serving.md."""

from __future__ import annotations

import argparse
import os
import sys

from macsql.cli.exit_codes import EXIT_OK, EXIT_USAGE
from macsql.cli.numbers import number_in

DATABASE_ENV = ("MACSQL_SERVER_DB_URL", "DATABASE_URL")


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    from macsql.serving.engine import DEFAULT_PORT, ServeOptions

    defaults = ServeOptions(database_url="")
    parser.add_argument(
        "--database-url",
        default=None,
        help="PostgreSQL URL for threads, checkpoints, runs and the store (created if missing; "
        f"default ${DATABASE_ENV[0]}, then ${DATABASE_ENV[1]})",
    )
    parser.add_argument("--host", default=defaults.host, help="address to bind (127.0.0.1)")
    parser.add_argument(
        "--port", type=number_in(int, 1, 65535), default=DEFAULT_PORT, help=f"({DEFAULT_PORT})"
    )
    parser.add_argument(
        "--workers",
        type=number_in(int, 1),
        default=defaults.workers,
        help="worker processes on the port (1)",
    )
    parser.add_argument(
        "--auth",
        default=None,
        metavar="token|FILE.py:NAME|MODULE:NAME",
        help="'token': a bearer token from $MACSQL_SERVER_TOKEN; or your langgraph_sdk.Auth "
        "handler. Needed to bind anything but loopback",
    )
    parser.add_argument(
        "--no-auth",
        action="store_true",
        help="serve a non-loopback address without auth (a proxy in front authenticates)",
    )
    parser.add_argument(
        "--db-pool",
        type=number_in(int, 1),
        default=defaults.db_pool,
        help="database connections per worker for requests; a client joining a run holds one "
        f"for the run's length, so at least the runs in flight per worker ({defaults.db_pool})",
    )
    parser.add_argument(
        "--threads",
        type=number_in(int, 1),
        default=defaults.threads,
        help=f"threads per worker for the graphs' nodes ({defaults.threads})",
    )
    parser.add_argument("--log-level", default=defaults.log_level, help="(warning)")
    parser.add_argument("--access-log", action="store_true", help="log every request")


def serve_main(args: argparse.Namespace) -> int:
    from macsql.serving.engine import ServeError, ServeOptions, serve

    url = args.database_url or next((os.environ[v] for v in DATABASE_ENV if os.environ.get(v)), "")
    if not url:
        print(
            "macsql: error: the server keeps its state in PostgreSQL: pass --database-url "
            f"or set {DATABASE_ENV[0]}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    options = ServeOptions(
        database_url=url,
        host=args.host,
        port=args.port,
        workers=args.workers,
        auth=args.auth,
        allow_anonymous=args.no_auth,
        db_pool=args.db_pool,
        threads=args.threads,
        log_level=args.log_level,
        access_log=args.access_log,
    )
    try:
        serve(options)
    except ServeError as exc:
        print(f"macsql: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK
