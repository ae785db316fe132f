"""What goes beside the exported samples: LLaMA-Factory's ``dataset_info.json`` and a dataset
card, ``README.md``, with the Hugging Face dataset-card header (licence, the files of each
layout as a config) and what a user needs to reproduce or serve the data: the teacher, the
macsql version and commit, the prompt-affecting settings, counts, lengths, the source licence.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from macsql.evals.sft_samples import Sample
from macsql.evals.sft_stats import PERCENTILES

SOURCE_DATA = {
    "spider": ("Spider 1.0 (Yu et al., 2018)", "cc-by-sa-4.0", "CC BY-SA 4.0"),
    "bird": ("BIRD (Li et al., 2023)", "cc-by-sa-4.0", "CC BY-SA 4.0"),
}

# LLaMA-Factory's description of each layout it reads (its data/README.md); prompt-completion
# (conversational prompt/completion lists) is TRL's and has no LLaMA-Factory entry.
_OPENAI_TAGS = {
    "role_tag": "role",
    "content_tag": "content",
    "user_tag": "user",
    "assistant_tag": "assistant",
    "system_tag": "system",
}
LLAMA_FACTORY: dict[str, dict[str, Any]] = {
    "chat": {"formatting": "sharegpt", "columns": {"messages": "messages"}, "tags": _OPENAI_TAGS},
    "openai": {
        "formatting": "sharegpt",
        "columns": {"messages": "messages"},
        "tags": _OPENAI_TAGS,
    },
    "sharegpt": {
        "formatting": "sharegpt",
        "columns": {"messages": "conversations"},
        "tags": {"system_tag": "system"},
    },
    "alpaca": {
        "columns": {
            "prompt": "instruction",
            "query": "input",
            "response": "output",
            "system": "system",
            "history": "history",
        }
    },
}


def dataset_name(stem: str, fmt: str, split: str) -> str:
    return f"macsql_{stem}_{fmt}".replace("-", "_") + ("" if split == "train" else "_val")


def write_dataset_info(folder: Path, stem: str, files: Mapping[str, Mapping[str, Path]]) -> Path:
    """Add this export's files to the folder's ``dataset_info.json`` (other entries are kept:
    LLaMA-Factory reads one such file per dataset folder)."""
    path = folder / "dataset_info.json"
    info: dict[str, Any] = {}
    if path.is_file():
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
            info = loaded if isinstance(loaded, dict) else {}
        except json.JSONDecodeError:
            info = {}
    for fmt, splits in files.items():
        if fmt not in LLAMA_FACTORY:
            continue
        for split, file in splits.items():
            info[dataset_name(stem, fmt, split)] = {"file_name": file.name, **LLAMA_FACTORY[fmt]}
    path.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return path


def _front_matter(licence: str, files: Mapping[str, Mapping[str, Path]]) -> list[str]:
    lines = [
        "---",
        f"license: {licence}",
        "language:",
        "- en",
        "task_categories:",
        "- text-generation",
        "tags:",
        "- text-to-sql",
        "- mac-sql",
        "- agent-instruction",
        "configs:",
    ]
    for fmt, splits in files.items():
        lines += [f"- config_name: {fmt}", "  data_files:"]
        for split, file in splits.items():
            lines += [f"  - split: {split}", f"    path: {file.name}"]
    return [*lines, "---", ""]


def _teachers(samples: Sequence[Sample]) -> str:
    by_agent: dict[str, Counter[str]] = {}
    for s in samples:
        by_agent.setdefault(s.agent, Counter())[s.model or "unknown"] += 1
    return "; ".join(
        f"{agent}: " + ", ".join(f"`{m}`" for m in models) for agent, models in by_agent.items()
    )


def _provenance_lines(history: Sequence[Mapping[str, Any]]) -> list[str]:
    if not history:
        return [
            "The run predates provenance records: its macsql version, commit and settings are "
            "unknown. Re-run the teacher with this version to know what the prompts were.",
            "",
        ]
    lines = []
    if len(history) > 1:
        lines += [
            f"**Warning:** the run was resumed {len(history) - 1} time(s) with a different "
            "version, commit or settings; its prompts do not all come from one setup.",
            "",
        ]
    for record in history:
        dirty = " (with uncommitted changes)" if record.get("git_dirty") else ""
        lines += [
            f"- macsql {record.get('macsql_version') or 'unknown'}, commit "
            f"`{record.get('git_commit') or 'unknown'}`{dirty}",
            f"- prompt templates: sha256 `{record.get('prompt_templates_sha256')}`",
            f"- teacher model: `{record.get('teacher_model')}`",
            "- prompt-affecting settings:",
            "",
            "```json",
            json.dumps(record.get("prompt_settings") or {}, indent=2, sort_keys=True),
            "```",
            "",
        ]
    return lines


def card_markdown(
    stats: Mapping[str, Any],
    samples: Sequence[Sample],
    files: Mapping[str, Mapping[str, Path]],
    provenance: Sequence[Mapping[str, Any]],
) -> str:
    dataset = str(stats.get("dataset"))
    source, licence, licence_name = SOURCE_DATA.get(dataset, (dataset, "other", "see the source"))
    lines = _front_matter(licence, files)
    lines += [
        f"# MAC-SQL agent-instruction data from {source} {stats.get('split')}",
        "",
        "Fine-tuning samples in the SQL-Llama recipe (MAC-SQL, Wang et al.): each sample is one "
        "agent call of a teacher running macsql's "
        f"`{stats.get('pipeline')}` pipeline, the messages exactly as sent, then the teacher's "
        "reply as the target. Written by `macsql export-sft`.",
        "",
        "## Teacher and prompts",
        "",
        f"Teacher model per agent (kept samples): {_teachers(samples) or 'none'}.",
        "",
        "A student serves best on prompts like those it was tuned on: serve it with the macsql "
        "commit and settings below.",
        "",
        *_provenance_lines(provenance),
        "## Files",
        "",
        "| layout | split | file |",
        "| --- | --- | --- |",
        *(
            f"| {fmt} | {split} | `{file.name}` |"
            for fmt, splits in files.items()
            for split, file in splits.items()
        ),
        "",
        "Every line but `openai`'s has a `metadata` field (agent, db_id, dataset, item, "
        "question_id, difficulty, split, relabelled) that trainers leave alone; `openai` keeps "
        "OpenAI's schema and has its metadata line for line in `.metadata.jsonl`. "
        "`dataset_info.json` registers the files for LLaMA-Factory.",
        "",
        f"Validation holds whole databases ({stats.get('validation_databases')} of them), none "
        "of which is in the training split.",
        "",
        "## Counts",
        "",
        "| agent | samples | train | validation | relabelled repairs | share of tokens |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for agent, e in stats["per_agent"].items():
        lines.append(
            f"| {agent} | {e['samples']:,} | {e['train']:,} | {e['validation']:,} | "
            f"{e['relabelled']:,} | {100 * e['share_of_tokens']:.1f}% |"
        )
    header = " | ".join(f"p{q}" for q in PERCENTILES)
    lines += [
        "",
        f"Sample length in tokens ({stats['tokenizer']}), every message's content:",
        "",
        f"| | {header} | max |",
        "| --- |" + " ---: |" * (len(PERCENTILES) + 1),
    ]
    for split in ("train", "validation"):
        p = stats["sample_tokens"][split]
        cells = " | ".join(f"{p[f'p{q}']:,}" for q in PERCENTILES)
        lines.append(f"| {split} | {cells} | {p['max']:,} |")
    lines += ["", "Calls not kept, by the first rule each broke:", ""]
    lines += [f"- {reason}: {e['count']:,}" for reason, e in stats["dropped"].items()] or ["- none"]
    lines += [
        "",
        "## Evaluation data kept out",
        "",
        f"No sample is about any of the {len(stats.get('eval_databases') or [])} evaluation "
        f"databases or asks any of the {stats.get('eval_questions_checked', 0):,} evaluation "
        "questions of "
        + (", ".join(f"`{Path(p).name}`" for p in stats.get("eval_sets_checked") or []) or "—")
        + "; none of its prompt lines is one of those questions.",
        "",
        "## Training",
        "",
        "The loss belongs on the reply only. `prompt-completion` gives that with TRL's "
        "SFTTrainer by default (`macsql train` uses it); multi-turn samples "
        f"({stats.get('multi_turn', 0):,} here: a retry after a cut-off reply, R^3's writer) "
        "carry earlier assistant turns that must not be trained: they are prompt in "
        "`prompt-completion`, `weight: 0` in `chat` and `openai`, and `history` in `alpaca` "
        "(LLaMA-Factory: set `mask_history: true`).",
        "",
        "## Licence",
        "",
        f"The questions, schemas and databases come from {source}, licensed {licence_name}; the "
        "samples keep that licence. The replies are the teacher model's outputs: its "
        "provider's terms may say what they may train.",
        "",
    ]
    return "\n".join(lines)


def write_card(
    folder: Path,
    stats: Mapping[str, Any],
    samples: Sequence[Sample],
    files: Mapping[str, Mapping[str, Path]],
    provenance: Sequence[Mapping[str, Any]],
) -> Path:
    path = folder / "README.md"
    path.write_text(card_markdown(stats, samples, files, provenance), encoding="utf-8")
    return path
