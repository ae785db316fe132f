"""Schema- and value-linking recall and scale: the figures in README's "Schema and value linking".

    python benchmarks/bench_linking.py [--part bird|spider|values|scale|all] [--data-dir DIR]

- bird: BIRD dev (1,534 questions). Its SQLite files are not in the data folder, so the schemas
  are built from dev_tables.json with the database_description CSVs (no rows: no value recall).
  Strict recall, column recall and the share of columns kept at several column budgets, and with
  linking off (the baseline); then the same on the half of the databases the ranking was tuned
  on and on the held-out half.
- spider: Spider dev on its real databases: the same, plus value recall and matched values per
  question.
- values: the value-index technique comparison (FTS5 trigram against an exhaustive rapidfuzz
  scan) on Spider dev's value recall and on the scale database's lookup latency.
- scale: a generated SQLite database of 1,000 tables and 20,000 columns with millions of rows
  and Zipf-skewed text values (under /tmp, generated once): value-index build time, size, peak
  RSS, lookup p50/p99, warm start; then MAC-SQL end to end with a scripted model, checking that
  every prompt stays within the link budget, with linking off as the baseline.
No model is called anywhere (the end-to-end run uses a scripted model).
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from macsql.core.context import Context
from macsql.database.connection import resolve_database
from macsql.database.schema import SchemaInfo, load_schema
from macsql.database.value_index import ValueMatch, normalise, open_value_index
from macsql.evals.bird_schema import build_schema_only_layout
from macsql.evals.linking_recall import (
    ItemRecall,
    gold_elements,
    kept_of,
    literal_recalled,
    summarise,
)
from macsql.nodes.common.link_schema import run_linking

ROOT = Path(__file__).resolve().parents[1]
BUDGETS = (20, 30, 40, 50, 60, 80)
WORK = Path(tempfile.gettempdir()) / "macsql_bench_linking"


def _context(budget: int | None, *, values: bool = True) -> Context:
    if budget is None:
        return Context(schema_linking=False)
    return Context(
        link_max_columns=budget, link_max_schema_chars=10**7, link_max_values=10 if values else 0
    )


def _link_items(
    items: list[dict[str, Any]],
    db_path: Callable[[str], Path],
    budget: int | None,
    *,
    evidence: bool,
    values: bool,
) -> list[ItemRecall]:
    out = []
    schemas: dict[str, SchemaInfo] = {}
    for item in items:
        db_id = item["db_id"]
        path = db_path(db_id)
        if db_id not in schemas:
            schemas[db_id] = load_schema(resolve_database(str(path)))
        schema = schemas[db_id]
        gold_sql = item.get("SQL") or item.get("query") or ""
        gold = gold_elements(gold_sql, schema)
        if budget is None:
            out.append(ItemRecall(db_id, gold, kept_of(schema), schema.total_columns, []))
            continue
        result = run_linking(
            schema,
            str(path),
            item["question"],
            item.get("evidence", "") if evidence else "",
            _context(budget, values=values),
        )
        out.append(
            ItemRecall(db_id, gold, kept_of(result.schema), schema.total_columns, result.values)
        )
    return out


def _wide_share(items: list[ItemRecall], threshold: int = 50) -> tuple[float, float, int]:
    """Mean share of columns kept, and strict recall, on databases over `threshold` columns."""
    wide = [i for i in items if i.total_columns > threshold]
    if not wide:
        return 0.0, 0.0, 0
    share = statistics.mean(i.kept_columns / i.total_columns for i in wide)
    return share, sum(i.strict for i in wide) / len(wide), len(wide)


def _curve(
    label: str,
    items: list[dict[str, Any]],
    db_path: Callable[[str], Path],
    *,
    evidence: bool,
    values: bool,
) -> None:
    print(f"\n## {label}: {len(items)} questions")
    header = (
        "| budget (columns) | strict recall | column recall | columns kept | "
        "kept on DBs > 50 cols | strict on DBs > 50 cols |"
    )
    if values:
        header += " value recall | values / question |"
    print(header)
    print("|" + " --- |" * (header.count("|") - 1))
    for budget in (None, *BUDGETS):
        started = time.perf_counter()
        linked = _link_items(items, db_path, budget, evidence=evidence, values=values)
        seconds = time.perf_counter() - started
        overall = summarise(linked)["overall"]
        share, wide_strict, n_wide = _wide_share(linked)
        name = "off (baseline)" if budget is None else str(budget)
        row = (
            f"| {name} | {overall['strict_recall']:.1%} | {overall['column_recall']:.1%} | "
            f"{overall['columns_kept_share']:.1%} | {share:.1%} | {wide_strict:.1%} |"
        )
        if values:
            vr = overall["value_recall"]
            row += f" {'-' if vr is None else f'{vr:.1%}'} | {overall['mean_values']} |"
        print(row + f"  ({seconds:.1f} s, {n_wide} items on wide DBs)", flush=True)


def bench_bird(data: Path) -> None:
    source = data / "bird_dev"
    target = WORK / "bird_schema_only"
    if not (target / "dev_tables.json").is_file():
        build_schema_only_layout(source, target)
    items = json.loads((source / "dev.json").read_text())
    print(
        "BIRD dev SQLite files are absent from the data folder: schemas built from "
        "dev_tables.json plus the database_description CSVs (no rows, so no value recall)."
    )

    def path(db: str) -> Path:
        return target / "dev_databases" / db / f"{db}.sqlite"

    _curve("BIRD dev (with evidence)", items, path, evidence=True, values=False)
    # The ranking was tuned on half of the databases (every other one in name order); the
    # other half shows what it does on databases it was not tuned on.
    names = sorted({i["db_id"] for i in items})
    for label, half in (("tuning half", names[0::2]), ("held-out half", names[1::2])):
        _curve(
            f"BIRD dev, {label} ({', '.join(half)})",
            [i for i in items if i["db_id"] in half],
            path,
            evidence=True,
            values=False,
        )


def _spider_items(data: Path) -> tuple[list[dict[str, Any]], Callable[[str], Path]]:
    folder = data / "spider" / "database"
    items = json.loads((data / "spider" / "dev.json").read_text())

    def path(db: str) -> Path:
        return folder / db / f"{db}.sqlite"

    return [i for i in items if path(i["db_id"]).is_file()], path


def bench_spider(data: Path) -> None:
    items, path = _spider_items(data)
    _curve(
        "Spider dev (real databases; wta_1 is missing, so 972 of 1,034)",
        items,
        path,
        evidence=False,
        values=True,
    )


# --------------------------------------------------------------------------- techniques


def _rapidfuzz_scan(values: list[tuple[str, str, str]], phrases: list[str]) -> list[ValueMatch]:
    """The exhaustive alternative: every stored value scored against every phrase, with the
    same exact forms and scoring as the index; only the candidate generation differs."""
    from macsql.database.value_index import exact_forms, match_score

    out: list[ValueMatch] = []
    norms = [(t, c, v, normalise(v)) for t, c, v in values]
    for phrase in phrases:
        p = normalise(phrase)
        if not p:
            continue
        forms = set(exact_forms(p))
        for t, c, v, n in norms:
            if n in forms:
                out.append(ValueMatch(t, c, v, 1.0, phrase))
            elif len(p) >= 3:
                score = match_score(p, n)
                if score >= 0.8:
                    out.append(ValueMatch(t, c, v, round(score, 4), phrase))
    return out


def bench_values(data: Path) -> None:
    from macsql.linking.ranking import pick_values, question_phrases

    items, path = _spider_items(data)
    print("\n## Value-index technique, Spider dev value recall (10 values per question)")
    print("| technique | value recall | mean lookup ms | p99 lookup ms |")
    print("| --- | --- | --- | --- |")
    schemas: dict[str, SchemaInfo] = {}
    stored: dict[str, list[tuple[str, str, str]]] = {}
    for db_id in sorted({i["db_id"] for i in items}):
        db = resolve_database(str(path(db_id)))
        schemas[db_id] = load_schema(db)
        index = open_value_index(db, schemas[db_id])
        conn = sqlite3.connect(index.path)
        stored[db_id] = conn.execute(
            "SELECT c.tbl, c.col, v.value FROM vals v JOIN columns c ON c.id = v.column_id"
        ).fetchall()
        conn.close()
    for name in ("fts5 trigram", "rapidfuzz scan"):
        hits = total = 0
        times = []
        for item in items:
            db_id = item["db_id"]
            gold = gold_elements(item["query"], schemas[db_id])
            phrases = question_phrases(item["question"])
            started = time.perf_counter()
            if name == "fts5 trigram":
                db = resolve_database(str(path(db_id)))
                found = open_value_index(db, schemas[db_id]).lookup(phrases)
            else:
                found = _rapidfuzz_scan(stored[db_id], phrases)
            times.append((time.perf_counter() - started) * 1000)
            chosen = pick_values(found, 10)
            total += len(gold.literals)
            hits += sum(literal_recalled(lit, chosen) for lit in gold.literals)
        times.sort()
        print(
            f"| {name} | {hits / total:.1%} ({hits}/{total}) | {statistics.mean(times):.2f} | "
            f"{times[int(len(times) * 0.99) - 1]:.2f} |",
            flush=True,
        )


# --------------------------------------------------------------------------- scale

SCALE_TABLES = 1000
SCALE_COLUMNS = 20
SCALE_ROWS = 2500


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    syllables = [
        "ka",
        "lo",
        "mi",
        "ra",
        "to",
        "ne",
        "su",
        "vi",
        "del",
        "mar",
        "san",
        "ber",
        "qu",
        "fo",
        "pa",
        "li",
        "zo",
        "re",
        "tan",
        "gu",
    ]
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))).capitalize())
    return sorted(words)


def generate_scale_db(path: Path) -> Path:
    """1,000 tables × 20 columns (an id, foreign keys to earlier tables, text, numbers, dates),
    2,500 rows each (2.5 million rows); text drawn from a Zipf-like law over a large vocabulary."""
    if path.is_file():
        return path
    rng = random.Random(7)
    vocab = _vocabulary(rng, 30000)
    weights = [1.0 / (rank + 1) ** 1.1 for rank in range(len(vocab))]
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    conn = sqlite3.connect(tmp)
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    for t in range(SCALE_TABLES):
        cols = ["id INTEGER PRIMARY KEY"]
        kinds = []
        parent = f"t{t // 2:04d}" if t else None
        for c in range(1, SCALE_COLUMNS):
            if c == 1 and parent:
                cols.append(f"{parent}_id INTEGER REFERENCES {parent}(id)")
                kinds.append("fk")
            elif c % 3 == 0:
                cols.append(f"amount_{c} REAL")
                kinds.append("num")
            elif c % 7 == 0:
                cols.append(f"created_{c} DATE")
                kinds.append("date")
            else:
                cols.append(f"label_{t}_{c} TEXT")
                kinds.append("text")
        conn.execute(f"CREATE TABLE t{t:04d} ({', '.join(cols)})")
        rows = []
        texts = rng.choices(vocab, weights=weights, k=SCALE_ROWS * kinds.count("text") * 2)
        pos = 0
        for r in range(SCALE_ROWS):
            row: list[Any] = [r + 1]
            for kind in kinds:
                if kind == "fk":
                    row.append(rng.randint(1, SCALE_ROWS))
                elif kind == "num":
                    row.append(round(rng.random() * 1000, 2))
                elif kind == "date":
                    row.append(f"20{rng.randint(10, 24)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}")
                else:
                    row.append(f"{texts[pos]} {texts[pos + 1]}" if pos % 5 == 0 else texts[pos])
                    pos += 2
            rows.append(row)
        marks = ", ".join("?" * SCALE_COLUMNS)
        conn.executemany(f"INSERT INTO t{t:04d} VALUES ({marks})", rows)
        if t % 100 == 99:
            conn.commit()
    conn.commit()
    conn.close()
    tmp.replace(path)
    return path


def _child(argv: list[str]) -> dict[str, Any]:
    """Run one scale measurement in a fresh process, so its peak RSS is its own."""
    out = subprocess.run(
        [sys.executable, __file__, *argv], capture_output=True, text=True, check=True, timeout=900
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _scale_index(db_path: str, cache: str) -> dict[str, Any]:
    os.environ["MACSQL_CACHE_DIR"] = cache
    db = resolve_database(db_path)
    started = time.perf_counter()
    schema = load_schema(db)
    schema_seconds = time.perf_counter() - started
    started = time.perf_counter()
    index = open_value_index(db, schema)
    open_seconds = time.perf_counter() - started
    rng = random.Random(3)
    conn = sqlite3.connect(index.path)
    # The same 200 stored values in every run (SQLite's random() is not seeded), so the cold
    # and the warm process time the same lookups.
    (last,) = conn.execute("SELECT max(id) FROM vals").fetchone()
    sample = [
        conn.execute("SELECT value FROM vals WHERE id = ?", (i,)).fetchone()[0]
        for i in random.Random(5).sample(range(1, last + 1), 200)
    ]
    conn.close()
    from macsql.linking.ranking import question_phrases

    questions = []
    for value in sample:
        word = value.split()[0]
        typo = word[:2] + word[3:] if len(word) > 5 and rng.random() < 0.5 else word.lower()
        questions.append(f"How many orders were shipped to {typo} in the last year by the team?")
    times = []
    cpu = []
    found = 0
    for q in questions:
        t0, c0 = time.perf_counter(), time.process_time()
        hits = index.lookup(question_phrases(q))
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
        found += bool(hits)
    times.sort()
    cpu.sort()
    return {
        "schema_seconds": round(schema_seconds, 1),
        "open_seconds": round(open_seconds, 2),
        "rebuilt": index.stats.rebuilt,
        "values": index.stats.values,
        "columns": index.stats.columns,
        "size_mb": round(index.stats.size_bytes / 1e6, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "p50_ms": round(times[len(times) // 2], 2),
        "p99_ms": round(times[int(len(times) * 0.99) - 1], 2),
        "cpu_p50_ms": round(cpu[len(cpu) // 2], 2),
        "cpu_p99_ms": round(cpu[int(len(cpu) * 0.99) - 1], 2),
        "questions_with_a_match": f"{found}/{len(questions)}",
    }


def _scale_end_to_end(db_path: str, cache: str, linking: bool) -> dict[str, Any]:
    os.environ["MACSQL_CACHE_DIR"] = cache
    from macsql.graph.macsql_graph import graph
    from macsql.llm.models import register_chat_model
    from macsql.testing.scripted import ScriptedChatModel

    def reply(prompt: str) -> str:
        if "keep_all" in prompt:
            return "{}"
        return "```sql\nSELECT count(*) FROM t0001\n```"

    model = ScriptedChatModel(responder=reply)
    register_chat_model("bench-linking", model)
    context = Context(model="bench-linking", schema_linking=linking)
    started = time.perf_counter()
    out = graph.invoke(
        {"question": "How many rows does label_1_2 have for Kalomi?", "db": db_path},
        context=context,
    )
    prompts = [str(p) for p in model.prompts]
    return {
        "linking": linking,
        "status": out.get("status"),
        "seconds": round(time.perf_counter() - started, 1),
        "prompts": len(prompts),
        "largest_prompt_chars": max((len(p) for p in prompts), default=0),
        "budget_chars": context.link_max_schema_chars,
        "route": (out.get("linking") or {}).get("route"),
        "kept_columns": (out.get("linking") or {}).get("kept_columns"),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def bench_scale() -> None:
    db_path = WORK / "scale_1000x20.sqlite"
    WORK.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    existed = db_path.is_file()
    generate_scale_db(db_path)
    size = db_path.stat().st_size / 1e9
    print(
        f"\n## Scale: {SCALE_TABLES} tables × {SCALE_COLUMNS} columns, "
        f"{SCALE_TABLES * SCALE_ROWS:,} rows, {size:.2f} GB "
        f"({'reused' if existed else f'generated in {time.perf_counter() - started:.0f} s'})"
    )
    cache = str(WORK / "scale_cache")
    subprocess.run(["rm", "-rf", cache], check=True)
    cold = _child(["--child-index", str(db_path), cache])
    warm = _child(["--child-index", str(db_path), cache])
    print(
        "| run | index rebuilt | open s | values | size MB | peak RSS MB | lookup p50 / p99 ms "
        "(wall) | lookup p50 / p99 ms (CPU) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, r in (("cold (build)", cold), ("warm (read)", warm)):
        print(
            f"| {name} | {r['rebuilt']} | {r['open_seconds']} | {r['values']:,} | "
            f"{r['size_mb']} | {r['peak_rss_mb']} | {r['p50_ms']} / {r['p99_ms']} | "
            f"{r['cpu_p50_ms']} / {r['cpu_p99_ms']} |"
        )
    print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"schema introspection (cold): {cold['schema_seconds']} s; "
        f"lookups with a match: {cold['questions_with_a_match']}"
    )
    print(
        "\n| MAC-SQL end to end (scripted model) | status | route | kept columns | prompts | "
        "largest prompt chars | schema budget chars | peak RSS MB |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for linking in (True, False):
        r = _child(["--child-e2e", str(db_path), cache, "1" if linking else "0"])
        print(
            f"| linking {'on' if linking else 'off (baseline)'} | {r['status']} | {r['route']} | "
            f"{r['kept_columns']} | {r['prompts']} | {r['largest_prompt_chars']:,} | "
            f"{r['budget_chars']:,} | {r['peak_rss_mb']} |",
            flush=True,
        )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child-index":
        print(json.dumps(_scale_index(sys.argv[2], sys.argv[3])))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--child-e2e":
        print(json.dumps(_scale_end_to_end(sys.argv[2], sys.argv[3], sys.argv[4] == "1")))
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--part", default="all", choices=["bird", "spider", "values", "scale", "all"]
    )
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    args = parser.parse_args()
    data = Path(args.data_dir)
    os.environ.setdefault("MACSQL_CACHE_DIR", str(WORK / "cache"))
    if args.part in ("bird", "all"):
        bench_bird(data)
    if args.part in ("spider", "all"):
        bench_spider(data)
    if args.part in ("values", "all"):
        bench_values(data)
    if args.part in ("scale", "all"):
        bench_scale()


if __name__ == "__main__":
    main()
