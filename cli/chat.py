"""`macsql chat`: a conversation with a database, kept on a thread that can be resumed later.

Each line is a question; follow-ups ("and in 2019?") are understood from the earlier turns,
which the checkpointer keeps (a SQLite file by default, or PostgreSQL with `--state-url`), or,
with `--server URL`, a macsql server (`macsql serve`), whose database keeps the thread.
`/sql` and `/rows` show the last answer's SQL and rows, `/reset` starts a new thread, `/quit`,
Ctrl-C or end of input leave.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid
from contextlib import ExitStack
from typing import Any

from rich.console import Console
from rich.table import Table

from macsql.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    add_model_arguments,
    check_models,
    context_from_args,
    enable_cache,
    resolve_db_argument,
)
from macsql.database.cache_paths import cache_root
from macsql.database.demo import DEMO_NAME, ensure_demo_database
from macsql.graph.persistence import open_persistence
from macsql.graph.registry import get_builder, pipeline_names
from macsql.llm.models import ModelConfigError

HELP = "/sql last SQL · /rows last rows · /reset new thread · /quit"
SERVER_TOKEN_ENV = "MACSQL_SERVER_TOKEN"


def add_chat_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", required=True, help="a SQLite file, a URL, or 'demo'")
    parser.add_argument("--pipeline", default="macsql", choices=pipeline_names())
    parser.add_argument("--thread", default=None, help="resume this conversation (thread id)")
    parser.add_argument(
        "--state-url",
        default=None,
        help="where conversations are kept: a SQLite file (default: chat.sqlite in macsql's "
        "cache directory) or a postgresql:// URL",
    )
    parser.add_argument(
        "--server",
        default=None,
        metavar="URL",
        help="run on this macsql server (`macsql serve`); the thread is kept in its database "
        "(the model settings are sent with each run; the database must be reachable from it)",
    )
    parser.add_argument(
        "--server-token",
        default=os.environ.get(SERVER_TOKEN_ENV) or None,
        help=f"bearer token of a server started with --auth token (default ${SERVER_TOKEN_ENV})",
    )
    parser.add_argument(
        "--no-answer", action="store_true", help="show SQL and rows only, no answer in words"
    )
    add_model_arguments(parser)


def chat_main(args: argparse.Namespace) -> int:
    try:
        changes = [] if args.no_answer else ["answer=true"]
        args.context_fields = changes + list(getattr(args, "context_fields", None) or [])
        context = context_from_args(args)
        if args.server:
            if args.state_url or args.cache:
                raise UsageError("--state-url and --cache are the server's business with --server")
            # The server opens the database and builds the models; it reports what fails.
            db = str(ensure_demo_database()) if args.db == DEMO_NAME else args.db
        else:
            db = resolve_db_argument(args.db)
            enable_cache(args)
            check_models(context)
    except (UsageError, ModelConfigError) as exc:
        print(f"macsql: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    console = Console(highlight=False, soft_wrap=True)
    if args.server:
        return _server_chat(args, db, context, console)
    state_url = args.state_url or str(cache_root() / "chat.sqlite")
    with ExitStack() as stack:
        try:
            persistence = stack.enter_context(open_persistence(state_url))
        except Exception as exc:  # an unreachable server, a bad URL, an unwritable file
            print(f"macsql: error: cannot open the conversation state: {exc}", file=sys.stderr)
            return EXIT_USAGE
        graph = get_builder(args.pipeline).compile(
            checkpointer=persistence.checkpointer, store=persistence.store
        )
        _loop(graph, db, context, args.thread or _new_thread(), console)
    return EXIT_OK


def _new_thread() -> str:
    return uuid.uuid4().hex[:12]


def _server_chat(args: argparse.Namespace, db: str, context: Any, console: Console) -> int:
    """The same loop with each turn a run on the server, on a thread kept there."""
    from macsql.serving.client import ServerRuns
    from macsql.serving.errors import NoServerAnswers, ServerRunError

    async def converse() -> int:
        runs = ServerRuns([args.server], concurrency=1, token=args.server_token, retries=0)
        try:
            await runs.check(args.pipeline)
        except NoServerAnswers as exc:
            await runs.aclose()
            print(f"macsql: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        thread = args.thread or str(uuid.uuid4())
        console.print(f"thread {thread} (resume with --thread {thread}) · {HELP}", markup=False)
        try:
            while True:
                try:
                    line = (await asyncio.to_thread(input, "you> ")).strip()
                except EOFError:
                    console.print()
                    return EXIT_OK
                if not line:
                    continue
                if line in ("/quit", "/exit"):
                    return EXIT_OK
                if line == "/reset":
                    thread = str(uuid.uuid4())
                    console.print(f"new thread {thread}", markup=False)
                    continue
                if line in ("/sql", "/rows"):
                    last = await runs.thread_values(thread)
                    if line == "/sql":
                        console.print(last.get("sql") or "(no SQL yet)", markup=False)
                    else:
                        _print_rows(console, last)
                    continue
                if line.startswith("/"):
                    console.print(f"unknown command {line}; {HELP}", markup=False)
                    continue
                try:
                    outcome = await runs.run(
                        args.pipeline, {"question": line, "db": db}, context, thread_id=thread
                    )
                except (ServerRunError, NoServerAnswers) as exc:
                    console.print(f"error: the server could not answer: {exc}", markup=False)
                    continue
                _show(console, line, outcome.output)
        finally:
            await runs.aclose()

    try:
        return asyncio.run(converse())
    except KeyboardInterrupt:
        console.print()
        return EXIT_OK


def _loop(graph: Any, db: str, context: Any, thread: str, console: Console) -> None:
    console.print(f"thread {thread} (resume with --thread {thread}) · {HELP}", markup=False)
    while True:
        config = {"configurable": {"thread_id": thread}}
        try:
            line = input("you> ").strip()
        except (EOFError, KeyboardInterrupt):
            console.print()
            return
        if not line:
            continue
        if line in ("/quit", "/exit"):
            return
        if line == "/reset":
            thread = _new_thread()
            console.print(f"new thread {thread}", markup=False)
            continue
        last = graph.get_state(config).values
        if line == "/sql":
            console.print(last.get("sql") or "(no SQL yet)", markup=False)
            continue
        if line == "/rows":
            _print_rows(console, last)
            continue
        if line.startswith("/"):
            console.print(f"unknown command {line}; {HELP}", markup=False)
            continue
        try:
            out = graph.invoke({"question": line, "db": db}, config, context=context)
        except KeyboardInterrupt:
            console.print("(interrupted)")
            return
        _show(console, line, out)


def _show(console: Console, asked: str, out: dict[str, Any]) -> None:
    standalone = out.get("standalone_question")
    if standalone and standalone != asked:
        console.print(f"(understood as: {standalone})", markup=False)
    if out.get("answer"):
        console.print(out["answer"], markup=False)
    else:
        _print_rows(console, out)
    console.print(f"SQL: {out.get('sql') or '(none)'}", style="dim", markup=False)
    if out.get("status") != "ok":
        console.print(f"error: {out.get('error') or 'no SQL ran'}", markup=False)


def _print_rows(console: Console, out: dict[str, Any]) -> None:
    if not out.get("columns"):
        console.print("(no rows yet)" if not out.get("sql") else "(no result)", markup=False)
        return
    table = Table(*[str(c) for c in out["columns"]])
    for row in out.get("rows") or []:
        table.add_row(*["NULL" if v is None else str(v) for v in row])
    console.print(table)
    if out.get("truncated"):
        console.print("(rows truncated at the row cap)")
