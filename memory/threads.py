"""Conversation threads whose saved state stays bounded: one checkpoint per thread.

LangGraph's savers keep every checkpoint of every step of every run, so a thread's saved state
grows with each turn (and held each step's rows). macsql's own savers keep only the newest
checkpoint of a thread: each time a run's step saves one at the top level, everything of the
thread older than its newest top-level checkpoint (checkpoints, pending writes, finished
subgraph runs) is deleted. "Older" is by checkpoint id, which LangGraph orders by time: saves
arrive out of order (a run's checkpoints are written in the background), so the checkpoint being
saved is not always the newest, and what is newer than it (an interrupt's pending write, say)
must stay. What
the newest holds is bounded by `close_turn` (`nodes.thread_turns`): the last turns, the input
and output keys, no rows. Time travel over a thread's history is therefore not available with
these savers; a run interrupted for approval still resumes (its checkpoint is the newest).

`list_threads` and `forget_thread` are what `macsql chat --threads` / `--forget` use.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, ChannelVersions, Checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver


def _top_level(config: RunnableConfig) -> bool:
    return not (config.get("configurable") or {}).get("checkpoint_ns")


class _KeepsNewest(BaseCheckpointSaver[Any]):
    """What every pruning saver does: after a top-level checkpoint is saved, `_prune` the
    thread; after writes are saved, `_after_writes` (writes that arrive for a checkpoint older
    than the newest belong to one already pruned)."""

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: Any,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        saved = super().put(config, checkpoint, metadata, new_versions)
        if _top_level(config):
            self._prune(str(saved["configurable"]["thread_id"]))
        return saved

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        super().put_writes(config, writes, task_id, task_path)
        self._after_writes(config)

    def _prune(self, thread: str) -> None:
        raise NotImplementedError

    def _after_writes(self, config: RunnableConfig) -> None:
        """Nothing by default: the saver's own `put` keeps the thread bounded."""


class PruningSqliteSaver(_KeepsNewest, SqliteSaver):
    """`SqliteSaver` that keeps only a thread's newest checkpoint."""

    def _after_writes(self, config: RunnableConfig) -> None:
        self._prune(str(config["configurable"]["thread_id"]))

    def _prune(self, thread: str) -> None:
        with self.cursor() as cur:
            newest = cur.execute(
                "SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = ? "
                "AND checkpoint_ns = ''",
                (thread,),
            ).fetchone()[0]
            if newest is None:
                return
            for table in ("checkpoints", "writes"):
                cur.execute(
                    f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_id < ?",
                    (thread, newest),
                )


class PruningInMemorySaver(_KeepsNewest, InMemorySaver):
    """`InMemorySaver` that keeps only a thread's newest checkpoint (the eval's threads)."""

    def _after_writes(self, config: RunnableConfig) -> None:
        thread = str(config["configurable"]["thread_id"])
        top = self.storage[thread].get("") if thread in self.storage else None
        if top and config["configurable"]["checkpoint_id"] < max(top):
            self._prune(thread)

    def _prune(self, thread_id: str) -> None:
        namespaces = self.storage[thread_id]
        top = namespaces.get("")
        if not top:
            return
        newest = max(top)
        for namespace in list(namespaces):
            for old in [c for c in namespaces[namespace] if c < newest]:
                del namespaces[namespace][old]
            if not namespaces[namespace]:
                del namespaces[namespace]
        for written in [k for k in self.writes if k[0] == thread_id and k[2] < newest]:
            del self.writes[written]
        referenced = {
            (namespace, channel, version)
            for namespace, checkpoints in namespaces.items()
            for stored, _metadata, _parent in checkpoints.values()
            for channel, version in self.serde.loads_typed(stored)["channel_versions"].items()
        }
        for blob in [k for k in self.blobs if k[0] == thread_id and k[1:] not in referenced]:
            del self.blobs[blob]


def pruning_postgres_saver() -> Any:
    """`PostgresSaver` that keeps only a thread's newest checkpoint (its own `prune`)."""
    from langgraph.checkpoint.postgres import PostgresSaver

    class PruningPostgresSaver(_KeepsNewest, PostgresSaver):
        def _prune(self, thread: str) -> None:
            self.prune([thread], strategy="keep_latest")

    return PruningPostgresSaver


@dataclass
class ThreadInfo:
    thread_id: str
    turns: int
    last_question: str
    updated: str
    """The newest checkpoint's time stamp (ISO 8601, UTC)."""
    saved_bytes: int
    """The size of the newest checkpoint as its saver serializes it."""


def list_threads(saver: BaseCheckpointSaver[Any]) -> list[ThreadInfo]:
    """Every thread in `saver`, newest first."""
    seen: dict[str, ThreadInfo] = {}
    for entry in _newest_first(saver):
        configurable = entry.config.get("configurable") or {}
        thread_id = str(configurable.get("thread_id") or "")
        if not thread_id or configurable.get("checkpoint_ns") or thread_id in seen:
            continue
        values = entry.checkpoint.get("channel_values") or {}
        turns = values.get("turns") or []
        last = turns[-1].get("question", "") if turns else str(values.get("asked") or "")
        seen[thread_id] = ThreadInfo(
            thread_id,
            len(turns),
            last,
            str(entry.checkpoint.get("ts") or ""),
            len(saver.serde.dumps_typed(entry.checkpoint)[1]),
        )
    return sorted(seen.values(), key=lambda t: t.updated, reverse=True)


def _newest_first(saver: BaseCheckpointSaver[Any]) -> Iterator[Any]:
    entries = list(saver.list(None))
    entries.sort(key=lambda e: str(e.checkpoint.get("ts") or ""), reverse=True)
    return iter(entries)


def forget_thread(saver: BaseCheckpointSaver[Any], thread_id: str) -> bool:
    """Delete a thread's saved state; False when the saver holds no such thread."""
    known = {t.thread_id for t in list_threads(saver)}
    if thread_id not in known:
        return False
    saver.delete_thread(thread_id)
    return True
