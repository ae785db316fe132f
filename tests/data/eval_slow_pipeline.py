"""A stand-in pipeline for the runner tests: it answers each Spider question with its gold SQL
after a short sleep, and reports one Decomposer call.

Loaded by path, e.g. ``--pipeline tests/data/eval_slow_pipeline.py:graph``. The sleep is
``EVAL_FAKE_DELAY`` seconds (default 0.05).
"""

from __future__ import annotations

import asyncio
import json
import os
from functools import cache
from pathlib import Path
from typing import Any


@cache
def _gold_by_question(dev_json: str) -> dict[tuple[str, str], str]:
    records = json.loads(Path(dev_json).read_text(encoding="utf-8"))
    out: dict[tuple[str, str], str] = {}
    for rec in records:
        out.setdefault((rec["db_id"], rec["question"]), rec["query"])
    return out


class SlowGoldPipeline:
    async def ainvoke(self, payload: dict[str, Any], context: Any = None) -> dict[str, Any]:
        delay = float(os.environ.get("EVAL_FAKE_DELAY", "0.05"))
        await asyncio.sleep(delay)
        db = Path(payload["db"])
        dev_json = db.parents[2] / "dev.json"  # <root>/database/<db>/<db>.sqlite
        sql = _gold_by_question(str(dev_json))[(db.stem, payload["question"])]
        return {
            "sql": sql,
            "status": "ok",
            "attempts": 1,
            "selector_used": False,
            "usage": {
                "decomposer": {
                    "calls": 1,
                    "input_tokens": 100,
                    "output_tokens": 20,
                    "latency_s": delay,
                }
            },
        }


graph = SlowGoldPipeline()
