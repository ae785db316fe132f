"""Benchmark: schema representation on a 1,000,000-row table, and the pipeline's own overhead.

Run: python benchmarks/bench_schema.py [--rows 1000000] [--questions 300]

1. Generates a SQLite table of N rows and 20 columns (text and numeric, skewed values).
2. Builds the schema representation cold (no cache) in a fresh process: time and peak RSS.
3. Loads it warm (memory cache) and from the disk cache.
4. Runs the official approach in the same run: a full GROUP BY over every column.
5. Runs MAC-SQL over Spider dev questions with a zero-latency scripted model that answers with
   the gold SQL, and reports the time per question outside SQL execution.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPIDER = Path(os.environ.get("MACSQL_DATA_DIR", ROOT.parent / "shared" / "data")) / "spider"


def generate(path: Path, rows: int) -> None:
    rng = random.Random(1)
    cities = [f"city_{i}" for i in range(400)]
    weights = [1 / (i + 1) ** 1.2 for i in range(len(cities))]  # Zipf-like skew
    statuses = ["active", "closed", "pending", "frozen"]
    columns = ["id INTEGER PRIMARY KEY"]
    columns += [f"txt_{i} TEXT" for i in range(10)] + [f"num_{i} REAL" for i in range(9)]
    conn = sqlite3.connect(path)
    conn.execute(f"CREATE TABLE big ({', '.join(columns)})")
    batch = []
    for i in range(rows):
        city = rng.choices(cities, weights)[0]
        texts = [
            city,
            rng.choice(statuses),
            f"code_{rng.randint(0, 30)}",
            f"name_{rng.randint(0, 100_000)}",
            rng.choice(["A", "B", "B", "C", "C", "C"]),
            f"2023-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            rng.choice(["red", "green", "blue"]),
            f"tag_{int(rng.expovariate(0.3))}",
            "lorem ipsum " * rng.randint(0, 8),
            rng.choice(["x", "y", None]),
        ]
        numbers = [
            rng.random() * 1000,
            rng.randint(0, 5),
            int(rng.expovariate(0.01)),
            rng.gauss(50, 10),
            rng.randint(1, 3),
            rng.random(),
            rng.randint(0, 10**6),
            round(rng.random(), 1),
            rng.choice([0, 1]),
        ]
        batch.append((i + 1, *texts, *numbers))
        if len(batch) == 50_000:
            conn.executemany(f"INSERT INTO big VALUES ({', '.join('?' * 20)})", batch)
            batch.clear()
    if batch:
        conn.executemany(f"INSERT INTO big VALUES ({', '.join('?' * 20)})", batch)
    conn.commit()
    conn.close()


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def phase_cold(path: Path) -> dict[str, float]:
    """In a fresh process: the cold build, with the RSS before and at its peak."""
    os.environ["MACSQL_SCHEMA_CACHE"] = "0"
    from macsql.database.connection import resolve_database
    from macsql.database.schema import load_schema

    ref = resolve_database(str(path))
    before = _peak_rss_mb()
    started = time.perf_counter()
    schema = load_schema(ref)
    cold = time.perf_counter() - started
    examples = sum(len(c.examples) for t in schema.tables for c in t.columns)
    return {
        "cold_s": cold,
        "rss_before_mb": before,
        "rss_peak_mb": _peak_rss_mb(),
        "examples": examples,
    }


def phase_warm(path: Path, cache_dir: str) -> dict[str, float]:
    os.environ["MACSQL_CACHE_DIR"] = cache_dir
    from macsql.database.connection import resolve_database
    from macsql.database.schema import clear_schema_cache, load_schema

    ref = resolve_database(str(path))
    load_schema(ref)  # fills the memory and disk caches
    clear_schema_cache()
    started = time.perf_counter()
    load_schema(resolve_database(str(path)))
    disk = time.perf_counter() - started
    times = []
    for _ in range(50):
        started = time.perf_counter()
        load_schema(resolve_database(str(path)))
        times.append(time.perf_counter() - started)
    return {"warm_memory_ms": statistics.median(times) * 1000, "warm_disk_ms": disk * 1000}


def official_group_by(path: Path) -> float:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    columns = [r[1] for r in conn.execute("PRAGMA table_info(big)")]
    started = time.perf_counter()
    for column in columns:
        conn.execute(
            f'SELECT "{column}", COUNT(*) AS c FROM big GROUP BY "{column}" ORDER BY c DESC'
        ).fetchall()
    elapsed = time.perf_counter() - started
    conn.close()
    return elapsed


def pipeline_overhead(questions: int) -> dict[str, float]:
    from macsql.core.context import Context
    from macsql.graph.macsql_graph import graph
    from macsql.llm.models import register_chat_model
    from macsql.nodes.common import executor
    from macsql.testing.scripted import ScriptedChatModel

    dev = json.loads((SPIDER / "dev.json").read_text())
    items = [
        d for d in dev if (SPIDER / "database" / d["db_id"] / f"{d['db_id']}.sqlite").is_file()
    ][:questions]
    gold = {d["question"]: d["query"] for d in items}

    def answer(prompt: str) -> str:
        question = prompt.rsplit("[Question]", 1)[1].splitlines()[0].strip()
        return f"```sql\n{gold[question]}\n```"

    register_chat_model("scripted:bench", ScriptedChatModel(responder=answer))
    context = Context(model="scripted:bench", dataset_style="spider")
    sql_time = [0.0]
    real_execute = executor.execute_sql

    def timed_execute(*args, **kwargs):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        try:
            return real_execute(*args, **kwargs)
        finally:
            sql_time[0] += time.perf_counter() - started

    executor.execute_sql = timed_execute  # type: ignore[assignment]
    from macsql.database.connection import resolve_database
    from macsql.database.schema import load_schema

    for db_id in {d["db_id"] for d in items}:  # schemas are built once per database: warm
        load_schema(resolve_database(str(SPIDER / "database" / db_id / f"{db_id}.sqlite")))
    overheads = []
    for item in items:
        db = str(SPIDER / "database" / item["db_id"] / f"{item['db_id']}.sqlite")
        sql_time[0] = 0.0
        started = time.perf_counter()
        graph.invoke({"question": item["question"], "db": db}, context=context)
        overheads.append(time.perf_counter() - started - sql_time[0])
    overheads.sort()
    return {
        "questions": len(items),
        "median_ms": statistics.median(overheads) * 1000,
        "p90_ms": overheads[int(len(overheads) * 0.9)] * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--phase", choices=["cold"], default=None)
    parser.add_argument("--db", default=None)
    args = parser.parse_args()
    if args.phase == "cold":
        print(json.dumps(phase_cold(Path(args.db))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.sqlite"
        started = time.perf_counter()
        generate(path, args.rows)
        print(
            f"generated {args.rows:,} rows x 20 columns in {time.perf_counter() - started:.1f}s"
            f" ({path.stat().st_size / 2**20:.0f} MiB)"
        )
        cold = json.loads(
            subprocess.run(
                [sys.executable, __file__, "--phase", "cold", "--db", str(path)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        warm = phase_warm(path, str(Path(tmp) / "cache"))
        official = official_group_by(path)
        print(
            f"cold build (no cache):       {cold['cold_s'] * 1000:9.1f} ms  "
            f"({cold['examples']} value examples)"
        )
        print(
            f"peak RSS of that process:    {cold['rss_peak_mb']:9.1f} MB  "
            f"(after imports: {cold['rss_before_mb']:.1f} MB)"
        )
        print(f"warm (memory cache), median: {warm['warm_memory_ms']:9.3f} ms")
        print(f"warm (disk cache):           {warm['warm_disk_ms']:9.3f} ms")
        print(f"official full GROUP BY:      {official * 1000:9.1f} ms")
        print(f"speed-up cold vs official:   {official / cold['cold_s']:9.1f} x")
    overhead = pipeline_overhead(args.questions)
    print(
        f"pipeline overhead per question, zero-latency model, SQL excluded "
        f"({overhead['questions']} Spider dev questions): median "
        f"{overhead['median_ms']:.2f} ms, p90 {overhead['p90_ms']:.2f} ms"
    )


if __name__ == "__main__":
    main()
