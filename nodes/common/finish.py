"""`finish`: every run of every pipeline ends here, so its status says what the run came to.

While a run is in progress its status is 'running' (or 'paused' at an approval). A run that
executed SQL reports its best execution (`final_fields`); one that stopped before any SQL ran
(no SQL in any reply, the model unreachable, the SQL rejected) is 'failed', with the reason a
node gave or 'no SQL was executed'.
"""

from __future__ import annotations

from macsql.core.state import PipelineState
from macsql.nodes.common.executor import final_fields

NOTHING_RAN = "no SQL was executed"


def finish_node(state: PipelineState) -> PipelineState:
    if state.get("status") in ("ok", "failed"):
        return {}
    tries = state.get("tries") or []
    if tries:
        ended = final_fields(tries)
        if state.get("fatal"):  # why the run stopped matters more than the last try's error
            ended["error"] = state.get("error") or ended.get("error")
        return ended
    return {
        "status": "failed",
        "error": state.get("error") or NOTHING_RAN,
        "sql": "",
        "outcome": state.get("outcome") or "not_run",
        "columns": [],
        "rows": [],
    }
