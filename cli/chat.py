"""`macsql chat`: a conversation with a database, kept on a thread that can be resumed later.

Each line is a question; follow-ups ("and in 2019?") are understood from the earlier turns,
which the checkpointer keeps (a SQLite file by default, or PostgreSQL with `--state-url`; with
`--server URL`, a macsql server's database, see `macsql serve`): the last turns' questions, SQL
and outcomes, never result rows (unless `--set thread_rows=true`).
`/sql` and `/rows` show the last answer's SQL and rows, `/threads` lists the saved threads,
`/forget [ID]` deletes one (this one by default), `/reset` starts a new thread, `/quit`, Ctrl-C
or end of input leave. `--threads` and `--forget ID` do the same without a conversation. With
`approve_sql` on, each SQL is shown before it runs and the next line answers it (approve, edit or
reject), not a new question.
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

from macsql.cli.approval import LeaveWaiting, prompt_decision
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
from macsql.cli.exit_codes import undecodable
from macsql.database.cache_paths import cache_root
from macsql.database.demo import DEMO_NAME, ensure_demo_database
from macsql.graph.approvals import (
    new_thread_id,
    resume_command,
    waiting_approvals,
    waiting_in_output,
)
from macsql.graph.registry import get_builder, pipeline_names
from macsql.llm.models import ModelConfigError
from macsql.memory.persistence import open_persistence
from macsql.memory.threads import forget_thread, list_threads

HELP = (
    "/sql last SQL · /rows last rows · /threads saved threads · /forget [ID] delete a thread · "
    "/reset new thread · /quit"
)
SERVER_TOKEN_ENV = "MACSQL_SERVER_TOKEN"
ROWS_NOT_KEPT = (
    "(the rows of an earlier session are not kept with the thread: ask again, or chat with "
    "--set thread_rows=true to keep them)"
)


def add_chat_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db", default=None, help="a SQLite file, a URL, or 'demo' (needed to chat)"
    )
    parser.add_argument("--pipeline", default="macsql", choices=pipeline_names())
    parser.add_argument("--thread", default=None, help="resume this conversation (thread id)")
    parser.add_argument(
        "--state-url",
        default=None,
        help="where conversations are kept: a SQLite file (default: chat.sqlite in macsql's "
        "cache directory) or a postgresql:// URL",
    )
    parser.add_argument(
        "--no-answer", action="store_true", help="show SQL and rows only, no answer in words"
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
    parser.add_argument("--threads", action="store_true", help="list the saved threads and leave")
    parser.add_argument(
        "--forget", default=None, metavar="ID", help="delete this thread's saved state and leave"
    )
    add_model_arguments(parser)


def _state_url(args: argparse.Namespace) -> str:
    return args.state_url or str(cache_root() / "chat.sqlite")


def _threads_only(args: argparse.Namespace) -> int:
    """`--threads` / `--forget ID`: no database, no model."""
    console = Console(highlight=False, soft_wrap=True)
    try:
        with open_persistence(_state_url(args)) as persistence:
            saver = persistence.checkpointer
            if args.forget is not None:
                return _forget(console, saver, args.forget)
            _print_threads(console, saver)
    except Exception as exc:  # an unreachable server, a bad URL, an unwritable file
        print(f"macsql: error: cannot open the conversation state: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def chat_main(args: argparse.Namespace) -> int:
    if getattr(args, "threads", False) or getattr(args, "forget", None) is not None:
        return _threads_only(args)
    try:
        if not args.db:
            raise UsageError("--db is needed to chat (a SQLite file, a URL, or 'demo')")
        changes = [] if args.no_answer else ["answer=true"]
        args.context_fields = changes + list(getattr(args, "context_fields", None) or [])
        context = context_from_args(args)
        if args.server:
            if args.state_url or args.cache:
                raise UsageError("--state-url and --cache are the server's business with --server")
            # The server opens the database and builds the models; it reports what fails.
            db = str(ensure_demo_database()) if args.db == DEMO_NAME else args.db
        else:
            db = resolve_db_argument(args.db, getattr(args, "timeout", None))
            enable_cache(args)
            check_models(context)
    except (UsageError, ModelConfigError) as exc:
        print(f"macsql: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    console = Console(highlight=False, soft_wrap=True)
    if args.server:
        return _server_chat(args, db, context, console)
    state_url = _state_url(args)
    with ExitStack() as stack:
        try:
            persistence = stack.enter_context(open_persistence(state_url))
        except Exception as exc:  # an unreachable server, a bad URL, an unwritable file
            print(f"macsql: error: cannot open the conversation state: {exc}", file=sys.stderr)
            return EXIT_USAGE
        graph = get_builder(args.pipeline).compile(
            checkpointer=persistence.checkpointer, store=persistence.store
        )
        _loop(graph, db, context, args.thread or new_thread_id(), console, persistence.checkpointer)
    return EXIT_OK


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
        say = lambda text: console.print(text, markup=False)  # noqa: E731

        async def settle(out: dict[str, Any], thread: str) -> dict[str, Any]:
            """A SQL waiting for approval: the next lines decide, as in a local chat."""
            while waiting := waiting_in_output(out):
                decisions = [
                    await asyncio.to_thread(prompt_decision, w, input, say) for w in waiting
                ]
                resume = {"resume": resume_command(waiting, decisions).resume}
                outcome = await runs.run(
                    args.pipeline, None, context, thread_id=thread, command=resume
                )
                out = outcome.output
            return out

        if args.thread:  # a thread left with a SQL waiting: that comes first
            try:
                pending = {"__interrupt__": await runs.thread_interrupts(thread)}
                if pending["__interrupt__"]:
                    _show(console, "", await settle(pending, thread))
            except (ServerRunError, NoServerAnswers) as exc:
                console.print(f"error: the server could not answer: {exc}", markup=False)
            except LeaveWaiting:
                await runs.aclose()
                return EXIT_OK
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
                    out = await settle(outcome.output, thread)
                except (ServerRunError, NoServerAnswers) as exc:
                    console.print(f"error: the server could not answer: {exc}", markup=False)
                    continue
                except LeaveWaiting:
                    console.print(f"\n(the SQL still waits on thread {thread})", markup=False)
                    return EXIT_OK
                _show(console, line, out)
        finally:
            await runs.aclose()

    try:
        return asyncio.run(converse())
    except KeyboardInterrupt:
        console.print()
        return EXIT_OK


def _loop(graph: Any, db: str, context: Any, thread: str, console: Console, saver: Any) -> None:
    console.print(f"thread {thread} (resume with --thread {thread}) · {HELP}", markup=False)
    last_out: dict[str, Any] | None = None  # this session's last answer, rows included
    config = {"configurable": {"thread_id": thread}}
    try:  # a thread left with a SQL waiting: that comes first
        while waiting := waiting_approvals(graph, config):
            say = lambda text: console.print(text, markup=False)  # noqa: E731
            decisions = [prompt_decision(w, input, say) for w in waiting]
            last_out = graph.invoke(resume_command(waiting, decisions), config, context=context)
            _show(console, "", last_out)
    except LeaveWaiting:
        return
    while True:
        config = {"configurable": {"thread_id": thread}}
        try:
            line = input("you> ").strip()
        except (EOFError, KeyboardInterrupt):
            console.print()
            return
        except UnicodeDecodeError as exc:  # a strict stdin (PYTHONIOENCODING=utf-8:strict)
            console.print(f"the line holds bytes that are not {exc.encoding} text", markup=False)
            continue
        if not line:
            continue
        problem = undecodable([line], what="the line")
        if problem:  # it would fail at the model call, as "UnicodeEncodeError"
            console.print(problem, markup=False)
            continue
        if line in ("/quit", "/exit"):
            return
        if line == "/reset":
            thread, last_out = new_thread_id(), None
            console.print(f"new thread {thread}", markup=False)
            continue
        if line == "/threads":
            _print_threads(console, saver, current=thread)
            continue
        if line == "/forget" or line.startswith("/forget "):
            target = line.removeprefix("/forget").strip() or thread
            _forget(console, saver, target)
            if target == thread:
                thread, last_out = new_thread_id(), None
                console.print(f"new thread {thread}", markup=False)
            continue
        saved = graph.get_state(config).values
        if line == "/sql":
            sql = (last_out or {}).get("sql") or saved.get("sql")
            console.print(sql or "(no SQL yet)", markup=False)
            continue
        if line == "/rows":
            if last_out is not None or "rows" in saved or not saved.get("sql"):
                _print_rows(console, last_out if last_out is not None else saved)
            else:
                console.print(ROWS_NOT_KEPT, markup=False)
            continue
        if line.startswith("/"):
            console.print(f"unknown command {line}; {HELP}", markup=False)
            continue
        try:
            out = graph.invoke({"question": line, "db": db}, config, context=context)
            while waiting := waiting_approvals(graph, config):
                say = lambda text: console.print(text, markup=False)  # noqa: E731
                decisions = [prompt_decision(w, input, say) for w in waiting]
                out = graph.invoke(resume_command(waiting, decisions), config, context=context)
        except LeaveWaiting:
            console.print(f"\n(the SQL still waits; resume with --thread {thread})", markup=False)
            return
        except KeyboardInterrupt:
            console.print("(interrupted)")
            return
        last_out = out
        _show(console, line, out)


def _print_threads(console: Console, saver: Any, current: str | None = None) -> None:
    """One line per saved thread, newest first: id, turns kept, last question, when, size."""
    threads = list_threads(saver)
    if not threads:
        console.print("(no saved threads)", markup=False)
        return
    for t in threads:
        mark = " (this one)" if t.thread_id == current else ""
        when = t.updated[:19].replace("T", " ")
        console.print(
            f"{t.thread_id}{mark} · {t.turns} turn(s) · {t.last_question!r} · {when} UTC · "
            f"{t.saved_bytes / 1024:.1f} KB",
            markup=False,
        )


def _forget(console: Console, saver: Any, thread_id: str) -> int:
    if forget_thread(saver, thread_id):
        console.print(f"forgot thread {thread_id}", markup=False)
        return EXIT_OK
    console.print(f"no saved thread {thread_id}", markup=False)
    return EXIT_USAGE


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
