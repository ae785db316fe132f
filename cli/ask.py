"""`macsql ask`: one question, one checked SQL, printed as a table or as JSON."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console

from macsql.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    add_model_arguments,
    check_models,
    context_from_args,
    enable_cache,
    resolve_db_argument,
    warn_if_privileged,
)
from macsql.graph.registry import get_pipeline, pipeline_names
from macsql.llm.models import ModelConfigError
from macsql.llm.traces import recording_traces


def add_ask_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question", help="the question, in natural language")
    parser.add_argument(
        "--db",
        required=True,
        help="a SQLite file, an SQLAlchemy URL, or 'demo' for the demo database",
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
    add_model_arguments(parser)


def ask_main(args: argparse.Namespace) -> int:
    console = Console(stderr=False, highlight=False, soft_wrap=True)
    try:
        question = (args.question or "").strip()
        if not question:
            raise UsageError("the question is empty")
        if args.traces and not args.json:
            raise UsageError("--traces goes with --json (the traces are part of the JSON)")
        db = resolve_db_argument(args.db, getattr(args, "timeout", None))
        context = context_from_args(args)
        enable_cache(args)
        check_models(context)
    except (UsageError, ModelConfigError) as exc:
        print(f"macsql: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    graph = get_pipeline(args.pipeline)
    payload = {"question": question, "evidence": args.evidence or "", "db": db}
    with recording_traces() as trace:
        if args.stream:
            # With --json, progress goes to stderr so stdout stays one JSON object.
            progress = (
                Console(stderr=True, highlight=False, soft_wrap=True) if args.json else console
            )
            result = _run_streaming(graph, payload, context, progress)
        else:
            result = graph.invoke(payload, context=context)
    # Streamed "values" carry every channel; keep only the pipeline's output schema.
    keys = graph.builder.output_schema.__annotations__
    output = {k: v for k, v in result.items() if k in keys}
    output.setdefault("error", None)
    if args.traces:
        output["traces"] = trace.calls
    if args.json:
        print(json.dumps(output, ensure_ascii=False, default=str))
    else:
        _print_result(console, output)
    warn_if_privileged(db)
    return EXIT_OK if output.get("status") == "ok" else EXIT_FAILED


def _run_streaming(
    graph: Any, payload: dict[str, Any], context: Any, console: Console
) -> dict[str, Any]:
    final: dict[str, Any] = {}
    in_tokens = False
    shown = _Shown()
    # subgraphs=True: a pipeline made of pipelines (macsql+sqlfix) shows its stages' progress.
    for namespace, mode, chunk in graph.stream(
        payload, context=context, stream_mode=["custom", "messages", "values"], subgraphs=True
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


def _print_result(console: Console, output: dict[str, Any]) -> None:
    from rich.table import Table  # after the answer: not on the way to the first request

    console.print("SQL:", style="bold")
    console.print(output.get("sql") or "(none)", markup=False)
    if output.get("columns"):
        table = Table(*[str(c) for c in output["columns"]])
        for row in output.get("rows") or []:
            table.add_row(*["NULL" if v is None else str(v) for v in row])
        console.print(table)
        if output.get("truncated"):
            console.print("(rows truncated at the row cap)")
    if output.get("answer"):  # Context.answer: the result in words
        console.print("Answer:", style="bold")
        console.print(output["answer"], markup=False)
    attempts = output.get("attempts") or 0
    outcome = f" ({output['outcome']})" if output.get("outcome") else ""
    console.print(
        f"status: {output.get('status')}{outcome}, "
        f"{attempts} attempt{'s' if attempts != 1 else ''}"
        + (", Selector used" if output.get("selector_used") else ""),
        markup=False,
    )
    if output.get("error"):
        console.print(f"error: {output['error']}", markup=False)
    # Every fallback an agent took (a reply not used as given, the Selector's, R^3's default
    # reviewers, ...) is part of the answer, said once: most are both in `fallbacks` and in
    # their agent's own `*_fallback` key.
    said: set[str] = set()
    for fallback in output.get("fallbacks") or []:
        console.print(f"note: [{fallback['agent']}] {fallback['detail']}", markup=False)
        said.add(str(fallback["detail"]))
    for key, value in output.items():
        if key.endswith("_fallback") and value and str(value) not in said:
            console.print(f"{key.removesuffix('_fallback')} fallback: {value}", markup=False)
