"""``macsql export-sft``: a teacher's traced eval run becomes fine-tuning data (SQL-Llama).

    macsql eval --dataset spider --split train --traces --out runs/teacher ...
    macsql export-sft runs/teacher --out data/sft.jsonl --format all --split-by-db 0.1

Reads the run's ``run.json``, ``results.jsonl`` and ``traces.jsonl`` and the dataset's gold SQL;
writes the samples in each layout asked (`sft_formats`; `sft_samples` says which calls qualify),
a validation file per layout whose databases are not in the training file (`sft_mix`), the
stats report (`sft_stats`), a dataset card and LLaMA-Factory's ``dataset_info.json``
(`sft_card`). Refuses runs over an evaluation split; drops, and counts, samples about an
evaluation database or question (`eval_sets`).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from macsql.evals.datasets import DatasetError, DatasetName, load_dataset
from macsql.evals.eval_sets import (
    EvaluationSets,
    check_training_split,
    evaluation_files_in,
    find_evaluation_files,
)
from macsql.evals.results import RESULTS_FILE, RUN_FILE, read_results
from macsql.evals.sft_card import write_card, write_dataset_info
from macsql.evals.sft_formats import FORMATS, SIDECAR_METADATA
from macsql.evals.sft_mix import (
    TokenCounter,
    estimate_tokens,
    kept_by_ratio,
    sample_tokens,
    validation_databases,
)
from macsql.evals.sft_samples import Drop, Sample, item_samples
from macsql.evals.sft_stats import TokenizerError, build_stats, load_tokenizer, write_stats
from macsql.evals.trace_file import TRACES_FILE, read_traces

ESTIMATE_LABEL = "estimated as ceil(UTF-8 bytes / 3), no tokenizer given"


class ExportError(ValueError):
    """The run cannot be exported: missing files, bad options."""


@dataclass
class ExportOptions:
    run_dir: str
    out: str
    formats: list[str] = field(default_factory=lambda: ["chat"])
    """Layouts to write (`sft_formats.FORMATS`); with several, each file is FILE's stem plus
    ``.<layout>``."""
    agents: list[str] | None = None
    """Only these agents' calls (None: every agent)."""
    only_correct: bool = True
    split_by_db: float = 0.0
    """The share of the run's items, by whole databases, whose samples go to validation."""
    dedup: bool = True
    seed: int = 0
    data_dir: str | None = None
    """The dataset's folder, when it moved since the run (default: the run's own)."""
    eval_sets: list[str] = field(default_factory=list)
    """More evaluation sets (question files or folders) to keep out."""
    tokenizer: str | None = None
    """``hf:NAME_OR_PATH`` or ``tiktoken:ENCODING``; None: the estimate (`sft_mix`)."""
    max_tokens: int | None = None
    """Drop samples longer than this many tokens."""
    agent_ratios: dict[str, float] = field(default_factory=dict)
    """Share of each agent's samples kept (seeded)."""
    relabel_repairs: bool = False
    """Keep repaired Decomposer drafts with the repaired SQL as their target."""


@dataclass
class ExportResult:
    files: dict[str, dict[str, Path]]
    """Layout -> split ("train", "validation") -> file."""
    stats: dict[str, Any]
    stats_paths: tuple[Path, Path]
    card_path: Path
    dataset_info_path: Path
    train: list[Sample]
    validation: list[Sample]

    @property
    def train_path(self) -> Path:
        return next(iter(self.files.values()))["train"]

    @property
    def validation_path(self) -> Path | None:
        return next(iter(self.files.values())).get("validation")


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
    unknown = [f for f in options.formats if f not in FORMATS]
    if unknown or not options.formats:
        raise ExportError(f"unknown format {unknown!r}: choose {', '.join(FORMATS)} or all")
    if not 0.0 <= options.split_by_db < 1.0:
        raise ExportError(f"--split-by-db takes a share in [0, 1), not {options.split_by_db}")
    if options.max_tokens is not None and options.max_tokens < 1:
        raise ExportError(f"--max-tokens takes a positive number, not {options.max_tokens}")


def _token_counter(options: ExportOptions) -> tuple[TokenCounter, str]:
    if not options.tokenizer:
        return estimate_tokens, ESTIMATE_LABEL
    try:
        return load_tokenizer(options.tokenizer), f"counted with `{options.tokenizer}`"
    except TokenizerError as exc:
        raise ExportError(str(exc)) from None


def _evaluation_sets(options: ExportOptions, dataset: str, data_dir: Path) -> EvaluationSets:
    files = find_evaluation_files(dataset, data_dir)
    for given in options.eval_sets:
        files += evaluation_files_in(Path(given).expanduser())
    unique = list(dict.fromkeys(p.resolve() for p in files))
    return EvaluationSets.load(unique)


def _guard(sample: Sample, sets: EvaluationSets) -> str | None:
    """The leak rule a sample breaks, before any other rule."""
    if sample.db_id in sets.databases:
        return Drop.EVAL_DATABASE
    if sets.has_question(sample.question):
        return Drop.EVAL_QUESTION
    if sets.quoted_question([str(m.get("content") or "") for m in sample.prompt]):
        return Drop.EVAL_QUESTION_QUOTED
    return None


def _deduplicate(samples: list[Sample]) -> None:
    seen: set[str] = set()
    for sample in samples:
        if sample.drop:
            continue
        key = json.dumps(sample.messages, sort_keys=True, ensure_ascii=False)
        if key in seen:
            sample.drop = Drop.DUPLICATE
        seen.add(key)


def _metadata(sample: Sample, dataset: str, split: str) -> dict[str, Any]:
    return {
        "agent": sample.agent,
        "db_id": sample.db_id,
        "dataset": dataset,
        "item": sample.index,
        "question_id": sample.question_id,
        "difficulty": sample.level if sample.level and sample.level != "unknown" else None,
        "split": split,
        "relabelled": sample.relabelled,
    }


def _paths(out: Path, formats: Sequence[str], validation: bool) -> dict[str, dict[str, Path]]:
    suffix = out.suffix or ".jsonl"
    stem = out.stem if out.suffix else out.name
    files: dict[str, dict[str, Path]] = {}
    for fmt in formats:
        base = stem if len(formats) == 1 else f"{stem}.{fmt}"
        files[fmt] = {"train": out.with_name(f"{base}{suffix}")}
        if validation:
            files[fmt]["validation"] = out.with_name(f"{base}.val{suffix}")
    return files


def _write_jsonl(path: Path, lines: Iterable[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def _write_layout(
    fmt: str, path: Path, samples: Sequence[Sample], dataset: str, split: str
) -> None:
    layout = FORMATS[fmt]
    metas = [_metadata(s, dataset, split) for s in samples]
    if fmt in SIDECAR_METADATA:
        _write_jsonl(path, (layout(s.messages, None) for s in samples))
        _write_jsonl(path.with_name(path.stem + ".metadata" + path.suffix), metas)
    else:
        _write_jsonl(path, (layout(s.messages, m) for s, m in zip(samples, metas, strict=True)))


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
    if count_tokens is None:
        count_tokens, tokenizer_label = _token_counter(options)
    else:
        tokenizer_label = "counted with the caller's tokenizer"
    gold = {item.index: item.gold_sql for item in dataset.items}
    sets = _evaluation_sets(options, dataset_name, data_dir)
    validation_dbs = validation_databases(
        Counter(str(r.get("db_id")) for r in results.values()), options.split_by_db, options.seed
    )

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
                relabel_repairs=options.relabel_repairs,
            )
    for sample in calls:
        sample.drop = _guard(sample, sets) or sample.drop
        if not sample.drop and not kept_by_ratio(sample, options.agent_ratios, options.seed):
            sample.drop = Drop.DOWNSAMPLED
        if not sample.drop:
            sample.tokens = sample_tokens(sample, count_tokens)
            sample.reply_tokens = count_tokens(sample.reply)
            if options.max_tokens is not None and sample.tokens > options.max_tokens:
                sample.drop = Drop.TOO_LONG
    if options.dedup:
        _deduplicate(calls)
    kept = [s for s in calls if not s.drop]
    train = [s for s in kept if s.db_id not in validation_dbs]
    validation = [s for s in kept if s.db_id in validation_dbs]

    out = Path(options.out).expanduser()
    files = _paths(out, options.formats, options.split_by_db > 0)
    for fmt, paths in files.items():
        _write_layout(fmt, paths["train"], train, dataset_name, "train")
        if "validation" in paths:
            _write_layout(fmt, paths["validation"], validation, dataset_name, "validation")

    traced = [results[i] for i in traces if i in results]
    stats = build_stats(
        calls,
        train,
        validation,
        tokenizer=tokenizer_label,
        about={
            "run_dir": str(run_dir),
            "dataset": dataset_name,
            "split": split,
            "pipeline": run.get("mode"),
            "formats": list(options.formats),
            "only_correct": options.only_correct,
            "dedup": options.dedup,
            "split_by_db": options.split_by_db,
            "seed": options.seed,
            "max_tokens": options.max_tokens,
            "agent_ratios": dict(options.agent_ratios),
            "relabel_repairs": options.relabel_repairs,
            "items_traced": len(traced),
            "items_correct": sum(1 for r in traced if r.get("correct") is True),
            "eval_sets_checked": sets.sources,
            "eval_databases": sorted(sets.databases),
            "eval_questions_checked": len(sets.questions),
            "validation_database_ids": sorted({s.db_id for s in validation}),
            "files": {f: {k: str(v) for k, v in p.items()} for f, p in files.items()},
        },
    )
    stem = out.with_suffix("") if out.suffix else out
    stats_paths = write_stats(stem, stats)
    provenance = run.get("provenance") if isinstance(run.get("provenance"), list) else []
    card = write_card(out.parent, stats, kept, files, provenance or [])
    info = write_dataset_info(out.parent, stem.name, files)
    return ExportResult(files, stats, stats_paths, card, info, train, validation)
