"""``macsql export-sft``: a teacher's traced eval run becomes fine-tuning data (SQL-Llama).

    macsql eval --dataset spider --split train --traces --out runs/teacher ...
    macsql export-sft runs/teacher --out data/sft.jsonl --split-by-db 0.1

Reads the run's ``run.json``, ``results.jsonl`` and ``traces.jsonl`` and the dataset's gold SQL;
writes the samples (`sft_samples` says which calls qualify), a validation file whose databases
are not in the training file, and the stats report (`sft_stats`). Refuses runs over an
evaluation set and samples that quote an evaluation question (`eval_sets`).
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from macsql.evals.datasets import DatasetError, DatasetName, load_dataset
from macsql.evals.eval_sets import (
    EvaluationDataError,
    QuoteFinder,
    check_training_split,
    evaluation_files,
    questions_of,
)
from macsql.evals.results import RESULTS_FILE, RUN_FILE, read_results
from macsql.evals.sft_formats import FORMATS
from macsql.evals.sft_samples import Drop, Sample, item_samples
from macsql.evals.sft_stats import (
    DEFAULT_TOKENIZER,
    TokenCounter,
    TokenizerError,
    build_stats,
    load_tokenizer,
    write_stats,
)
from macsql.evals.trace_file import TRACES_FILE, read_traces


class ExportError(ValueError):
    """The run cannot be exported: missing files, bad options, or evaluation data."""


@dataclass
class ExportOptions:
    run_dir: str
    out: str
    format: str = "chat"
    agents: list[str] | None = None
    """Only these agents' calls (None: every agent)."""
    only_correct: bool = True
    split_by_db: float = 0.0
    """The share of samples, by whole databases, that goes to the validation file."""
    dedup: bool = True
    seed: int = 0
    data_dir: str | None = None
    """The dataset's folder, when it moved since the run (default: the run's own)."""
    eval_sets: list[str] = field(default_factory=list)
    """More evaluation question files whose questions no prompt may quote."""
    tokenizer: str = DEFAULT_TOKENIZER


@dataclass
class ExportResult:
    train_path: Path
    validation_path: Path | None
    stats: dict[str, Any]
    stats_paths: tuple[Path, Path]
    train: list[Sample]
    validation: list[Sample]


def _read_run(run_dir: Path) -> dict[str, Any]:
    path = run_dir / RUN_FILE
    if not path.is_file():
        raise ExportError(f"{run_dir} holds no eval run ({RUN_FILE} is missing)")
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ExportError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(run, dict):
        raise ExportError(f"{path} is not a run file")
    return run


def _check_options(options: ExportOptions) -> None:
    if options.format not in FORMATS:
        raise ExportError(f"unknown format {options.format!r}: choose {', '.join(FORMATS)}")
    if not 0.0 <= options.split_by_db < 1.0:
        raise ExportError(f"--split-by-db takes a share in [0, 1), not {options.split_by_db}")


def split_by_database(
    samples: Sequence[Sample], share: float, seed: int
) -> tuple[list[Sample], list[Sample]]:
    """(train, validation): whole databases, in a seeded order, go to validation until it holds
    `share` of the samples; at least one database stays for training."""
    if share <= 0 or not samples:
        return list(samples), []
    per_db = Counter(s.db_id for s in samples)
    order = sorted(per_db)
    random.Random(seed).shuffle(order)
    chosen: set[str] = set()
    held = 0
    for db in order[:-1]:
        if held >= share * len(samples):
            break
        chosen.add(db)
        held += per_db[db]
    return [s for s in samples if s.db_id not in chosen], [s for s in samples if s.db_id in chosen]


def _deduplicate(samples: list[Sample]) -> None:
    seen: set[str] = set()
    for sample in samples:
        if sample.drop:
            continue
        key = json.dumps(sample.messages, sort_keys=True, ensure_ascii=False)
        if key in seen:
            sample.drop = Drop.DUPLICATE
        seen.add(key)


def _quote_finder(
    options: ExportOptions, dataset: str, data_dir: Path, own: list[str]
) -> QuoteFinder:
    files = [*evaluation_files(dataset, data_dir), *(Path(p) for p in options.eval_sets)]
    sources = {str(path): questions_of(path) for path in files}
    return QuoteFinder(sources, allowed=own)


def _refuse_quotes(samples: Sequence[Sample], finder: QuoteFinder) -> None:
    hits = []
    for sample in samples:
        text = "\n".join(str(m.get("content") or "") for m in sample.prompt)
        quote = finder.find(text)
        if quote is not None:
            hits.append((sample, quote))
    if hits:
        sample, quote = hits[0]
        raise EvaluationDataError(
            f"{len(hits)} prompts quote questions of an evaluation set, e.g. {quote.question!r} "
            f"({quote.source}) in a {sample.agent} prompt of item {sample.index}; fine-tuning "
            "data must come from training data only (Spider train_spider.json, BIRD train)"
        )


def _write_jsonl(path: Path, samples: Sequence[Sample], fmt: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for sample in samples:
            f.write(json.dumps(FORMATS[fmt](sample.messages), ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def _validation_path(out: Path) -> Path:
    suffix = out.suffix or ".jsonl"
    return out.with_name(f"{out.stem if out.suffix else out.name}.val{suffix}")


def export_sft(options: ExportOptions, *, count_tokens: TokenCounter | None = None) -> ExportResult:
    """Export a traced run; `count_tokens` replaces the tokenizer named in `options`."""
    _check_options(options)
    run_dir = Path(options.run_dir).expanduser()
    run = _read_run(run_dir)
    dataset_name, split = str(run.get("dataset")), str(run.get("split"))
    check_training_split(dataset_name, split)
    traces = read_traces(run_dir / TRACES_FILE)
    if not traces:
        raise ExportError(f"{run_dir} has no traces ({TRACES_FILE}): run the eval with --traces")
    results = read_results(run_dir / RESULTS_FILE, repair=False)
    run_options = run.get("options") or {}
    data_dir = Path(options.data_dir or run_options.get("data_dir") or "").expanduser()
    try:
        dataset = load_dataset(cast(DatasetName, dataset_name), data_dir, split)
    except DatasetError as exc:
        raise ExportError(f"cannot read the run's dataset (pass --data-dir): {exc}") from None
    gold = {item.index: item.gold_sql for item in dataset.items}
    finder = _quote_finder(options, dataset_name, data_dir, [i.question for i in dataset.items])

    wanted = set(options.agents) if options.agents else None
    calls: list[Sample] = []
    for index, trace in sorted(traces.items()):
        if index in results:
            calls += item_samples(
                trace,
                results[index],
                gold.get(index),
                agents=wanted,
                only_correct=options.only_correct,
            )
    if options.dedup:
        _deduplicate(calls)
    kept = [s for s in calls if not s.drop]
    _refuse_quotes(kept, finder)
    train, validation = split_by_database(kept, options.split_by_db, options.seed)

    out = Path(options.out).expanduser()
    _write_jsonl(out, train, options.format)
    validation_path = _validation_path(out) if options.split_by_db > 0 else None
    if validation_path is not None:
        _write_jsonl(validation_path, validation, options.format)

    tokenizer_error = None
    if count_tokens is None:
        try:
            count_tokens = load_tokenizer(options.tokenizer)
        except TokenizerError as exc:
            tokenizer_error = str(exc)
    traced = [results[i] for i in traces if i in results]
    stats = build_stats(
        calls,
        train,
        validation,
        tokenizer=options.tokenizer,
        count_tokens=count_tokens,
        tokenizer_error=tokenizer_error,
        about={
            "run_dir": str(run_dir),
            "dataset": dataset_name,
            "split": split,
            "pipeline": run.get("mode"),
            "format": options.format,
            "only_correct": options.only_correct,
            "dedup": options.dedup,
            "split_by_db": options.split_by_db,
            "items_traced": len(traced),
            "items_correct": sum(1 for r in traced if r.get("correct") is True),
            "eval_sets_checked": finder.sources,
            "eval_questions_checked": len(finder),
            "train_file": str(out),
            "validation_file": str(validation_path) if validation_path else None,
        },
    )
    stem = out.with_suffix("") if out.suffix else out
    return ExportResult(out, validation_path, stats, write_stats(stem, stats), train, validation)
