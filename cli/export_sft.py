"""The ``export-sft`` subcommand: a teacher's traced eval run as fine-tuning data."""

from __future__ import annotations

import argparse
import sys

from macsql.cli.numbers import number_in
from macsql.core.context import Agent
from macsql.evals.eval_sets import EvaluationDataError
from macsql.evals.sft_export import ExportError, ExportOptions, export_sft
from macsql.evals.sft_formats import FORMATS
from macsql.evals.sft_mix import MixError, parse_agent_ratios
from macsql.evals.sft_stats import stats_markdown


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", help="an eval run made with --traces")
    parser.add_argument("--out", required=True, metavar="FILE", help="the samples (JSON lines)")
    parser.add_argument(
        "--format",
        nargs="+",
        choices=[*FORMATS, "all"],
        default=["chat"],
        metavar="FORMAT",
        help=f"one or more of {', '.join(FORMATS)}, or all (default chat); with several, each "
        "file is FILE's stem plus .FORMAT",
    )
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
        help="keep only calls that led to a correct item (default; see docs/fine-tuning.md)",
    )
    parser.add_argument(
        "--split-by-db",
        type=number_in(float, 0, 1, below=True),
        default=0.0,
        metavar="SHARE",
        help="validation: whole databases holding this share of the run's items (FILE's .val "
        "sibling); the same databases whatever the other filters",
    )
    parser.add_argument(
        "--dedup",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="drop samples identical to an earlier one (default)",
    )
    parser.add_argument(
        "--seed",
        type=number_in(int, 0),
        default=0,
        help="seeds the validation databases and --agent-ratio",
    )
    parser.add_argument(
        "--data-dir", default=None, help="the dataset's folder, if it moved since the run"
    )
    parser.add_argument(
        "--eval-set",
        action="append",
        default=[],
        metavar="PATH",
        help="another evaluation set to keep out: a question file or a dataset folder "
        "(repeatable; the dev/test files beside the run's data are found without it)",
    )
    parser.add_argument(
        "--tokenizer",
        default=None,
        metavar="SPEC",
        help="hf:MODEL_OR_PATH (the student's tokenizer) or tiktoken:ENCODING for token counts; "
        "default: an estimate, ceil(UTF-8 bytes / 3)",
    )
    parser.add_argument(
        "--max-tokens",
        type=number_in(int, 1),
        default=None,
        metavar="N",
        help="drop (and count) samples longer than N tokens; MAC-SQL's authors dropped 5,000 "
        "and more: --max-tokens 4999",
    )
    parser.add_argument(
        "--agent-ratio",
        default=None,
        metavar="AGENT=SHARE,...",
        help="keep this share of an agent's samples (seeded), e.g. selector=0.3",
    )
    parser.add_argument(
        "--repairs-as-data",
        action="store_true",
        help="keep a Decomposer draft that a Refiner repaired (item correct) with the repaired "
        "SQL as its target (off by default, as in the paper)",
    )


def export_main(args: argparse.Namespace) -> int:
    try:
        ratios = parse_agent_ratios(args.agent_ratio, [a.value for a in Agent])
    except MixError as exc:
        print(f"macsql: error: {exc}", file=sys.stderr)
        return 2
    formats = list(FORMATS) if "all" in args.format else list(dict.fromkeys(args.format))
    options = ExportOptions(
        run_dir=args.run_dir,
        out=args.out,
        formats=formats,
        agents=args.agents,
        only_correct=args.only_correct,
        split_by_db=args.split_by_db,
        dedup=args.dedup,
        seed=args.seed,
        data_dir=args.data_dir,
        eval_sets=args.eval_set,
        tokenizer=args.tokenizer,
        max_tokens=args.max_tokens,
        agent_ratios=ratios,
        relabel_repairs=args.repairs_as_data,
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
            "macsql: warning: no evaluation set was found beside the run's data to keep out; "
            "pass --eval-set PATH (e.g. Spider's dev.json, BIRD's dev folder)",
            file=sys.stderr,
        )
    print(stats_markdown(result.stats), end="")
    written = [p for splits in result.files.values() for p in splits.values()]
    written += [*result.stats_paths, result.card_path, result.dataset_info_path]
    print("wrote " + ", ".join(str(p) for p in written))
    return 0
