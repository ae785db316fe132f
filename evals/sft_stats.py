"""The export's report: samples per agent, prompt and reply lengths in tokens, what each rule
dropped. Written as JSON and as Markdown beside the samples.

Tokens are counted with tiktoken (``tiktoken:o200k_base`` by default) or with a model's own
tokenizer (``hf:NAME_OR_PATH``, through transformers). tiktoken downloads its encodings once;
offline and without them, the report says why tokens are missing and still gives characters.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from macsql.evals.sft_samples import Sample

TokenCounter = Callable[[str], int]
DEFAULT_TOKENIZER = "tiktoken:o200k_base"


class TokenizerError(RuntimeError):
    """The tokenizer could not be loaded."""


def load_tokenizer(spec: str) -> TokenCounter:
    """A token counter from ``tiktoken:ENCODING`` or ``hf:NAME_OR_PATH``."""
    kind, _, name = spec.partition(":")
    try:
        if kind == "tiktoken":
            import tiktoken

            encoding = tiktoken.get_encoding(name or "o200k_base")
            return lambda text: len(encoding.encode(text, disallowed_special=()))
        if kind == "hf":
            from transformers import AutoTokenizer  # type: ignore[import-not-found]

            tokenizer = AutoTokenizer.from_pretrained(name)
            return lambda text: len(tokenizer.encode(text, add_special_tokens=False))
    except Exception as exc:  # no network for the encoding, no transformers, unknown name
        first = (str(exc).strip().splitlines() or [""])[0].split(" (Caused by")[0][:160]
        raise TokenizerError(
            f"cannot load tokenizer {spec!r} ({type(exc).__name__}: {first})"
        ) from None
    raise TokenizerError(f"tokenizer {spec!r}: use tiktoken:ENCODING or hf:NAME_OR_PATH")


def _prompt_text(sample: Sample) -> str:
    return "\n".join(str(m.get("content") or "") for m in sample.prompt)


def _spread(values: Sequence[int]) -> dict[str, float]:
    if not values:
        return {"total": 0, "mean": 0.0, "median": 0.0, "max": 0}
    return {
        "total": sum(values),
        "mean": round(statistics.fmean(values), 1),
        "median": float(statistics.median(values)),
        "max": max(values),
    }


def build_stats(
    calls: Sequence[Sample],
    train: Sequence[Sample],
    validation: Sequence[Sample],
    *,
    tokenizer: str,
    count_tokens: TokenCounter | None,
    tokenizer_error: str | None,
    about: dict[str, Any],
) -> dict[str, Any]:
    """The report over every call considered (`calls`, drop reasons set) and the kept samples."""
    kept = [*train, *validation]
    dropped = Counter(s.drop for s in calls if s.drop)
    per_agent: dict[str, dict[str, Any]] = {}
    for agent in sorted({s.agent for s in calls}):
        mine = [s for s in kept if s.agent == agent]
        entry: dict[str, Any] = {
            "calls": sum(1 for s in calls if s.agent == agent),
            "samples": len(mine),
            "train": sum(1 for s in train if s.agent == agent),
            "validation": sum(1 for s in validation if s.agent == agent),
            "prompt_chars": _spread([len(_prompt_text(s)) for s in mine]),
            "reply_chars": _spread([len(s.reply) for s in mine]),
        }
        entry["teacher_input_tokens"] = _spread(
            [int(s.usage.get("input_tokens") or 0) for s in mine]
        )
        entry["teacher_output_tokens"] = _spread(
            [int(s.usage.get("output_tokens") or 0) for s in mine]
        )
        if count_tokens is not None:
            entry["prompt_tokens"] = _spread([count_tokens(_prompt_text(s)) for s in mine])
            entry["reply_tokens"] = _spread([count_tokens(s.reply) for s in mine])
        per_agent[agent] = entry
    total = len(calls)
    return {
        **about,
        "tokenizer": tokenizer if count_tokens is not None else None,
        "tokenizer_error": tokenizer_error,
        "calls": total,
        "samples": len(kept),
        "train": len(train),
        "validation": len(validation),
        "train_databases": len({s.db_id for s in train}),
        "validation_databases": len({s.db_id for s in validation}),
        "per_agent": per_agent,
        "dropped": {
            reason: {"count": n, "share": round(n / total, 4) if total else 0.0}
            for reason, n in sorted(dropped.items())
        },
    }


def _databases(n: int) -> str:
    return f"{n} database" + ("" if n == 1 else "s")


def stats_markdown(stats: dict[str, Any]) -> str:
    tokens = stats.get("tokenizer")
    unit = "tokens" if tokens else "chars"
    lines = [
        "# Fine-tuning export",
        "",
        f"Run `{stats.get('run_dir')}` ({stats.get('dataset')} {stats.get('split')}, "
        f"pipeline {stats.get('pipeline')}), format `{stats.get('format')}`.",
        "",
        f"{stats['calls']} agent calls from {stats.get('items_traced')} traced items "
        f"({stats.get('items_correct')} correct) → {stats['samples']} samples: "
        f"{stats['train']} train ({_databases(stats['train_databases'])}), "
        f"{stats['validation']} validation ({_databases(stats['validation_databases'])}).",
        "",
        f"| agent | calls | samples | train | validation | prompt {unit} (mean / max) "
        f"| reply {unit} (mean / max) | teacher's tokens in / out (mean) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for agent, entry in stats["per_agent"].items():
        prompt, reply = entry[f"prompt_{unit}"], entry[f"reply_{unit}"]
        t_in, t_out = entry["teacher_input_tokens"], entry["teacher_output_tokens"]
        lines.append(
            f"| {agent} | {entry['calls']} | {entry['samples']} | {entry['train']} | "
            f"{entry['validation']} | {prompt['mean']:g} / {prompt['max']:g} | "
            f"{reply['mean']:g} / {reply['max']:g} | {t_in['mean']:g} / {t_out['mean']:g} |"
        )
    lines += ["", "| dropped by | calls | share of calls |", "| --- | ---: | ---: |"]
    for reason, entry in stats["dropped"].items():
        lines.append(f"| {reason} | {entry['count']} | {100 * entry['share']:.1f}% |")
    lines.append("")
    lines.append(
        f"Tokens counted with `{tokens}`."
        if tokens
        else f"Tokens not counted: {stats.get('tokenizer_error')}; lengths are in characters."
    )
    lines.append("The teacher's tokens are the usage its server reported for the kept calls.")
    checked = ", ".join(f"`{p}`" for p in stats.get("eval_sets_checked") or []) or "none found"
    lines.append(
        f"No kept prompt quotes any of {stats.get('eval_questions_checked', 0)} evaluation "
        f"questions ({checked})."
    )
    return "\n".join(lines) + "\n"


def write_stats(stem: Path, stats: dict[str, Any]) -> tuple[Path, Path]:
    json_path = stem.with_name(stem.name + ".stats.json")
    md_path = stem.with_name(stem.name + ".stats.md")
    json_path.write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    md_path.write_text(stats_markdown(stats), encoding="utf-8")
    return json_path, md_path
