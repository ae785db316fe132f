"""What one eval run is asked to do, and the `Context` its pipeline runs with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from macsql.core.context import Context, build_context
from macsql.database.statement_limits import statement_limits
from macsql.evals.run_health import STOP_AFTER_MODEL_FAILURES
from macsql.evals.scoring import Scorer


@dataclass
class EvalOptions:
    """Everything one eval run needs; the CLI fills it from its arguments."""

    dataset: str
    data_dir: str
    split: str = "dev"
    pipeline: str = "macsql"
    gold: bool = False
    limit: int | None = None
    concurrency: int = 8
    """Model requests in flight at most, over all processes. A few more items than that are in
    progress, so that their local work (SQL execution, scoring) overlaps the model's latency; in
    gold mode, with no model, it is the number of items in progress."""
    out: str = "runs/eval"
    resume: bool = False
    overwrite: bool = False
    timeout: float | None = None
    """Seconds per scoring query (official default: Spider 60, BIRD 30)."""
    keep_distinct: bool = False
    ves_iterations: int = 100
    """BIRD VES runs per query (official: 100); 0 turns VES off."""
    item_timeout: float | None = 900.0
    """Seconds one item's pipeline may take before it is recorded as failed."""
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    max_tries: int | None = None
    cache: str | None = None
    db_url: str | None = None
    progress: bool = True
    context_overrides: dict[str, Any] = field(default_factory=dict)
    processes: int = 1
    """Processes sharing the items. The pipelines are CPU-bound in Python between model calls,
    so one process saturates one core; more use more cores. Children are forked when this
    process runs no other thread (they then inherit the graph and any registered model);
    otherwise they are spawned, and the model must be a string a fresh process can resolve."""
    traces: bool = False
    """Record every agent call of every item (messages as sent, reply, usage, what followed)
    in ``traces.jsonl`` beside the results: a teacher's run for fine-tuning data."""

    previous_sql: str = "own"
    """SParC / CoSQL: what each follow-up's thread holds as the earlier turns' SQL: the model's
    own ('own', what a user gets) or the gold ('gold': teacher forcing, for diagnosis)."""

    stop_after_failures: int = STOP_AFTER_MODEL_FAILURES
    """Stop handing out items after this many in a row got no SQL because their model call
    failed (0: never); the run then exits non-zero and `--resume` continues it."""

    servers: tuple[str, ...] = ()
    """macsql servers (`macsql serve`, one database behind them) to run each item on instead of
    in this process: a background run per item, `concurrency` of them in flight."""
    server_token: str | None = None
    """Bearer token for servers started with `--auth token`."""
    server_retries: int = 3
    """Runs again, on a live server, of an item whose run was lost with its server process."""

    @property
    def mode(self) -> str:
        return "gold" if self.gold else self.pipeline

    def identity(self) -> dict[str, Any]:
        """What a resumed run must share with the run it continues."""
        identity: dict[str, Any] = {
            "dataset": self.dataset,
            "split": self.split,
            "mode": self.mode,
            "keep_distinct": self.keep_distinct,
        }
        if self.dataset in ("sparc", "cosql"):
            identity["previous_sql"] = self.previous_sql
        return identity

    def context(self) -> Context:
        """The Context every item runs with: the dataset's style, the model options, then the
        `--set` overrides (`build_context`, which the command line uses too)."""
        return build_context(
            model=self.model,
            base_url=self.base_url,
            api_key=self.api_key,
            max_try_times=self.max_tries,
            # SParC and CoSQL are Spider's databases and SQL style.
            dataset_style="bird" if self.dataset == "bird" else "spider",
            overrides=self.context_overrides,
        )

    def scorer(self, dataset_name: str, context: Context | None) -> Scorer:
        """The run's scorer, whose guard lists are extended as the pipeline's are."""
        return Scorer(
            dataset_name,
            timeout=self.timeout,
            keep_distinct=self.keep_distinct,
            allowed_functions=context.allowed_functions if context else (),
            allowed_relations=context.allowed_relations if context else (),
            limits=statement_limits(context) if context else None,
        )
