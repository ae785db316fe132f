"""The export's report: samples per agent and split, lengths in tokens with percentiles, what
each rule dropped. Written as JSON and as Markdown beside the samples.

Tokens are counted with the tokenizer given (``hf:NAME_OR_PATH`` through transformers, the
student's own; ``tiktoken:ENCODING``), else estimated (`sft_mix.estimate_tokens`): the report
names which.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from macsql.evals.sft_mix import TokenCounter
from macsql.evals.sft_samples import Sample

PERCENTILES = (50, 90, 95, 99)


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
            from transformers import AutoTokenizer

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


def percentile(values: Sequence[int], p: float) -> int:
    """The nearest-rank percentile (0 for no values)."""
    if not values:
        return 0
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))  # ceil
    return ordered[int(rank) - 1]


def _spread(values: Sequence[int]) -> dict[str, float]:
    if not values:
        return {"total": 0, "mean": 0.0, "median": 0.0, "max": 0}
    return {
        "total": sum(values),
        "mean": round(statistics.fmean(values), 1),
        "median": float(statistics.median(values)),
        "max": max(values),
    }


def _percentiles(values: Sequence[int]) -> dict[str, int]:
    return {**{f"p{p}": percentile(values, p) for p in PERCENTILES}, "max": max(values, default=0)}


def build_stats(
    calls: Sequence[Sample],
    train: Sequence[Sample],
    validation: Sequence[Sample],
    *,
    tokenizer: str,
    about: dict[str, Any],
) -> dict[str, Any]:
    """The report over every call considered (`calls`, drop reasons set) and the kept samples
    (their `tokens` and `reply_tokens` set)."""
    kept = [*train, *validation]
    dropped = Counter(s.drop for s in calls if s.drop)
    per_agent: dict[str, dict[str, Any]] = {}
    for agent in sorted({s.agent for s in calls}):
        mine = [s for s in kept if s.agent == agent]
        per_agent[agent] = {
            "calls": sum(1 for s in calls if s.agent == agent),
            "samples": len(mine),
            "train": sum(1 for s in train if s.agent == agent),
            "validation": sum(1 for s in validation if s.agent == agent),
            "relabelled": sum(1 for s in mine if s.relabelled),
            "prompt_chars": _spread([len(_prompt_text(s)) for s in mine]),
            "reply_chars": _spread([len(s.reply) for s in mine]),
            "prompt_tokens": _spread([s.tokens - s.reply_tokens for s in mine]),
            "reply_tokens": _spread([s.reply_tokens for s in mine]),
            "sample_tokens": _percentiles([s.tokens for s in mine]),
            "share_of_tokens": 0.0,
            "teacher_input_tokens": _spread([int(s.usage.get("input_tokens") or 0) for s in mine]),
            "teacher_output_tokens": _spread(
                [int(s.usage.get("output_tokens") or 0) for s in mine]
            ),
        }
    all_tokens = sum(s.tokens for s in kept)
    for agent, entry in per_agent.items():
        mine_tokens = sum(s.tokens for s in kept if s.agent == agent)
        entry["share_of_tokens"] = round(mine_tokens / all_tokens, 4) if all_tokens else 0.0
    total = len(calls)
    return {
        **about,
        "tokenizer": tokenizer,
        "calls": total,
        "samples": len(kept),
        "train": len(train),
        "validation": len(validation),
        "train_databases": len({s.db_id for s in train}),
        "validation_databases": len({s.db_id for s in validation}),
        "relabelled": sum(1 for s in kept if s.relabelled),
        "multi_turn": sum(1 for s in kept if sum(m["role"] == "assistant" for m in s.messages) > 1),
        "sample_tokens": {
            "train": _percentiles([s.tokens for s in train]),
            "validation": _percentiles([s.tokens for s in validation]),
            "all": _percentiles([s.tokens for s in kept]),
        },
        "per_agent": per_agent,
        "dropped": {
            reason: {"count": n, "share": round(n / total, 4) if total else 0.0}
            for reason, n in sorted(dropped.items())
        },
    }


def _databases(n: int) -> str:
    return f"{n} database" + ("" if n == 1 else "s")


def _tokens_row(name: str, p: dict[str, int]) -> str:
    cells = " | ".join(f"{p[f'p{q}']:,}" for q in PERCENTILES)
    return f"| {name} | {cells} | {p['max']:,} |"


def stats_markdown(stats: dict[str, Any]) -> str:
    lines = [
        "# Fine-tuning export",
        "",
        f"Run `{stats.get('run_dir')}` ({stats.get('dataset')} {stats.get('split')}, "
        f"pipeline {stats.get('pipeline')}), formats {', '.join(stats.get('formats') or [])}.",
        "",
        f"{stats['calls']:,} agent calls from {stats.get('items_traced'):,} traced items "
        f"({stats.get('items_correct'):,} correct) → {stats['samples']:,} samples: "
        f"{stats['train']:,} train ({_databases(stats['train_databases'])}), "
        f"{stats['validation']:,} validation ({_databases(stats['validation_databases'])}).",
        "",
        "| agent | calls | samples | train | validation | relabelled | prompt tokens (mean / max) "
        "| reply tokens (mean / max) | share of tokens |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for agent, e in stats["per_agent"].items():
        prompt, reply = e["prompt_tokens"], e["reply_tokens"]
        lines.append(
            f"| {agent} | {e['calls']:,} | {e['samples']:,} | {e['train']:,} | "
            f"{e['validation']:,} | {e['relabelled']:,} | {prompt['mean']:g} / {prompt['max']:g} "
            f"| {reply['mean']:g} / {reply['max']:g} | {100 * e['share_of_tokens']:.1f}% |"
        )
    header = " | ".join(f"p{q}" for q in PERCENTILES)
    lines += ["", f"| sample tokens | {header} | max |", "| --- |" + " ---: |" * 5]
    for split in ("train", "validation", "all"):
        lines.append(_tokens_row(split, stats["sample_tokens"][split]))
    for agent, e in stats["per_agent"].items():
        if e["samples"]:
            lines.append(_tokens_row(agent, e["sample_tokens"]))
    lines += ["", "| dropped by | calls | share of calls |", "| --- | ---: | ---: |"]
    for reason, entry in stats["dropped"].items():
        lines.append(f"| {reason} | {entry['count']:,} | {100 * entry['share']:.1f}% |")
    lines += [
        "",
        f"Tokens: {stats['tokenizer']}.",
        f"Evaluation data checked: {len(stats.get('eval_databases') or [])} databases and "
        f"{stats.get('eval_questions_checked', 0):,} questions from "
        + (", ".join(f"`{p}`" for p in stats.get("eval_sets_checked") or []) or "no file found")
        + ".",
    ]
    return "\n".join(lines) + "\n"


def write_stats(stem: Path, stats: dict[str, Any]) -> tuple[Path, Path]:
    json_path = stem.with_name(stem.name + ".stats.json")
    md_path = stem.with_name(stem.name + ".stats.md")
    json_path.write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    md_path.write_text(stats_markdown(stats), encoding="utf-8")
    return json_path, md_path
