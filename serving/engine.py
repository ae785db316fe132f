"""`macsql serve`: the four pipelines on Aegra, a self-hosted LangGraph-SDK-compatible server,
with threads, checkpoints, runs and the store in one PostgreSQL database.

Why Aegra (0.6, the last release for Python 3.11): it installs from PyPI, runs offline with no
licence key, keeps everything in PostgreSQL, and speaks the LangGraph SDK's protocol. The stock
`langgraph-api` installs only with its in-memory runtime; its PostgreSQL runtime ships in the
licensed image. `docs/serving.md` has the comparison.

What one command does, in order:

1. the engine's config: every pipeline of the registry, by the file and name Aegra loads it from
   (`macsql.serving.graphs`), and the auth handler when one is asked for;
2. the database: created if missing, then Aegra's migrations, the checkpointer's and the
   store's tables and one assistant per graph, once, under a PostgreSQL advisory lock, so that
   several `macsql serve` processes (or machines) starting together on one database do not
   race each other's DDL (each worker would otherwise run them at its own start);
3. the graphs imported and checked here, so that a broken one stops the command, not a request;
4. uvicorn with N worker processes on one port, loopback by default. A non-loopback address
   needs an auth handler, or `allow_anonymous` when something in front authenticates.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import ipaddress
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from macsql.graph.registry import PIPELINES
from macsql.serving.graphs import attribute_name, served_graph

DEFAULT_PORT = 2024
"""`langgraph dev`'s port too, so a client written against one finds the other."""
APP = "macsql.serving.asgi:app"
SERVED_GRAPHS = "macsql.serving.graphs"
TOKEN_AUTH = "macsql.serving.token_auth:auth"
TOKEN_ENV = "MACSQL_SERVER_TOKEN"
THREADS_ENV = "MACSQL_SERVER_THREADS"
PREPARE_LOCK = "macsql serve: prepare the database"
"""Hashed into the key of the advisory lock that serialises the one-time setup."""
SETUP_LOCK_TIMEOUT_S = 300.0
KEEP_ALIVE_S = 65


class ServeError(RuntimeError):
    """A setting that stops the server from starting; the message says which and why."""


@dataclass
class ServeOptions:
    database_url: str
    """A PostgreSQL URL (`postgresql://` or SQLAlchemy's `postgresql+psycopg://`)."""
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    workers: int = 1
    """Worker processes on the one port; each runs the runs it accepts."""
    auth: str | None = None
    """`token` (a bearer token from MACSQL_SERVER_TOKEN), or an Aegra/LangGraph auth handler
    as `path/to/file.py:auth` or `module:auth`."""
    allow_anonymous: bool = False
    """Serve a non-loopback address with no auth (something in front must authenticate)."""
    db_pool: int = 40
    """SQLAlchemy connections per worker. Aegra 0.6 keeps a request's session, and so one of
    these connections, while a client joins a run: size it to the runs a worker's clients
    wait on at once."""
    graph_pool: int = 10
    """Connections per worker shared by the checkpointer and the store."""
    threads: int = 64
    """Threads per worker for the graphs' sync nodes (the event loop's default executor,
    otherwise min(32, cores + 4): six runs at a time on two cores)."""
    log_level: str = "warning"
    access_log: bool = False


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def graph_paths() -> dict[str, str]:
    """Every pipeline as the engine loads it, `file.py:name`: from `macsql.serving.graphs`,
    which serves the registry's graphs with the server's choices made on them."""
    spec = importlib.util.find_spec(SERVED_GRAPHS)
    if spec is None or not spec.origin:
        raise ServeError(f"cannot find {SERVED_GRAPHS}")
    return {name: f"{spec.origin}:{attribute_name(name)}" for name in PIPELINES}


def auth_target(auth: str | None) -> str | None:
    if not auth:
        return None
    if auth == "token":
        if not os.environ.get(TOKEN_ENV, "").strip():
            raise ServeError(f"--auth token needs the token in {TOKEN_ENV}")
        return TOKEN_AUTH
    return auth


def engine_config(auth: str | None) -> dict[str, Any]:
    """Aegra's config (its `aegra.json`)."""
    config: dict[str, Any] = {"graphs": graph_paths()}
    target = auth_target(auth)
    if target:
        config["auth"] = {"path": target}
    return config


def engine_environment(options: ServeOptions, config_path: Path) -> dict[str, str]:
    """Aegra reads its settings from the environment, in every worker."""
    return {
        "DATABASE_URL": libpq_url(options.database_url),
        "AEGRA_CONFIG": str(config_path),
        "HOST": options.host,
        "PORT": str(options.port),
        "LOG_LEVEL": options.log_level.upper(),
        "SQLALCHEMY_POOL_SIZE": str(options.db_pool),
        "SQLALCHEMY_MAX_OVERFLOW": str(max(1, options.db_pool // 4)),
        "LANGGRAPH_MIN_POOL_SIZE": "1",
        "LANGGRAPH_MAX_POOL_SIZE": str(options.graph_pool),
        THREADS_ENV: str(options.threads),
    }


def libpq_url(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.split("+", 1)[0] not in ("postgresql", "postgres"):
        raise ServeError(f"the server needs a PostgreSQL URL (postgresql://...), not {url!r}")
    return f"postgresql://{rest}"


def check_options(options: ServeOptions) -> None:
    if options.workers < 1:
        raise ServeError("--workers must be at least 1")
    if options.db_pool < 1 or options.graph_pool < 1 or options.threads < 1:
        raise ServeError("pool sizes and threads must be at least 1")
    if not 0 < options.port < 65536:
        raise ServeError(f"--port must be a TCP port, not {options.port}")
    libpq_url(options.database_url)
    if not is_loopback(options.host) and not options.auth and not options.allow_anonymous:
        raise ServeError(
            f"serving {options.host} with no auth would let anyone who reaches it run queries "
            f"on your databases: pass --auth token (with {TOKEN_ENV} set) or --auth FILE.py:auth, "
            "or --no-auth when a proxy in front authenticates"
        )


def load_auth(target: str) -> Any:
    """The handler at `target`, loaded as Aegra loads it. Aegra falls back to anonymous access
    when its handler does not load, so a broken one must stop the command here."""
    from langgraph_sdk import Auth

    module_path, sep, name = target.rpartition(":")
    if not sep:
        raise ServeError(f"--auth takes FILE.py:NAME or MODULE:NAME, not {target!r}")
    try:
        if module_path.endswith(".py") or module_path.startswith("."):
            path = Path(module_path).resolve()
            spec = importlib.util.spec_from_file_location(f"macsql_auth_{path.stem}", path)
            if spec is None or spec.loader is None:
                raise ServeError(f"cannot load {path}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_path)
    except (ImportError, OSError) as exc:
        raise ServeError(f"cannot load the auth handler {target}: {exc}") from exc
    handler = getattr(module, name, None)
    if not isinstance(handler, Auth):
        raise ServeError(f"{target} is not a langgraph_sdk.Auth instance")
    if handler._authenticate_handler is None:
        raise ServeError(f"{target} has no @auth.authenticate handler")
    return handler


def absolute_auth(target: str | None) -> str | None:
    """A file path made absolute: the engine resolves relative ones from its config's folder."""
    if not target:
        return None
    module_path, sep, name = target.rpartition(":")
    if sep and (module_path.endswith(".py") or module_path.startswith(".")):
        return f"{Path(module_path).resolve()}:{name}"
    return target


def ensure_database(url: str, attempts: int = 5) -> None:
    """Create the database named in `url` when the server has none by that name. Processes
    starting together may all try: whichever way PostgreSQL refuses the others (a duplicate
    name, a busy template), the database is then there."""
    import psycopg
    from psycopg import sql

    info = psycopg.conninfo.conninfo_to_dict(url)
    name = str(info.get("dbname") or "")
    admin = psycopg.conninfo.make_conninfo(url, dbname="postgres")
    refusal: Exception | None = None
    for _ in range(attempts):
        try:
            psycopg.connect(url, connect_timeout=10).close()
            return
        except psycopg.OperationalError as exc:
            if "does not exist" not in str(exc):
                raise ServeError(f"cannot reach PostgreSQL: {exc}".strip()) from exc
        try:
            with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            return
        except psycopg.Error as exc:  # made by another process meanwhile? look again
            refusal = exc
            time.sleep(0.2)
    raise ServeError(f"database {name!r} does not exist and cannot be created: {refusal}")


@contextmanager
def setup_lock(url: str, timeout: float = SETUP_LOCK_TIMEOUT_S) -> Iterator[None]:
    """Held while one process prepares the database; released when its connection closes.

    Taken by polling `pg_try_advisory_lock`, never by waiting in `pg_advisory_lock`: the
    checkpointer's setup builds an index CONCURRENTLY, which waits for every transaction open at
    the time, and a process blocked inside `pg_advisory_lock` is one; the two would wait for each
    other for ever."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        give_up = time.monotonic() + timeout
        while not conn.execute(
            "SELECT pg_try_advisory_lock(hashtext(%s))", (PREPARE_LOCK,)
        ).fetchone()[0]:  # type: ignore[index]
            if time.monotonic() > give_up:
                raise ServeError(
                    f"another process has been preparing the database for {timeout:g}s"
                )
            time.sleep(0.2)
        yield


async def _prepare_engine() -> None:
    from aegra_api.core.database import db_manager
    from aegra_api.core.migrations import run_migrations_async
    from aegra_api.services.langgraph_service import get_langgraph_service

    await run_migrations_async()
    await db_manager.initialize()  # the checkpointer's and the store's tables
    try:
        await get_langgraph_service().initialize()  # one assistant per graph
    finally:
        await db_manager.close()


def prepare_database(url: str) -> None:
    """Migrations, tables and assistants, once, whoever else starts at the same time."""
    ensure_database(url)
    with setup_lock(url):
        asyncio.run(_prepare_engine())


def write_engine_config(options: ServeOptions) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="macsql-serve-"))
    path = folder / "aegra.json"
    path.write_text(json.dumps(engine_config(absolute_auth(options.auth)), indent=2))
    return path


def serve(options: ServeOptions) -> None:
    """Prepare everything, then serve until stopped (SIGINT or SIGTERM)."""
    check_options(options)
    try:
        import aegra_api  # noqa: F401
        import uvicorn
    except ImportError as exc:
        raise ServeError(
            f"the server needs the 'serve' extra: pip install 'macsql[serve]' ({exc})"
        ) from exc
    target = auth_target(absolute_auth(options.auth))
    if target:
        load_auth(target)
    config_path = write_engine_config(options)
    try:
        # Aegra reads its settings when first imported, in this process and in every worker.
        os.environ.update(engine_environment(options, config_path))
        for name in PIPELINES:
            served_graph(name)
        prepare_database(libpq_url(options.database_url))
        uvicorn.run(
            APP,
            host=options.host,
            port=options.port,
            workers=options.workers,
            log_level=options.log_level.lower(),
            access_log=options.access_log,
            timeout_graceful_shutdown=10,
            # Longer than a client keeps an idle connection (httpx: 5 s), so that the client,
            # not the server, ends it: a server closing it as a request goes out looks like a
            # lost server to the client.
            timeout_keep_alive=KEEP_ALIVE_S,
        )
    finally:
        shutil.rmtree(config_path.parent, ignore_errors=True)
