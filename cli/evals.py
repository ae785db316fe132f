"""The ``eval`` and ``score`` subcommands.

``macsql.cli.main`` adds them with `add_eval_arguments` / `add_score_arguments` and runs
`eval_main` / `score_main`. ``python -m macsql.cli.evals {eval,score} ...`` works as well.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from macsql.cli.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_USAGE,
    UsageError,
    add_context_fields_argument,
    check_models,
    parse_context_fields,
    warn_if_privileged,
)
from macsql.cli.numbers import number_in
from macsql.core.context import ContextError
from macsql.evals.datasets import (
    BIRD_LEVELS,
    SPIDER_LEVELS,
    Dataset,
    DatasetError,
    load_dataset,
)
from macsql.evals.interaction_scoring import conversation_text, score_sessions
from macsql.evals.options import EvalOptions
from macsql.evals.predictions import (
    PredictionsFormatError,
    read_bird_predictions,
    read_interaction_predictions,
    read_spider_predictions,
)
from macsql.evals.results import RunDirectoryError
from macsql.evals.run_health import STOP_AFTER_MODEL_FAILURES
from macsql.evals.runner import EvalInterrupted, run_eval_sync
from macsql.evals.scoring import PredictionsMismatchError, score_predictions, summary_text
from macsql.evals.ves import OFFICIAL_ITERATIONS
from macsql.llm.models import ModelConfigError
from macsql.serving.errors import NoServerAnswers

SERVER_TOKEN_ENV = "MACSQL_SERVER_TOKEN"


def default_processes() -> int:
    """One process per core, at most 2. On the 2-core development machine 2 processes ran the
    throughput benchmark in 9.63-9.71 s against 10.07-10.10 s for 1, and 3 or 4 gained
    nothing (benchmarks/README.md); more cores than 2 were not measured."""
    return max(1, min(2, os.cpu_count() or 1))


def _add_dataset_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", choices=("spider", "bird", "sparc", "cosql"), required=True)
    parser.add_argument(
        "--data-dir",
        required=True,
        help="Spider: dev.json, tables.json, database/; "
        "BIRD: dev.json, dev_tables.json, dev_databases/; "
        "SParC: dev.json (CoSQL: cosql_dev.json), with database/ or Spider's folder beside it",
    )
    parser.add_argument(
        "--split",
        default="dev",
        help="question file: dev (default), train, or BIRD mini-dev's "
        "mini_dev / mini_dev_sqlite / mini_dev_postgresql / ...",
    )
    parser.add_argument(
        "--db-url",
        default=None,
        help="a database URL with {db_id} instead of the SQLite files, e.g. "
        "postgresql+psycopg://u:p@127.0.0.1/{db_id} (databases loaded with "
        "`macsql load-postgres`, or BIRD mini-dev's PostgreSQL/MySQL ones)",
    )


def _add_scoring_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=number_in(float, 0, above=True),
        default=None,
        help="seconds per scoring query, really interrupted (official: Spider 60, BIRD 30)",
    )
    parser.add_argument(
        "--keep-distinct",
        action="store_true",
        help="Spider: keep DISTINCT (the official default removes it)",
    )
    parser.add_argument(
        "--ves-iterations",
        type=number_in(int, 0),
        default=OFFICIAL_ITERATIONS,
        help="BIRD: runs per query for VES/R-VES (official 100; 0 = no VES)",
    )


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``macsql eval``."""
    _add_dataset_arguments(parser)
    parser.add_argument(
        "--pipeline",
        default="macsql",
        help="macsql, sqlfix, r3, or module:attr / file.py:attr of a graph",
    )
    parser.add_argument(
        "--gold",
        action="store_true",
        help="no model: feed the gold SQL through execution and scoring",
    )
    parser.add_argument(
        "--limit",
        type=number_in(int, 1),
        default=None,
        help="only the first N questions (SParC, CoSQL: the first N interactions)",
    )
    parser.add_argument(
        "--previous-sql",
        choices=("own", "gold"),
        default="own",
        help="SParC, CoSQL: the earlier turns' SQL each follow-up sees: the model's own "
        "(default, what a user gets) or the gold (teacher forcing, for diagnosis)",
    )
    parser.add_argument(
        "--link-only",
        action="store_true",
        help="no model: run only schema and value linking and report its recall",
    )
    parser.add_argument(
        "--concurrency",
        type=number_in(int, 1),
        default=8,
        help="model requests in flight at most; a few more items are in progress, so that SQL "
        "execution and scoring overlap the model's latency (8)",
    )
    parser.add_argument(
        "--processes",
        type=number_in(int, 1),
        default=default_processes(),
        help="processes sharing the items and the concurrency; the pipelines are Python-bound "
        f"between model calls, so one per core, up to 2 (here {default_processes()})",
    )
    parser.add_argument(
        "--server",
        dest="servers",
        action="append",
        default=[],
        metavar="URL",
        help="run each item on this macsql server (`macsql serve`) instead of here; repeat it "
        "for servers that share one database: runs are spread over them and a run lost with "
        "its server is run again on another. --concurrency then caps the runs in flight",
    )
    parser.add_argument(
        "--server-token",
        default=os.environ.get(SERVER_TOKEN_ENV) or None,
        help=f"bearer token of servers started with --auth token (default ${SERVER_TOKEN_ENV})",
    )
    parser.add_argument(
        "--server-retries",
        type=number_in(int, 0),
        default=3,
        help="runs again of an item whose run was lost with its server (3)",
    )
    parser.add_argument(
        "--stop-after-failures",
        type=number_in(int, 0),
        default=STOP_AFTER_MODEL_FAILURES,
        metavar="N",
        help="stop after N items in a row whose model call failed (a server down, a bad key); "
        f"0 never stops ({STOP_AFTER_MODEL_FAILURES})",
    )
    parser.add_argument(
        "--out", default=None, help="output folder (default runs/<dataset>-<split>-<pipeline>)"
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue the run in --out, skipping the items it has"
    )
    parser.add_argument("--overwrite", action="store_true", help="discard the run already in --out")
    parser.add_argument("--model", default=None, help="e.g. openai:gpt-4o-mini")
    parser.add_argument("--base-url", default=None, help="OpenAI-compatible server URL")
    parser.add_argument("--api-key", default=None)
    parser.add_argument(
        "--max-tries",
        type=number_in(int, 1),
        default=None,
        help="MAC-SQL maxTryTimes (SQL executions per item)",
    )
    parser.add_argument(
        "--cache", default=None, metavar="FILE", help="cache model calls in this SQLite file"
    )
    add_context_fields_argument(parser)
    parser.add_argument(
        "--item-timeout",
        type=number_in(float, 0),
        default=900.0,
        help="seconds one item may take before it is recorded as failed (0: no limit)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--traces",
        action="store_true",
        help="record every agent call (messages as sent, reply, usage, what followed) in "
        "traces.jsonl beside results.jsonl, for `macsql export-sft`",
    )
    _add_scoring_arguments(parser)


def add_score_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``macsql score``."""
    _add_dataset_arguments(parser)
    parser.add_argument(
        "--predictions",
        required=True,
        help="BIRD predict_dev.json, Spider pred.sql, or SParC / CoSQL pred.txt (one SQL per "
        "line, an empty line after each interaction)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the summary and per-item verdicts as JSON"
    )
    parser.add_argument("--workers", type=number_in(int, 1), default=4, help="scoring threads (4)")
    parser.add_argument(
        "--partial",
        action="store_true",
        help="score a predictions file with fewer predictions than questions without "
        f"failing (otherwise: a warning and exit {EXIT_PARTIAL})",
    )
    _add_scoring_arguments(parser)


def eval_main(args: argparse.Namespace) -> int:
    mode = "gold" if args.gold else args.pipeline.replace(":", "_").replace("/", "_")
    try:
        overrides = parse_context_fields(args.context_fields)
    except UsageError as exc:
        return _usage_error(exc)
    out = args.out or str(Path("runs") / f"{args.dataset}-{args.split}-{mode}")
    options = EvalOptions(
        dataset=args.dataset,
        data_dir=args.data_dir,
        split=args.split,
        pipeline=args.pipeline,
        gold=args.gold,
        limit=args.limit,
        concurrency=args.concurrency,
        out=out,
        resume=args.resume,
        overwrite=args.overwrite,
        timeout=args.timeout,
        keep_distinct=args.keep_distinct,
        ves_iterations=args.ves_iterations,
        item_timeout=args.item_timeout or None,
        model=args.model,
        base_url=args.base_url,
        api_key=args.api_key,
        max_tries=args.max_tries,
        cache=args.cache,
        db_url=args.db_url,
        progress=not args.no_progress,
        traces=args.traces,
        context_overrides=overrides,
        processes=max(1, args.processes),
        stop_after_failures=max(0, args.stop_after_failures),
        previous_sql=args.previous_sql,
        servers=tuple(args.servers),
        server_token=args.server_token,
        server_retries=max(0, args.server_retries),
    )
    if args.link_only:
        return _link_only(options, args.out)
    if options.servers:
        here_only = {"--gold": args.gold, "--traces": args.traces, "--cache": args.cache}
        clash = next((flag for flag, given in here_only.items() if given), None)
        if clash:  # each needs the pipeline in this process
            return _usage_error(UsageError(f"{clash} runs the pipeline here: not with --server"))
    elif not args.gold and ":" not in args.pipeline:  # custom graphs may need no model of ours
        try:
            check_models(options.context())  # the very Context the run will use
        except (TypeError, ContextError, ModelConfigError) as exc:
            return _usage_error(exc)
    try:
        result = run_eval_sync(options)
    except (DatasetError, RunDirectoryError, KeyError, NoServerAnswers) as exc:
        return _usage_error(exc)
    except EvalInterrupted as exc:
        print(f"macsql: {exc}", file=sys.stderr)
        sys.stderr.flush()
        sys.stdout.flush()
        # Every file is written and closed; threads still inside a model call or a query
        # would hold the interpreter's exit for as long as they take.
        os._exit(EXIT_INTERRUPTED)
    summary = result.summary
    levels = BIRD_LEVELS if args.dataset == "bird" else SPIDER_LEVELS
    print(summary_text(summary, levels))
    if "conversations" in summary:
        print()
        print(conversation_text(summary))
    print(f"wall time {summary['wall_time_s']:.1f}s; results in {result.out_dir}")
    if args.db_url:  # one role for every database of the server: check the first
        first = load_dataset(args.dataset, args.data_dir, args.split, db_url=args.db_url).items
        warn_if_privileged(next((item.db for item in first if item.db), None))
    if summary.get("problem"):  # the figures above do not measure the model
        print(f"macsql: error: {summary['problem']}", file=sys.stderr)
        return EXIT_FAILED
    if summary.get("unpredicted"):
        print(
            f"macsql: {summary['unpredicted']} items have no prediction yet (their model call "
            "or database failed, or the run stopped early); run the same command with --resume "
            "to retry them",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return EXIT_OK


def _usage_error(exc: BaseException) -> int:
    """A configuration mistake: one line, exit 2. A KeyError's message is its first argument
    (its str() would quote it)."""
    text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
    print(f"macsql: error: {text}", file=sys.stderr)
    return EXIT_USAGE


def _link_only(options: EvalOptions, out: str | None) -> int:
    from macsql.evals.link_eval import link_summary_text, run_link_eval

    options.out = out or str(Path("runs") / f"{options.dataset}-{options.split}-linking")
    try:
        result = run_link_eval(options)
    except (DatasetError, TypeError, ContextError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(link_summary_text(result.summary))
    print(f"records in {result.out_dir / 'linking.jsonl'}")
    return 0


def score_main(args: argparse.Namespace) -> int:
    try:
        dataset = load_dataset(args.dataset, args.data_dir, args.split, db_url=args.db_url)
        if dataset.is_conversational:
            return _score_conversations(args, dataset)
        if args.dataset == "bird":
            predictions: Sequence[str] | dict[int, str] = read_bird_predictions(args.predictions)
        else:
            predictions = read_spider_predictions(args.predictions)
        report = score_predictions(
            dataset,
            predictions,
            timeout=args.timeout,
            keep_distinct=args.keep_distinct,
            ves_iterations=args.ves_iterations,
            workers=args.workers,
        )
    except (
        DatasetError,
        PredictionsFormatError,
        PredictionsMismatchError,
        FileNotFoundError,
    ) as exc:
        return _usage_error(exc)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(summary_text(report.summary, dataset.levels))
    missing = report.summary.get("n_unpredicted", 0)
    if missing and not args.partial:
        total = len(dataset.items)
        print(
            f"macsql: warning: {total - missing:,} predictions for {total:,} questions: "
            f"{missing:,} questions have no prediction and are not scored; the figures cover "
            f"only the predicted ones (--partial accepts that)",
            file=sys.stderr,
        )
        return EXIT_PARTIAL
    return EXIT_OK


def _score_conversations(args: argparse.Namespace, dataset: Dataset) -> int:
    try:
        report = score_sessions(
            dataset,
            read_interaction_predictions(args.predictions),
            timeout=args.timeout,
            keep_distinct=args.keep_distinct,
            workers=args.workers,
        )
    except (PredictionsFormatError, PredictionsMismatchError, FileNotFoundError) as exc:
        return _usage_error(exc)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(report.text(dataset.levels))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="macsql-evals", description="Scripted evals on Spider, BIRD, SParC and CoSQL"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    add_eval_arguments(sub.add_parser("eval", help="run a pipeline over a dataset"))
    add_score_arguments(sub.add_parser("score", help="score a predictions file"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return eval_main(args) if args.command == "eval" else score_main(args)


if __name__ == "__main__":
    raise SystemExit(main())
