"""`macsql ask`: one question, one checked SQL, printed as a table or as JSON."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from rich.console import Console

from macsql.cli.approval import LeaveWaiting, prompt_decision
from macsql.cli.ask_threads import (
    AskedOnThread,
    changed_settings,
    default_state_url,
    recall,
    remember,
)
from macsql.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_PAUSED,
    EXIT_USAGE,
    UsageError,
    add_model_arguments,
    check_models,
    context_from_args,
    enable_cache,
    resolve_db_argument,
    warn_if_privileged,
)
from macsql.graph.approvals import (
    Decision,
    new_thread_id,
    resume_command,
    waiting_approvals,
)
from macsql.graph.registry import get_builder, get_pipeline, pipeline_names
from macsql.llm.models import ModelConfigError
from macsql.llm.traces import recording_traces

if TYPE_CHECKING:
    from macsql.core.results import Result


def _result(output: dict[str, Any], **keys: Any) -> Result:
    # The result model is built after the answer: not on the way to the first request.
    from macsql.core.results import Result

    return Result.from_run(output, **keys)


def add_ask_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "question", nargs="?", default=None, help="the question, in natural language"
    )
    parser.add_argument(
        "--db",
        default=None,
        help="a SQLite or DuckDB file, a CSV or Parquet file (loaded into DuckDB), an "
        "SQLAlchemy URL, or 'demo' for the demo database",
    )
    parser.add_argument("--evidence", default="", help="hints, e.g. 'A11 refers to salary'")
    parser.add_argument(
        "--pipeline",
        default="macsql",
        choices=pipeline_names(),
        help="which pipeline answers (default: macsql)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--traces",
        action="store_true",
        help="with --json: add `traces`, every agent call as sent and answered, in order",
    )
    parser.add_argument(
        "--stream",
        action="store_true",
        help="print each agent's progress and the model's tokens as they come",
    )
    approval = parser.add_argument_group(
        "approval (--set approve_sql=true)",
        "On a terminal each SQL is shown and waits for approve / edit / reject. Otherwise the "
        f"run stops with exit {EXIT_PAUSED}, printing the SQL and a thread id; resume it with "
        "--thread ID and one of --approve, --edit SQL, --reject.",
    )
    approval.add_argument(
        "--thread", default=None, metavar="ID", help="resume the paused run on this thread"
    )
    decision = approval.add_mutually_exclusive_group()
    decision.add_argument("--approve", action="store_true", help="run the waiting SQL")
    decision.add_argument("--edit", default=None, metavar="SQL", help="run this SQL instead")
    decision.add_argument("--reject", action="store_true", help="stop the run")
    approval.add_argument(
        "--no-input",
        action="store_true",
        help="never prompt, even on a terminal: a paused run exits with its thread id",
    )
    approval.add_argument(
        "--state-url",
        default=None,
        help="where paused runs are kept: a SQLite file (default: ask.sqlite in macsql's cache "
        "directory) or a postgresql:// URL",
    )
    add_model_arguments(parser)


def _decision(args: argparse.Namespace) -> Decision | None:
    if args.approve:
        return True
    if args.reject:
        return False
    if args.edit is not None:
        if not args.edit.strip():
            raise UsageError("--edit takes the SQL to run instead")
        return str(args.edit)
    return None


def _check_arguments(args: argparse.Namespace) -> str:
    """The question of a new run ('' when resuming); usage errors as `UsageError`."""
    question = (args.question or "").strip()
    if args.traces and not args.json:
        raise UsageError("--traces goes with --json (the traces are part of the JSON)")
    if args.thread:
        if question:
            raise UsageError(
                "--thread resumes a paused run and takes no question (a conversation: "
                "macsql chat --thread ID)"
            )
        return ""
    if _decision(args) is not None:
        raise UsageError("--approve, --edit and --reject go with --thread ID")
    if not question:
        raise UsageError("the question is empty")
    if not args.db:
        raise UsageError("--db is required: a database file, a URL, or 'demo'")
    return question


def ask_main(args: argparse.Namespace) -> int:
    console = Console(stderr=False, highlight=False, soft_wrap=True)
    try:
        question = _check_arguments(args)
        if args.thread:
            return _resume(args, console)
        db = resolve_db_argument(args.db, getattr(args, "timeout", None))
        context = context_from_args(args)
        enable_cache(args)
        check_models(context)
    except (UsageError, ModelConfigError) as exc:
        print(f"macsql: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    payload = {"question": question, "evidence": args.evidence or "", "db": db}
    if context.approve_sql:
        asked = AskedOnThread(
            question=question,
            db=db,
            pipeline=args.pipeline,
            evidence=args.evidence or "",
            settings=changed_settings(context),
            cache=args.cache,
        )
        return _on_thread(args, console, asked, context, payload, new_thread_id())
    graph = get_pipeline(args.pipeline)
    with recording_traces() as trace:
        result = _run(graph, payload, context, args, console, None)
    output = _result(
        result,
        question=question,
        db=db,
        pipeline=args.pipeline,
        traces=trace.calls if args.traces else None,
    )
    return _finish(args, console, output)


def _resume(args: argparse.Namespace, console: Console) -> int:
    """`ask --thread ID [--approve | --edit SQL | --reject]`: the paused run, continued with
    the settings it was asked with (options given now take precedence)."""
    with _persistence(args) as persistence:
        asked = recall(persistence.store, args.thread)
        if asked is None:
            raise UsageError(f"no paused ask on thread {args.thread!r} in {persistence.where}")
    args.pipeline = asked.pipeline
    args.cache = args.cache or asked.cache
    # A resumed run must pause again where it paused: approval stays on whatever was given.
    args.context_fields = [*args.context_fields, "approve_sql=true"]
    context = context_from_args(args, base=asked.context())
    enable_cache(args)
    check_models(context)
    return _on_thread(args, console, asked, context, None, args.thread)


def _persistence(args: argparse.Namespace) -> Any:
    from macsql.memory.persistence import open_persistence

    url = args.state_url or default_state_url()
    try:
        return open_persistence(url)
    except Exception as exc:  # an unreachable server, a bad URL, an unwritable file
        raise UsageError(f"cannot open the state of paused runs ({url}): {exc}") from exc


def _on_thread(
    args: argparse.Namespace,
    console: Console,
    asked: AskedOnThread,
    context: Any,
    payload: dict[str, Any] | None,
    thread: str,
) -> int:
    """Run (or resume) on a checkpointed thread, taking each pause's decision from the
    command line, then from the terminal, until the run ends or a pause has nobody to ask."""
    config = {"configurable": {"thread_id": thread}}
    interactive = sys.stdin.isatty() and not args.no_input
    prompt_to = Console(stderr=True, highlight=False, soft_wrap=True)
    with ExitStack() as stack:
        try:
            persistence = stack.enter_context(_persistence(args))
        except UsageError as exc:
            print(f"macsql: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        graph = get_builder(asked.pipeline).compile(
            checkpointer=persistence.checkpointer, store=persistence.store
        )
        given = _decision(args)
        last: dict[str, Any] = {}
        with recording_traces() as trace:
            if payload is not None:
                remember(persistence.store, thread, asked)
                last = _run(graph, payload, context, args, console, config)
            elif not waiting_approvals(graph, config):
                print(
                    f"macsql: error: thread {thread} has no SQL waiting for approval",
                    file=sys.stderr,
                )
                return EXIT_USAGE
            while waiting := waiting_approvals(graph, config):
                if given is not None:
                    if isinstance(given, str) and len(waiting) > 1:
                        print(
                            f"macsql: error: {len(waiting)} SQL wait for approval; --edit "
                            "takes one (answer on a terminal instead)",
                            file=sys.stderr,
                        )
                        return EXIT_USAGE
                    decisions: list[Decision] = [given] * len(waiting)
                    given = None
                elif interactive:
                    try:
                        decisions = [
                            prompt_decision(
                                w, input, lambda text: prompt_to.print(text, markup=False)
                            )
                            for w in waiting
                        ]
                    except LeaveWaiting:
                        prompt_to.print()
                        break
                else:
                    break
                last = _run(
                    graph, resume_command(waiting, decisions), context, args, console, config
                )
            values = graph.get_state(config).values
            if "rows" in last:  # a thread's checkpoints keep no rows: the run returned them
                values = {**values, "rows": last["rows"]}
            output = _result(
                values,
                question=asked.question,
                db=asked.db,
                pipeline=asked.pipeline,
                thread=thread,
                pending=[w.as_dict() for w in waiting_approvals(graph, config)],
                traces=trace.calls if args.traces else None,
            )
    return _finish(args, console, output)


def _run(
    graph: Any,
    payload: Any,
    context: Any,
    args: argparse.Namespace,
    console: Console,
    config: dict[str, Any] | None,
) -> dict[str, Any]:
    if args.stream:
        # With --json, progress goes to stderr so stdout stays one JSON object.
        progress = Console(stderr=True, highlight=False, soft_wrap=True) if args.json else console
        return _run_streaming(graph, payload, context, progress, config)
    result: dict[str, Any] = graph.invoke(payload, config, context=context)
    return result


def _finish(args: argparse.Namespace, console: Console, output: Result) -> int:
    if args.json:
        print(json.dumps(output.to_dict(), ensure_ascii=False, default=str))
    else:
        _print_result(console, output)
    warn_if_privileged(output.db)
    if output.status == "paused":
        return EXIT_PAUSED
    return EXIT_OK if output.status == "ok" else EXIT_FAILED


def _run_streaming(
    graph: Any, payload: Any, context: Any, console: Console, config: dict[str, Any] | None
) -> dict[str, Any]:
    final: dict[str, Any] = {}
    in_tokens = False
    shown = _Shown()
    # subgraphs=True: a pipeline made of pipelines (macsql+sqlfix) shows its stages' progress.
    for namespace, mode, chunk in graph.stream(
        payload,
        config,
        context=context,
        stream_mode=["custom", "messages", "values"],
        subgraphs=True,
    ):
        stage = "/".join(part.split(":", 1)[0] for part in namespace)
        if mode == "messages":
            message, _meta = chunk
            text = getattr(message, "content", "")
            if isinstance(text, str) and text:
                console.print(text, end="", style="dim", markup=False)
                shown.tokens.append(text)
                in_tokens = True
        elif mode == "custom":
            if in_tokens:
                console.print()
                in_tokens = False
            prefix = f"{stage} " if stage else ""
            console.print(prefix + _describe_event(shown.new_only(chunk)), markup=False)
        elif mode == "values" and not namespace:
            final = chunk
    if in_tokens:
        console.print()
    return final


class _Shown:
    """What the stream has printed, so that a SQL appears once: in the model's streamed reply,
    or in the first event that carries it, not again in each agent's next event."""

    def __init__(self) -> None:
        self.tokens: list[str] = []
        self.sql: set[str] = set()

    def new_only(self, event: dict[str, Any]) -> dict[str, Any]:
        sql = event.get("sql")
        if not isinstance(sql, str) or not sql:
            return event
        if sql in self.sql or sql in "".join(self.tokens):
            return {k: v for k, v in event.items() if k != "sql"}
        self.sql.add(sql)
        return event


def _describe_event(event: dict[str, Any]) -> str:
    details = ", ".join(
        f"{k}={v}"
        for k, v in event.items()
        if k not in ("agent", "phase") and v not in (None, "", [])
    )
    return f"[{event.get('agent')}] {event.get('phase')}" + (f": {details}" if details else "")


def _print_result(console: Console, output: Result) -> None:
    from rich.table import Table  # after the answer: not on the way to the first request

    if output.pending:
        for waiting in output.pending:
            attempt = f" (attempt {waiting.attempt})" if waiting.attempt else ""
            console.print(f"SQL waiting for approval{attempt}:", style="bold")
            console.print(waiting.sql, markup=False)
        console.print(f"status: paused, thread {output.thread}", markup=False)
        console.print(
            f"resume with: macsql ask --thread {output.thread} --approve "
            '(or --edit "SQL", or --reject)',
            markup=False,
        )
        return
    console.print("SQL:", style="bold")
    console.print(output.sql or "(none)", markup=False)
    if output.columns:
        table = Table(*[str(c) for c in output.columns])
        for row in output.rows:
            table.add_row(*["NULL" if v is None else str(v) for v in row])
        console.print(table)
        if output.truncated:
            console.print("(rows truncated at the row cap)")
    if output.answer:  # Context.answer: the result in words
        console.print("Answer:", style="bold")
        console.print(output.answer, markup=False)
    attempts = output.attempts
    ran = output.outcome not in (None, "", "not_run")
    outcome = f" ({output.outcome})" if ran else ""
    console.print(
        f"status: {output.status}{outcome}, "
        f"{attempts} attempt{'s' if attempts != 1 else ''}"
        + (", Selector used" if output.selector_used else ""),
        markup=False,
    )
    if output.error:
        console.print(f"error: {output.error}", markup=False)
    # Every fallback an agent took (a reply not used as given, the Selector's, R^3's default
    # reviewers, ...) is part of the answer, said once: most are both in `fallbacks` and in
    # their agent's own `*_fallback` key.
    said: set[str] = set()
    for fallback in output.fallbacks:
        console.print(f"note: [{fallback.agent}] {fallback.detail}", markup=False)
        said.add(fallback.detail)
    for name, value in (
        ("selector", output.selector_fallback),
        ("persona", output.persona_fallback),
    ):
        if value and value not in said:
            console.print(f"{name} fallback: {value}", markup=False)
