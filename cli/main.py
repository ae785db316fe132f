"""The `macsql` command: ask, chat, eval, score, export-sft, train, link, index, demo, graph,
serve."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from macsql.cli.exit_codes import EXIT_BROKEN_PIPE, EXIT_USAGE, UsageError, undecodable
from macsql.cli.startup import defer_pydantic_validators

Handler = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2, no usage dump
        print(f"macsql: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _demo_main(args: argparse.Namespace) -> int:
    from pathlib import Path

    from macsql.database.demo import build_demo_database, ensure_demo_database

    path = build_demo_database(Path(args.path)) if args.path else ensure_demo_database()
    print(path)
    return 0


_LOAD_COMMANDS = ("load", "load-postgres")


def _load_postgres_main(args: argparse.Namespace) -> int:
    from macsql.database.loaders.command import main_load

    return main_load(args.loader_args)


def _graph_main(args: argparse.Namespace) -> int:
    from macsql.graph.registry import get_pipeline

    print(get_pipeline(args.pipeline).get_graph().draw_mermaid())
    return 0


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `macsql` parser; the options of `eval` and `score` are added only when `command`
    names one of them (their help line is always there)."""
    parser = _Parser(
        prog="macsql",
        description="Text-to-SQL with MAC-SQL, SQLFixAgent and R^3, as LangGraph graphs.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    handlers: dict[str, Handler] = {}

    from macsql.cli.ask import add_ask_arguments, ask_main

    ask = sub.add_parser("ask", help="answer one question with a checked SQL query")
    add_ask_arguments(ask)
    handlers["ask"] = ask_main

    chat = sub.add_parser("chat", help="a conversation with a database, resumable by thread")
    if command == "chat":
        from macsql.cli.chat import add_chat_arguments, chat_main

        add_chat_arguments(chat)
        handlers["chat"] = chat_main

    evals = sub.add_parser("eval", help="run a pipeline over Spider, BIRD, SParC or CoSQL")
    score = sub.add_parser("score", help="score a predictions file")
    if command in ("eval", "score"):
        # The eval harness (scoring, reports, the LLM cache) costs a second of imports that
        # `ask` should not pay; only these commands load it.
        from macsql.cli.evals import add_eval_arguments, add_score_arguments, eval_main, score_main

        add_eval_arguments(evals)
        add_score_arguments(score)
        handlers["eval"], handlers["score"] = eval_main, score_main

    export = sub.add_parser("export-sft", help="turn a traced teacher run into fine-tuning data")
    if command == "export-sft":
        from macsql.cli.export_sft import add_export_arguments, export_main

        add_export_arguments(export)
        handlers["export-sft"] = export_main

    train = sub.add_parser("train", help="fine-tune a model on an export (the train extra)")
    if command == "train":
        from macsql.cli.train import add_train_arguments, train_main

        add_train_arguments(train)
        handlers["train"] = train_main

    link = sub.add_parser("link", help="show what schema linking keeps (no model)")
    index = sub.add_parser("index", help="build or refresh a value index")
    if command in ("link", "index"):
        from macsql.cli.link import add_index_arguments, add_link_arguments, index_main, link_main

        add_link_arguments(link)
        add_index_arguments(index)
        handlers["link"], handlers["index"] = link_main, index_main

    demo = sub.add_parser("demo", help="write the demo database and print its path")
    demo.add_argument("path", nargs="?", default=None)
    handlers["demo"] = _demo_main

    for name in _LOAD_COMMANDS:
        load = sub.add_parser(
            name,
            help="copy SQLite databases (Spider's by default) into PostgreSQL or DuckDB (--to URL)"
            if name == "load"
            else "alias of `load`",
            add_help=False,
        )
        load.add_argument("loader_args", nargs=argparse.REMAINDER)
        handlers[name] = _load_postgres_main

    serve = sub.add_parser(
        "serve", help="serve the pipelines (LangGraph SDK protocol) from PostgreSQL, N workers"
    )
    if command == "serve":
        from macsql.cli.serve import add_serve_arguments, serve_main

        add_serve_arguments(serve)
        handlers["serve"] = serve_main

    draw = sub.add_parser("graph", help="print a pipeline's graph as Mermaid")
    draw.add_argument("--pipeline", default="macsql")
    handlers["graph"] = _graph_main

    parser.set_defaults(_handlers=handlers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. The cyclic garbage collector is paused while the command's modules are
    imported: langchain, LangGraph and the OpenAI client make some 2,000 modules' worth of
    objects, which the collector would walk again and again meanwhile (a fifth of the import
    CPU, measured). `ask` is short and keeps it paused; longer commands collect as usual."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _main(list(sys.argv[1:] if argv is None else argv), collecting)
    finally:
        if collecting:
            gc.enable()


# Short commands whose time to the first answer is mostly imports (`macsql.cli.startup`).
_DEFERRED_VALIDATOR_COMMANDS = ("ask", "chat", "link")


def run() -> int:
    """The console script: `main`, then the heap is frozen, so that the interpreter's final
    collections at exit do not walk it (they took about a second after an `ask`). For the short
    commands, pydantic validators are built on first use (`macsql.cli.startup`)."""
    if sys.argv[1:2] and sys.argv[1] in _DEFERRED_VALIDATOR_COMMANDS:
        defer_pydantic_validators()
    code = main()
    gc.freeze()
    return code


def _main(argv: list[str], collecting: bool) -> int:
    problem = undecodable(argv)
    if problem:
        note = " (a file whose name holds such bytes needs another name)"
        print(f"macsql: error: {problem}{note}", file=sys.stderr)
        return EXIT_USAGE
    if argv[:1] and argv[0] in _LOAD_COMMANDS:  # the loader owns its options, --help included
        return _load_postgres_main(argparse.Namespace(loader_args=argv[1:]))
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    if collecting and args.command != "ask":
        gc.enable()
    try:
        if "help" in (getattr(args, "context_fields", None) or []):  # `--set help`
            from macsql.cli.common import settings_help

            print(settings_help())
            code = 0
        else:
            code = args._handlers[args.command](args)
        sys.stdout.flush()  # a closed pipe shows up here, not at exit
        return code
    except BrokenPipeError:
        # The reader went away (`macsql ask --json | head -c 400`): that is not an error of
        # ours. Point stdout at /dev/null so that the interpreter's final flush is quiet too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except UsageError as exc:
        print(f"macsql: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("macsql: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(run())
