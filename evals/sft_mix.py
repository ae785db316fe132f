"""Mixing and length: which databases validate, how much of each agent is kept, how long a
sample may be.

- **One split for the whole run.** The validation databases are drawn from every database the
  run's items are about (a seeded order, whole databases, until they hold the share asked of
  the run's items), before any filter. So exports of the same run with other agents, ratios or
  lengths agree on which databases validate, and merged files never put a database on both
  sides.
- **Agent ratios.** ``selector=0.3`` keeps 30% of the Selector's samples; the choice of each
  sample is a seeded hash of its item and call, so it is the same in every export of the run.
- **Length.** A sample's length is the tokens of every message's content (a chat template adds
  a few per turn), counted by the tokenizer given, else estimated as ``ceil(UTF-8 bytes / 3)``.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable, Iterable, Mapping

from macsql.evals.sft_samples import Sample

TokenCounter = Callable[[str], int]
ESTIMATE = "estimate"
"""The tokenizer name of the estimate: ceil(UTF-8 bytes / 3)."""


class MixError(ValueError):
    """A mixing option cannot be read."""


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text.encode("utf-8")) / 3)


def sample_tokens(sample: Sample, count: TokenCounter) -> int:
    return sum(count(str(m.get("content") or "")) for m in sample.messages)


def validation_databases(items_per_db: Mapping[str, int], share: float, seed: int) -> set[str]:
    """Whole databases, in a seeded order, until they hold `share` of the items; at least one
    database stays for training."""
    if share <= 0 or not items_per_db:
        return set()
    order = sorted(items_per_db)
    random.Random(seed).shuffle(order)
    total = sum(items_per_db.values())
    chosen: set[str] = set()
    held = 0
    for db in order[:-1]:
        if held >= share * total:
            break
        chosen.add(db)
        held += items_per_db[db]
    return chosen


def parse_agent_ratios(text: str | None, known: Iterable[str]) -> dict[str, float]:
    """``selector=0.3,refiner=1`` -> {agent: share kept}; each share in (0, 1]."""
    ratios: dict[str, float] = {}
    names = set(known)
    for part in (text or "").split(","):
        if not part.strip():
            continue
        agent, sep, value = part.partition("=")
        agent = agent.strip()
        if not sep or agent not in names:
            choices = ", ".join(sorted(names))
            raise MixError(
                f"--agent-ratio takes AGENT=SHARE pairs with AGENT one of {choices}, "
                f"not {part.strip()!r}"
            )
        try:
            share = float(value)
        except ValueError:
            share = math.nan
        if not 0 < share <= 1:
            raise MixError(f"--agent-ratio {agent}: a share in (0, 1], not {value.strip()!r}")
        ratios[agent] = share
    return ratios


def kept_by_ratio(sample: Sample, ratios: Mapping[str, float], seed: int) -> bool:
    share = ratios.get(sample.agent)
    if share is None or share >= 1:
        return True
    key = f"{seed}:{sample.agent}:{sample.index}:{sample.call}".encode()
    draw = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") / 2**64
    return draw < share
