"""Where `macsql ask` keeps a run that waits for approval, so a later `ask --thread ID` resumes it.

The run's state is LangGraph's checkpoint (a SQLite file in macsql's cache directory, or
`--state-url`); beside it, in the same file's store, the question and the settings it was asked
with, so that the resumed run uses the same pipeline, database and models without repeating
them. The API key is never kept: it comes from the environment or `--api-key` again.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from macsql.core.context import Context
from macsql.database.cache_paths import cache_root

_NAMESPACE = ("macsql", "ask", "threads")
_NOT_KEPT = ("api_key",)


def default_state_url() -> str:
    return str(cache_root() / "ask.sqlite")


@dataclass
class AskedOnThread:
    """What an `ask` on a thread was: enough to resume it in another process."""

    question: str
    db: str
    pipeline: str
    evidence: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    """The Context fields that differ from the defaults (never the API key)."""
    cache: str | None = None
    asked_at: float = field(default_factory=time.time)

    def context(self) -> Context:
        return Context(**self.settings)


def changed_settings(context: Context) -> dict[str, Any]:
    """`context`'s fields that differ from a default Context, as JSON values."""
    default = Context()
    return {
        f.name: list(value) if isinstance(value, tuple) else value
        for f in fields(Context)
        if f.name not in _NOT_KEPT
        and (value := getattr(context, f.name)) != getattr(default, f.name)
    }


def remember(store: Any, thread: str, asked: AskedOnThread) -> None:
    store.put(_NAMESPACE, thread, asdict(asked))


def recall(store: Any, thread: str) -> AskedOnThread | None:
    item = store.get(_NAMESPACE, thread)
    if item is None:
        return None
    known = {f.name for f in fields(AskedOnThread)}
    return AskedOnThread(**{k: v for k, v in dict(item.value).items() if k in known})
