"""`kshot`: R^3's k-shot examples, the training questions most like the question, with their SQL
(`macsql.memory.examples` holds the pool and the similarity)."""

from __future__ import annotations

from langgraph.runtime import Runtime

from macsql.core.context import R3Context, context_of
from macsql.core.events import emit
from macsql.core.state import R3State
from macsql.memory.examples import selector_for


def kshot_node(state: R3State, runtime: Runtime[R3Context]) -> R3State:
    """Choose `k_shot` examples from `few_shot_pool`; nothing when either is unset."""
    context = context_of(runtime, R3Context)
    if context.k_shot <= 0 or not context.few_shot_pool:
        return {"few_shots": [], "few_shot_error": None}
    emit(runtime, "kshot", "start", k=context.k_shot, pool=context.few_shot_pool)
    try:
        selector = selector_for(context.few_shot_pool, context.few_shot_embeddings)
        chosen = selector.select(state.get("question") or "", context.k_shot)
    except Exception as exc:  # missing file, bad JSON, embeddings unreachable
        message = f"k-shot examples unavailable: {type(exc).__name__}: {exc}"
        emit(runtime, "kshot", "error", error=message)
        return {"few_shots": [], "few_shot_error": message}
    emit(runtime, "kshot", "done", questions=[e.question for e in chosen])
    return {"few_shots": [e.to_dict() for e in chosen], "few_shot_error": None}
