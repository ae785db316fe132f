"""Benchmark: reading a model's reply, on the path of every question (issue 24).

Run: python benchmarks/bench_replies.py [--reader old.py] [--bird]

Writes one reply per Spider dev gold query in each of six layouts (the papers' sub-question
fences; a fenced draft then the final query on a `Final answer:` line; an `<answer>` tag; a
`Query:` label with prose after; a JSON answer; a `<think>` block then bare SQL), so that every
reply is new, and times `read_sql` on each, in CPU time (the process's, so that other work on a
shared machine does not count). "cold" clears the reader's caches (and the guard's parse cache)
before every reply; "warm" reads every reply a second time. `--reader` times another
module's `read_sql` on the same replies (e.g. the reader of an earlier commit:
`git show <commit>:replies/reader.py > /tmp/old_replies.py`). It also prints how many replies
each reader read right (the query it returns is the gold query), and the time of the worst case
the reader bounds: a long reply of prose about SQL.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SPIDER = Path(os.environ.get("MACSQL_DATA_DIR", ROOT.parent / "shared" / "data")) / "spider"
DRAFT = "SELECT count(*) FROM reasoning_draft"

LAYOUTS: dict[str, Callable[[str], str]] = {
    "papers": lambda q: (
        f"Sub question 1: the rows\nSQL\n```sql\n{DRAFT}\n```\n"
        f"Sub question 2: the answer\nSQL\n```sql\n{q}\n```\nQuestion Solved."
    ),
    "draft_then_final": lambda q: f"First try:\n```sql\n{DRAFT}\n```\nFinal answer:\n{q}",
    "answer_tag": lambda q: f"Let me think about the joins.\n<answer>\n{q}\n</answer>",
    "label_prose": lambda q: f"Query: {q} -- it reads the tables the question needs.\nDone.",
    "json": lambda q: json.dumps({"reasoning": "join, then filter", "answer": q}),
    "think_bare": lambda q: f"<think>Maybe {DRAFT}? No.</think>\n{q}",
}


def _load(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("other_reader", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _clear_caches() -> None:
    from macsql.database import guard
    from macsql.replies import finder as sql_finder
    from macsql.replies import spans as sql_spans

    for cached in (sql_finder._find, sql_spans.parse_span, sql_spans.statements):
        cached.cache_clear()
    guard._cached_verdict.cache_clear()


def _time(read: Callable[[str, str], Any], replies: list[str], cold: bool) -> list[float]:
    times = []
    for reply in replies:
        if cold:
            _clear_caches()
        started = time.process_time_ns()
        read(reply, "sqlite")
        times.append((time.process_time_ns() - started) / 1e6)
    return times


def _flat(sql: str | None) -> str:
    return " ".join((sql or "").strip().rstrip(";").split())


def _line(label: str, times: list[float]) -> str:
    ordered = sorted(times)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    p99 = ordered[int(0.99 * (len(ordered) - 1))]
    return (
        f"{label:<34} median {statistics.median(ordered):6.3f} ms  p90 {p90:6.3f} ms  "
        f"p99 {p99:6.3f} ms  (n={len(ordered)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reader", help="a file with another read_sql to time alongside")
    parser.add_argument("--bird", action="store_true", help="add BIRD dev's gold queries")
    args = parser.parse_args()
    from macsql.replies.reader import read_sql

    queries = sorted({item["query"] for item in json.loads((SPIDER / "dev.json").read_text())})
    if args.bird:
        bird = json.loads((SPIDER.parent / "bird_dev" / "dev.json").read_text())
        queries += sorted({item["SQL"] for item in bird})
    load = os.getloadavg()[0]
    print(
        f"python {platform.python_version()}, {os.cpu_count()} cores, load average {load:.1f}, "
        f"{len(queries)} distinct gold queries (CPU time per reply)"
    )
    readers: dict[str, Callable[[str, str], Any]] = {"this reader": read_sql}
    if args.reader:
        readers["--reader " + Path(args.reader).name] = _load(args.reader).read_sql
    for layout, write in LAYOUTS.items():
        replies = [write(q) for q in queries]
        for name, read in readers.items():
            right = sum(
                _flat(read(r, "sqlite").sql) == _flat(q)
                for r, q in zip(replies, queries, strict=True)
            )
            cold = _time(read, replies, cold=True)
            warm = _time(read, replies, cold=False)
            print(_line(f"{layout} / {name} cold", cold))
            print(_line(f"{layout} / {name} warm", warm))
            print(f"{'':34} read right: {right} of {len(queries)}")
    # The worst case the reader bounds: a long reply of prose about SQL, with no query at all.
    line = "We select the rows from the table where it's high, and with those we select again. "
    for label, reply in (
        ("prose only, 94 KB", (line * 40 + "\n") * 28),
        ("prose, then a fenced query", (line * 40 + "\n") * 28 + "\n```sql\nSELECT a FROM t\n```"),
    ):
        _clear_caches()
        started = time.process_time_ns()
        found = read_sql(reply, "sqlite").sql
        spent = (time.process_time_ns() - started) / 1e6
        print(f"{label:<34} {spent:8.1f} ms  (read: {found!r})")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
