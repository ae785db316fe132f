"""Whether a run's figures measure a model, or only show that nothing could run.

A run in which most items got no SQL because the model could not be called (a server down, a
bad key, a wrong URL), or in which no item could run at all (every database missing), is not a
model with 0% accuracy: the command exits non-zero and names the most common cause, with its
count. `FailureWatch` stops a run early once its model calls keep failing, rather than spend
the whole dataset on the same error.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from macsql.llm.calls import is_model_failure

STOP_AFTER_MODEL_FAILURES = 10
"""Default for `EvalOptions.stop_after_failures`: consecutive items whose model call failed.
Ten is past any short blip that the client's own retries did not ride out, and small next to a
dataset (1,034 Spider dev items), so a dead endpoint costs seconds, not the run."""


class FailureWatch:
    """Counts finished items whose model call failed, in a row; trips at `limit` (0: never)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_a_row = 0
        self.tripped = False

    def see(self, record: Mapping[str, Any]) -> bool:
        """Note one finished item; True the moment the watch trips."""
        if record.get("status") == "skipped":
            return False
        if is_model_failure(record.get("error")) and not record.get("prediction"):
            self.in_a_row += 1
        else:
            self.in_a_row = 0
        if self.limit > 0 and not self.tripped and self.in_a_row >= self.limit:
            self.tripped = True
            return True
        return False

    @property
    def reason(self) -> str | None:
        if not self.tripped:
            return None
        return f"stopped early after {self.in_a_row} items in a row whose model call failed"


_INFRASTRUCTURE = ("item timed out", "TimeoutError")


def unpredicted(record: Mapping[str, Any]) -> bool:
    """An item that got no prediction for a reason outside the model's answer: its model call
    failed (a server down, a bad key, a timeout), the item ran out of time, or its database
    could not be reached. `--resume` runs such an item again."""
    if record.get("status") == "skipped" or record.get("prediction"):
        return False
    error = str(record.get("error") or "")
    return (
        is_model_failure(error)
        or error.startswith(_INFRASTRUCTURE)
        or record.get("outcome") == "database_error"
    )


def _most_common(texts: Sequence[str]) -> tuple[str, int]:
    lines = [(t.strip().splitlines() or [""])[0][:300] for t in texts]
    return Counter(lines).most_common(1)[0]


def run_problem(
    records: Sequence[Mapping[str, Any]],
    *,
    n_items: int,
    stopped: str | None = None,
) -> str | None:
    """One line saying why the run's figures do not measure the model, or None when they do.
    `n_items` is how many items the run was asked for; `stopped` the early stop's reason."""
    ran = [r for r in records if r.get("status") != "skipped"]
    skipped = [r for r in records if r.get("status") == "skipped"]
    no_sql = [r for r in ran if not r.get("prediction")]
    if stopped:
        cause = ""
        if no_sql:
            text, count = _most_common([str(r.get("error") or "no SQL") for r in no_sql])
            cause = f"; most common error ({count} of {len(ran)} items): {text}"
        left = n_items - len(records)
        return f"{stopped}, {left} of {n_items} items not run (fix it, then --resume){cause}"
    if not ran:
        if not skipped:
            return "no item was run"
        text, count = _most_common([str(r.get("detail") or "skipped") for r in skipped])
        return f"no item could run: all {len(skipped)} were skipped, e.g. {text} ({count} items)"
    if len(no_sql) * 2 > len(ran):
        text, count = _most_common([str(r.get("error") or "no SQL") for r in no_sql])
        return (
            f"{len(no_sql)} of {len(ran)} items got no SQL; most common error "
            f"({count} items): {text}"
        )
    return None
