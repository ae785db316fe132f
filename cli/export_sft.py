"""The ``export-sft`` subcommand: a teacher's traced eval run as fine-tuning data."""

from __future__ import annotations

import argparse
import sys

from macsql.core.context import Agent
from macsql.evals.eval_sets import EvaluationDataError
from macsql.evals.sft_export import ExportError, ExportOptions, export_sft
from macsql.evals.sft_formats import FORMATS
from macsql.evals.sft_stats import DEFAULT_TOKENIZER, stats_markdown


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", help="an eval run made with --traces")
    parser.add_argument("--out", required=True, metavar="FILE", help="the samples (JSON lines)")
    parser.add_argument("--format", choices=sorted(FORMATS), default="chat")
    parser.add_argument(
        "--agents",
        nargs="+",
        choices=[a.value for a in Agent],
        default=None,
        metavar="AGENT",
        help="only these agents' calls, e.g. --agents decomposer refiner (default: all)",
    )
    parser.add_argument(
        "--only-correct",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep only calls that led to a correct item (default; see the README's rules)",
    )
    parser.add_argument(
        "--split-by-db",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="put this share of the samples, by whole databases, in FILE's .val sibling",
    )
    parser.add_argument(
        "--dedup",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="drop samples identical to an earlier one (default)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="orders the databases for --split-by-db"
    )
    parser.add_argument(
        "--data-dir", default=None, help="the dataset's folder, if it moved since the run"
    )
    parser.add_argument(
        "--eval-set",
        action="append",
        default=[],
        metavar="FILE",
        help="another evaluation question file no prompt may quote (repeatable)",
    )
    parser.add_argument(
        "--tokenizer",
        default=DEFAULT_TOKENIZER,
        help="tiktoken:ENCODING or hf:MODEL for the token counts (default tiktoken:o200k_base)",
    )


def export_main(args: argparse.Namespace) -> int:
    options = ExportOptions(
        run_dir=args.run_dir,
        out=args.out,
        format=args.format,
        agents=args.agents,
        only_correct=args.only_correct,
        split_by_db=args.split_by_db,
        dedup=args.dedup,
        seed=args.seed,
        data_dir=args.data_dir,
        eval_sets=args.eval_set,
        tokenizer=args.tokenizer,
    )
    try:
        result = export_sft(options)
    except EvaluationDataError as exc:
        print(f"macsql: refused: {exc}", file=sys.stderr)
        return 2
    except (ExportError, OSError) as exc:  # OSError: the output cannot be written
        print(f"macsql: error: {exc}", file=sys.stderr)
        return 2
    if not result.stats["eval_sets_checked"]:
        print(
            "macsql: warning: no evaluation question file was found beside the run's data to "
            "check the prompts against; pass --eval-set FILE (e.g. Spider dev.json, BIRD dev.json)",
            file=sys.stderr,
        )
    print(stats_markdown(result.stats), end="")
    written = [result.train_path, result.validation_path, *result.stats_paths]
    print("wrote " + ", ".join(str(p) for p in written if p is not None))
    return 0
