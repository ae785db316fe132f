"""Benchmark: how often the follow-up rule (`macsql.replies.follow_ups`) flags a question.

Run: python benchmarks/bench_follow_up_cues.py

A question asked on a thread with no history gets a note when it reads like a follow-up. The
note must not fire on standalone questions: this prints how many Spider dev questions and how
many first questions of SParC dev conversations the rule flags (both standalone), and how many
of SParC's later questions (most of which lean on an earlier one) it flags, with examples.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from macsql.replies.follow_ups import follow_up_cue

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("MACSQL_DATA_DIR", ROOT.parent / "shared" / "data"))


def main() -> None:
    spider = [item["question"] for item in json.loads((DATA / "spider/dev.json").read_text())]
    sparc = json.loads((DATA / "sparc/dev.json").read_text())
    first = [i["interaction"][0]["utterance"] for i in sparc]
    later = [turn["utterance"] for i in sparc for turn in i["interaction"][1:]]
    for label, questions in (
        ("Spider dev questions (standalone)", spider),
        ("SParC dev first questions (standalone)", first),
        ("SParC dev later questions", later),
    ):
        flagged = [(q, follow_up_cue(q)) for q in questions if follow_up_cue(q) is not None]
        print(f"{label}: {len(flagged)} of {len(questions)} flagged")
        for question, cue in flagged[:3]:
            print(f"    {cue!r}: {question}")


if __name__ == "__main__":
    main()
