"""A scripted MAC-SQL teacher over a whole Spider training file, for the fine-tuning benchmark.

It plays the Selector, the Decomposer and the Refiner through the OpenAI-compatible
`ScriptedOpenAIServer`, answering each item by a fixed schedule on its index, so that a full
run has every kind of call the export must judge:

- most items: the Decomposer answers the gold SQL;
- ``index % 10 == 1``: the Decomposer's SQL names a missing column and the Refiner repairs it;
- ``index % 50 == 8``: the same, but the Refiner repeats the broken SQL (the item fails);
- ``index % 20 == 3``: the Decomposer's SQL runs and answers wrongly;
- ``index % 40 == 5``: the Decomposer's first reply is cut off at the token limit
  (``finish_reason=length``) and the retry answers the gold SQL (a two-turn sample);
- the Selector keeps the gold tables plus one more, except for ``index % 9 == 4`` where it drops
  one gold table of a query over several.

Items are recognised by their database and question (``[Database]`` and the last ``[Question]``
of the prompt), so the file's repeated questions about other databases stay apart.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

from macsql.testing.scripted import ScriptedReply

BROKEN = "SELECT nope_xyz FROM sqlite_master"
WRONG = "SELECT 'not the answer'"
_DATABASE = re.compile(r"^\[Database\] (\S+)\s*$", re.MULTILINE)
_QUESTION = re.compile(r"^\[Question\] (.*)$", re.MULTILINE)


def schedule(index: int) -> str:
    """What the teacher does on item `index`."""
    if index % 50 == 8:
        return "unfixed"
    if index % 10 == 1:
        return "repaired"
    if index % 20 == 3:
        return "wrong"
    if index % 40 == 5:
        return "cut_off"
    return "gold"


def _tables_of(sql: str) -> list[str]:
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except Exception:  # sqlglot.ParseError, TokenError: the Selector then keeps everything
        return []
    return sorted({t.name for t in tree.find_all(exp.Table)})


class SpiderTrainTeacher:
    """The responder: ``teacher(prompt) -> reply`` for the scripted server."""

    def __init__(self, spider_dir: Path, question_file: str = "train_spider.json") -> None:
        records = json.loads((spider_dir / question_file).read_text(encoding="utf-8"))
        self.items: dict[tuple[str, str], tuple[int, str]] = {}
        for index, rec in enumerate(records):
            self.items.setdefault((rec["db_id"], rec["question"].strip()), (index, rec["query"]))
        schemas = json.loads((spider_dir / "tables.json").read_text(encoding="utf-8"))
        self.tables = {s["db_id"]: list(s["table_names_original"]) for s in schemas}
        self.unknown: list[str] = []

    def _item(self, prompt: str) -> tuple[int, str, str]:
        databases = _DATABASE.findall(prompt)
        questions = _QUESTION.findall(prompt)
        key = (databases[-1] if databases else "", questions[-1].strip() if questions else "")
        if key not in self.items:
            self.unknown.append(f"{key[0]}: {key[1]}")
            raise LookupError(key)
        index, gold = self.items[key]
        return index, gold, key[0]

    def __call__(self, prompt: str) -> str | ScriptedReply:
        index, gold, db_id = self._item(prompt)
        plan = schedule(index)
        if prompt.startswith("You are the Selector"):
            return self._select(index, gold, db_id)
        if prompt.startswith("You are the Decomposer"):
            if plan == "cut_off":
                if "stopped at the length limit" in prompt:
                    return f"```sql\n{gold}\n```"
                return ScriptedReply(
                    "Sub question 1: first the rows that matter\nSQL\n```sql\nSELECT",
                    finish_reason="length",
                )
            sql = {"repaired": BROKEN, "unfixed": BROKEN, "wrong": WRONG}.get(plan, gold)
            return f"Sub question 1: the answer\nSQL\n```sql\n{sql}\n```\nQuestion Solved."
        if prompt.startswith("You are the Refiner"):
            sql = BROKEN if plan == "unfixed" else gold
            return f"The column does not exist; the fix:\n```sql\n{sql}\n```"
        self.unknown.append(prompt[:80])
        raise LookupError(prompt[:80])

    def _select(self, index: int, gold: str, db_id: str) -> str:
        names = self.tables.get(db_id, [])
        lower = {n.lower(): n for n in names}
        keep = {lower[t.lower()] for t in _tables_of(gold) if t.lower() in lower}
        if index % 9 == 4 and len(keep) > 1:
            keep.discard(sorted(keep)[0])
        extra = [n for n in names if n not in keep][:1]
        keep |= set(extra)
        choice: dict[str, Any] = {n: "keep_all" if n in keep else "drop_all" for n in names}
        return f"```json\n{json.dumps(choice)}\n```"
