"""Linking recall, prompt size and speed: the figures in docs/benchmarks/linking.md.

    python benchmarks/bench_linking.py --part bird|catalog|synonyms|spider|scale|values|all
        [--embeddings glove|NAME] [--data-dir DIR] [--limit N]

Every part runs the linking stage as the pipelines run it (`run_linking` with a `Context`), no
model. "prompt chars" is what the linked schema puts in a prompt: the schema blocks, the
foreign-key lines and the stored-value lines, rendered as the agents read them.

- bird: BIRD dev (1,534 questions) with and without its evidence, at several character
  budgets. BIRD's SQLite files are not in the data folder: schemas come from dev_tables.json
  and the database_description CSVs (no rows, so no value recall).
- catalog: one SQLite file holding BIRD dev's 11 schemas, Spider dev's 20 and 145 of Spider's
  146 training schemas (not its copy of formula_1) as distractors (5,000+ columns; each table
  named `<database>_<table>`, as applications share one SQLite file), with BIRD dev's
  questions and gold SQL: strict recall, prompt characters and linking time per question.
- synonyms: BIRD dev and Spider dev questions with everyday words replaced by synonyms from a
  hand-written table (benchmarks/synonyms.py, seeded): on the catalog, and on their own
  databases (Spider's real ones, with values).
- spider: Spider dev on its real databases (value recall).
- scale: a generated catalog of 1,000 tables × 20 columns (50 business domains, realistic
  names, 1,000 rows per table, Zipf-skewed values) and generated questions that name stored
  values: value recall, strict recall, full linking p50/p99 per question, index build time,
  size and peak RSS (fresh processes).
- values: the value-index technique comparison (FTS5 trigram against a rapidfuzz scan).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from macsql.core.context import Context
from macsql.database.connection import resolve_database
from macsql.database.schema import SchemaInfo, load_schema
from macsql.database.value_index import ValueMatch, normalise, open_value_index
from macsql.evals.bird_schema import build_schema_only_layout, build_schema_only_sqlite
from macsql.evals.linking_recall import (
    GoldElements,
    ItemRecall,
    gold_elements,
    kept_of,
    literal_recalled,
    summarise,
)
from macsql.linking.ranking import render_value_matches
from macsql.linking.stage import run_linking
from macsql.prompts.schema_text import render_foreign_keys, render_schema

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synonyms import perturb

ROOT = Path(__file__).resolve().parents[1]
BUDGETS = (8000, 16000, 24000, 40000)
CATALOG_BUDGETS = [16000, 24000, 40000]
WORK = Path(tempfile.gettempdir()) / "macsql_bench_linking"
EMBEDDINGS: str | None = None


def _context(budget: int | None, **fields: Any) -> Context:
    if budget is None:
        return Context(schema_linking=False)
    if EMBEDDINGS:
        fields.setdefault("link_embeddings", EMBEDDINGS)
    return Context(link_max_schema_chars=budget, **fields)


def prompt_chars(schema: SchemaInfo, values: list[Any]) -> int:
    """What the linked schema puts in a prompt: schema blocks, key lines, value lines."""
    parts = [render_schema(schema), render_foreign_keys(schema)]
    parts.append(render_value_matches(values, schema.dialect))
    return len("\n".join(p for p in parts if p))


@dataclass
class Item:
    db: str
    question: str
    evidence: str
    gold_sql: str
    gold: GoldElements | None = None


@dataclass
class Row:
    label: str
    summary: dict[str, Any]
    chars: list[int]
    millis: list[float]
    cpu: list[float]


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(len(ordered) * share + 0.5) - 1))]


def link_items(
    items: list[Item],
    schema_of: Callable[[str], SchemaInfo],
    budget: int | None,
    *,
    evidence: bool,
    **fields: Any,
) -> Row:
    recalls: list[ItemRecall] = []
    chars: list[int] = []
    millis: list[float] = []
    cpu: list[float] = []
    context = _context(budget, **fields)
    for item in items:
        schema = schema_of(item.db)
        gold = item.gold or gold_elements(item.gold_sql, schema)
        if budget is None:
            recalls.append(ItemRecall(item.db, gold, kept_of(schema), schema.total_columns, []))
            chars.append(prompt_chars(schema, []))
            continue
        started, cpu_started = time.perf_counter(), time.process_time()
        result = run_linking(
            schema, item.db, item.question, item.evidence if evidence else "", context
        )
        millis.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - cpu_started) * 1000)
        recalls.append(
            ItemRecall(item.db, gold, kept_of(result.schema), schema.total_columns, result.values)
        )
        chars.append(prompt_chars(result.schema, result.values))
    label = "off" if budget is None else f"{budget:,}"
    return Row(label, summarise(recalls), chars, millis, cpu)


def print_rows(title: str, rows: Iterable[Row], *, values: bool = False) -> None:
    print(f"\n## {title}")
    header = "| budget (chars) | strict recall | column recall |"
    header += " value recall |" if values else ""
    header += " prompt chars mean / max | linking ms p50 / p99 (wall) | (CPU) |"
    print(header)
    print("|" + " --- |" * (header.count("|") - 1))
    for row in rows:
        m = row.summary["overall"]
        line = f"| {row.label} | {m['strict_recall']:.1%} | {m['column_recall']:.1%} |"
        if values:
            vr = m["value_recall"]
            line += f" {'-' if vr is None else f'{vr:.1%}'} |"
        line += f" {statistics.mean(row.chars):,.0f} / {max(row.chars):,} |"
        for times in (row.millis, row.cpu):
            if times:
                line += f" {_percentile(times, 0.5):.1f} / {_percentile(times, 0.99):.1f} |"
            else:
                line += " - |"
        print(line, flush=True)


def _schemas(path_of: Callable[[str], Path]) -> Callable[[str], SchemaInfo]:
    cache: dict[str, SchemaInfo] = {}

    def schema_of(db: str) -> SchemaInfo:
        if db not in cache:
            cache[db] = load_schema(resolve_database(db))
        return cache[db]

    return schema_of


# --------------------------------------------------------------------------- BIRD


def _bird_layout(data: Path) -> Path:
    target = WORK / "bird_schema_only"
    if not (target / "dev_tables.json").is_file():
        build_schema_only_layout(data / "bird_dev", target)
    return target


def bird_items(data: Path) -> list[Item]:
    target = _bird_layout(data)
    raw = json.loads((data / "bird_dev" / "dev.json").read_text())
    return [
        Item(
            str(target / "dev_databases" / i["db_id"] / f"{i['db_id']}.sqlite"),
            i["question"],
            i.get("evidence", ""),
            i["SQL"],
        )
        for i in raw
    ]


def bench_bird(data: Path, limit: int | None) -> None:
    items = bird_items(data)[:limit]
    schema_of = _schemas(Path)
    print("BIRD dev: schema-only databases from dev_tables.json + description CSVs (no rows).")
    for evidence in (True, False):
        rows = [link_items(items, schema_of, None, evidence=evidence)]
        rows += [link_items(items, schema_of, b, evidence=evidence) for b in BUDGETS]
        label = "with" if evidence else "without"
        print_rows(f"BIRD dev {label} evidence: {len(items)} questions", rows)


# --------------------------------------------------------------------------- catalog


def _prefixed_entry(entries: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, str]]:
    """One tables-file entry holding every entry's tables as `<db>_<table>`."""
    tables: list[str] = []
    columns: list[list[Any]] = [[-1, "*"]]
    types: list[str] = ["text"]
    primary: list[Any] = []
    foreign: list[list[int]] = []
    for entry in entries:
        table_base = len(tables)
        column_base = len(columns) - 1
        tables += [f"{entry['db_id']}_{t}" for t in entry["table_names_original"]]
        for t, c in entry["column_names_original"][1:]:
            columns.append([t + table_base, c])
        types += list(entry["column_types"][1:])
        for key in entry.get("primary_keys") or []:
            if isinstance(key, list):
                primary.append([k + column_base for k in key])
            else:
                primary.append(key + column_base)
        foreign += [[a + column_base, b + column_base] for a, b in entry.get("foreign_keys") or []]
    names = {
        f"{e['db_id']}_{t}".lower(): e["db_id"] for e in entries for t in e["table_names_original"]
    }
    entry = {
        "db_id": "catalog",
        "table_names_original": tables,
        "column_names_original": columns,
        "column_types": types,
        "primary_keys": primary,
        "foreign_keys": foreign,
    }
    return entry, names


def build_catalog(data: Path) -> Path:
    """The catalog SQLite file (schema only) with BIRD's description CSVs renamed to match."""
    folder = WORK / "catalog"
    path = folder / "catalog.sqlite"
    if path.is_file():
        return path
    bird = json.loads((data / "bird_dev" / "dev_tables.json").read_text())
    spider = json.loads((data / "spider" / "tables.json").read_text())
    # Spider's formula_1 is BIRD's formula_1 again (same tables): left out, or a question
    # would have two right answers.
    ours = {e["db_id"] for e in bird}
    entry, _ = _prefixed_entry(bird + [e for e in spider if e["db_id"] not in ours])
    build_schema_only_sqlite(entry, path)
    described = folder / "database_description"
    described.mkdir(exist_ok=True)
    for db in bird:
        source = data / "bird_dev" / "dev_databases" / db["db_id"] / "database_description"
        for csv in source.glob("*.csv"):
            shutil.copyfile(csv, described / f"{db['db_id']}_{csv.name}")
    return path


def _catalog_gold(item: Item, own: SchemaInfo, prefix: str, catalog: SchemaInfo) -> GoldElements:
    """The gold elements on the question's own schema, renamed to the catalog's tables."""
    gold = gold_elements(item.gold_sql, own)

    def table(name: str) -> str:
        found = catalog.table(f"{prefix}_{name}")
        assert found is not None, name
        return found.name

    return GoldElements(
        {table(t) for t in gold.tables},
        {(table(t), c) for t, c in gold.columns},
        [(table(t), c, v, like) for t, c, v, like in gold.literals],
        gold.error,
    )


def catalog_items(data: Path, items: list[Item], prefix_of: Callable[[Item], str]) -> list[Item]:
    path = str(build_catalog(data))
    catalog = load_schema(resolve_database(path))
    own = _schemas(Path)
    out = []
    for item in items:
        prefix = prefix_of(item)
        gold = _catalog_gold(item, own(item.db), prefix, catalog)
        out.append(Item(path, item.question, item.evidence, item.gold_sql, gold))
    return out


def _bird_prefix(item: Item) -> str:
    return Path(item.db).stem


def bench_catalog(data: Path, limit: int | None) -> None:
    items = catalog_items(data, bird_items(data)[:limit], _bird_prefix)
    catalog = load_schema(resolve_database(items[0].db))
    print(
        f"\nCatalog: {len(catalog.tables)} tables, {catalog.total_columns:,} columns in one "
        f"SQLite file (BIRD dev 11 + Spider dev 20 + Spider train 145 schemas); whole schema "
        f"{prompt_chars(catalog, []):,} prompt characters."
    )
    schema_of = _schemas(Path)
    for evidence in (False, True):
        rows = [link_items(items, schema_of, b, evidence=evidence) for b in CATALOG_BUDGETS]
        label = "with" if evidence else "without"
        print_rows(f"Catalog, BIRD dev questions {label} evidence: {len(items)}", rows)


# --------------------------------------------------------------------------- synonyms


def spider_items(data: Path) -> list[Item]:
    folder = data / "spider" / "database"
    raw = json.loads((data / "spider" / "dev.json").read_text())
    out = []
    for i in raw:
        path = folder / i["db_id"] / f"{i['db_id']}.sqlite"
        if path.is_file():
            out.append(Item(str(path), i["question"], "", i["query"]))
    return out


def perturbed(items: list[Item]) -> list[Item]:
    """The items whose question has at least one word the synonym table replaces."""
    out = []
    for n, item in enumerate(items):
        question, replaced = perturb(item.question, seed=n)
        if replaced:
            out.append(Item(item.db, question, item.evidence, item.gold_sql, item.gold))
    return out


def _spider_prefix(item: Item) -> str:
    return Path(item.db).stem


def _sample(items: list[Item], size: int | None) -> list[Item]:
    """A seeded sample (every database in proportion), in the dataset's order."""
    if size is None or size >= len(items):
        return items
    chosen = set(random.Random(0).sample(range(len(items)), size))
    return [item for n, item in enumerate(items) if n in chosen]


def bench_synonyms(data: Path, limit: int | None) -> None:
    bird = _sample(bird_items(data), limit)
    spider = _sample(spider_items(data), limit)
    bird_syn, spider_syn = perturbed(bird), perturbed(spider)
    print(
        f"\nSynonym sets: {len(bird_syn)} of {len(bird)} BIRD dev and {len(spider_syn)} of "
        f"{len(spider)} Spider dev questions have a word the table replaces."
    )
    for n in range(3):
        print(f"  e.g. {bird_syn[n * 97].question!r}")
    schema_of = _schemas(Path)
    for name, plain, changed, prefix in (
        ("BIRD dev", bird, bird_syn, _bird_prefix),
        ("Spider dev", spider, spider_syn, _spider_prefix),
    ):
        originals = [i for n, i in enumerate(plain) if perturb(i.question, seed=n)[1]]
        for label, group in (("original wording", originals), ("synonyms", changed)):
            on_catalog = catalog_items(data, group, prefix)
            rows = [link_items(on_catalog, schema_of, 24000, evidence=False)]
            print_rows(f"{name} on the catalog, no evidence, {label}: {len(group)}", rows)
            rows = [link_items(group, schema_of, 4000, evidence=False)]
            print_rows(f"{name} on its own databases, no evidence, {label}", rows, values=True)


def bench_spider(data: Path, limit: int | None) -> None:
    items = spider_items(data)[:limit]
    rows = [link_items(items, _schemas(Path), b, evidence=False) for b in (4000, 24000)]
    print_rows(f"Spider dev, real databases: {len(items)} questions", rows, values=True)


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


def bench_values(data: Path, limit: int | None) -> None:
    from macsql.linking.ranking import pick_values, question_phrases

    items = spider_items(data)[:limit]
    print("\n## Value-index technique, Spider dev value recall (10 values per question)")
    print("| technique | value recall | mean lookup ms | p99 lookup ms |")
    print("| --- | --- | --- | --- |")
    schemas: dict[str, SchemaInfo] = {}
    stored: dict[str, list[tuple[str, str, str]]] = {}
    for db_path in sorted({i.db for i in items}):
        db = resolve_database(db_path)
        schemas[db_path] = load_schema(db)
        index = open_value_index(db, schemas[db_path])
        conn = sqlite3.connect(index.path)
        stored[db_path] = conn.execute(
            "SELECT c.tbl, c.col, v.value FROM vals v JOIN columns c ON c.id = v.column_id"
        ).fetchall()
        conn.close()
    for name in ("fts5 trigram", "rapidfuzz scan"):
        hits = total = 0
        times = []
        for item in items:
            gold = gold_elements(item.gold_sql, schemas[item.db])
            phrases = question_phrases(item.question)
            started = time.perf_counter()
            if name == "fts5 trigram":
                db = resolve_database(item.db)
                found = open_value_index(db, schemas[item.db]).lookup(phrases)
            else:
                found = _rapidfuzz_scan(stored[item.db], phrases)
            times.append((time.perf_counter() - started) * 1000)
            chosen = pick_values(found, 10)
            total += len(gold.literals)
            hits += sum(literal_recalled(lit, chosen) for lit in gold.literals)
        print(
            f"| {name} | {hits / total:.1%} ({hits}/{total}) | {statistics.mean(times):.2f} | "
            f"{_percentile(times, 0.99):.2f} |",
            flush=True,
        )


# --------------------------------------------------------------------------- scale

SCALE_DOMAINS = [
    "sales", "hr", "finance", "logistics", "marketing", "support", "inventory", "factory",
    "retail", "clinic", "school", "library", "hotel", "airline", "shipping", "insurance",
    "bank", "realty", "energy", "telecom", "media", "sports", "events", "travel", "restaurant",
    "farm", "pharmacy", "legal", "construction", "motors", "fitness", "museum", "charity",
    "council", "campus", "research", "gaming", "music", "cinema", "publishing", "transit",
    "water", "mining", "fashion", "grocery", "veterinary", "dental", "security", "cloud",
    "catering",
]  # fmt: skip
SCALE_ENTITIES = [
    "customer", "order", "product", "supplier", "employee", "store", "region", "invoice",
    "payment", "shipment", "warehouse", "vendor", "contract", "project", "task", "ticket",
    "agent", "account", "branch", "member", "event", "venue", "course", "student", "teacher",
    "patient", "doctor", "appointment", "room", "booking", "guest", "flight", "passenger",
    "route", "vehicle", "driver", "claim", "policy", "loan", "property", "tenant", "campaign",
    "lead", "asset", "device", "sensor", "subscriber", "plan", "artist", "album", "player",
    "team", "book", "author", "publisher", "donor", "grant", "partner", "site", "department",
]  # fmt: skip
SCALE_TABLES_PER_DOMAIN = 20
SCALE_ROWS = 1000
# Text columns: (name, kind of value). Every table has `name`, and a draw of the others.
TEXT_COLUMNS = [
    ("city", "place"), ("country", "country"), ("status", "status"), ("category", "category"),
    ("last_name", "surname"), ("first_name", "given"), ("title", "title"),
    ("brand", "brand"), ("color", "color"), ("channel", "channel"), ("segment", "segment"),
    ("manager_name", "person"), ("contact_name", "person"), ("district", "place"),
    ("language", "language"), ("tier", "tier"),
]  # fmt: skip
NUMBER_COLUMNS = ["amount", "price", "quantity", "score", "rating", "budget", "capacity", "age"]
DATE_COLUMNS = ["created_at", "start_date", "end_date", "signed_on"]
SYLLABLES = [
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
    "win",
    "ham",
    "ford",
]
WORDS = {
    "status": ["active", "closed", "pending", "cancelled", "on hold", "archived", "open"],
    "category": [
        "Electronics",
        "Garden",
        "Toys",
        "Books",
        "Outdoor",
        "Kitchen",
        "Office",
        "Beauty",
        "Health",
        "Sports",
        "Automotive",
        "Grocery",
        "Music",
        "Jewelry",
        "Footwear",
        "Furniture",
        "Lighting",
        "Pets",
        "Baby",
        "Tools",
    ],
    "color": [
        "red",
        "blue",
        "green",
        "black",
        "white",
        "silver",
        "gold",
        "orange",
        "purple",
        "grey",
    ],
    "channel": ["online", "retail", "phone", "partner", "direct mail", "wholesale"],
    "segment": ["enterprise", "small business", "consumer", "public sector", "education"],
    "language": [
        "English",
        "Spanish",
        "French",
        "German",
        "Italian",
        "Dutch",
        "Polish",
        "Greek",
        "Turkish",
    ],
    "tier": ["bronze", "silver", "gold", "platinum"],
    "title": ["Dr", "Mr", "Ms", "Prof", "Sir", "Mrs"],
}


def _made_up(rng: random.Random, count: int, parts: tuple[int, int] = (2, 3)) -> list[str]:
    words: set[str] = set()
    while len(words) < count:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(*parts))).capitalize())
    return sorted(words)


def _vocabularies(rng: random.Random) -> dict[str, list[str]]:
    vocab = dict(WORDS)
    vocab["place"] = _made_up(rng, 3000)
    vocab["country"] = _made_up(rng, 120)
    vocab["surname"] = _made_up(rng, 2000, (2, 4))
    vocab["given"] = _made_up(rng, 400, (2, 2))
    vocab["person"] = [f"{g} {s}" for g in vocab["given"][:150] for s in vocab["surname"][:60]]
    vocab["brand"] = _made_up(rng, 500, (2, 3))
    vocab["name"] = [f"{a} {b}" for a in _made_up(rng, 300) for b in vocab["brand"][:40]]
    return vocab


def _scale_plan(rng: random.Random) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """Tables as (name, [(column, sql type, kind)]): 20 columns each."""
    plan = []
    for domain in SCALE_DOMAINS:
        entities = rng.sample(SCALE_ENTITIES, SCALE_TABLES_PER_DOMAIN)
        for n, entity in enumerate(entities):
            columns = [(f"{entity}_id", "INTEGER PRIMARY KEY", "key")]
            for parent in entities[:n][-2:]:
                columns.append((f"{parent}_id", "INTEGER", f"fk:{domain}_{parent}s:{parent}_id"))
            columns.append(("name", "TEXT", "name"))
            texts = rng.sample(TEXT_COLUMNS, 9)
            columns += [(c, "TEXT", kind) for c, kind in texts]
            columns.append(("email", "TEXT", "email"))
            numbers = rng.sample(NUMBER_COLUMNS, 4)
            columns += [(c, "REAL", "number") for c in numbers]
            columns += [(c, "DATE", "date") for c in rng.sample(DATE_COLUMNS, 2)]
            columns = columns[:20]
            while len(columns) < 20:
                columns.append((f"note_{len(columns)}", "TEXT", "note"))
            plan.append((f"{domain}_{entity}s", columns))
    return plan


def generate_scale_catalog(path: Path) -> Path:
    if path.is_file():
        return path
    rng = random.Random(11)
    vocab = _vocabularies(rng)
    weights = {k: [1.0 / (r + 1) ** 0.9 for r in range(len(v))] for k, v in vocab.items()}
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(tmp)
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    for table, columns in _scale_plan(rng):
        defs = []
        for name, kind_sql, kind in columns:
            ref = ""
            if kind.startswith("fk:"):
                _, ref_table, ref_column = kind.split(":")
                ref = f" REFERENCES {ref_table}({ref_column})"
            defs.append(f"{name} {kind_sql}{ref}")
        conn.execute(f"CREATE TABLE {table} ({', '.join(defs)})")
        draws = {
            kind: rng.choices(vocab[kind], weights=weights[kind], k=SCALE_ROWS)
            for _, _, kind in columns
            if kind in vocab
        }
        rows = []
        for r in range(SCALE_ROWS):
            row: list[Any] = []
            for _name, _, kind in columns:
                if kind == "key":
                    row.append(r + 1)
                elif kind.startswith("fk:"):
                    row.append(rng.randint(1, SCALE_ROWS))
                elif kind in draws:
                    row.append(draws[kind][r])
                elif kind == "email":
                    row.append(f"user{r}@example.com")
                elif kind == "number":
                    row.append(round(rng.random() * 1000, 2))
                elif kind == "date":
                    row.append(f"20{rng.randint(10, 24)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}")
                else:
                    row.append(" ".join(rng.choices(SYLLABLES, k=30)))
            rows.append(row)
        conn.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(columns))})", rows)
    conn.commit()
    conn.close()
    tmp.replace(path)
    return path


def _words_of(column: str) -> str:
    return column.replace("_", " ")


def scale_questions(path: Path, count: int = 300) -> list[Item]:
    """Questions that name a stored value of one table's text column, in everyday words, with
    their gold SQL. The value is read from the table's rows (not from any index)."""
    rng = random.Random(5)
    conn = sqlite3.connect(path)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    items = []
    while len(items) < count:
        table = rng.choice(tables)
        domain, entity = table.split("_", 1)
        columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        texts = [c for c in columns if c in dict(TEXT_COLUMNS) or c == "name"]
        numbers = [c for c in columns if c in NUMBER_COLUMNS]
        column = rng.choice(texts)
        (value,) = conn.execute(
            f"SELECT {column} FROM {table} LIMIT 1 OFFSET {rng.randrange(SCALE_ROWS)}"
        ).fetchone()
        things = f"{domain} {entity}"
        shown = f"'{value}'" if rng.random() < 0.25 else value
        form = rng.randrange(3)
        if form == 0 or not numbers:
            question = f"How many {things} have {_words_of(column)} {shown}?"
            sql = f"SELECT count(*) FROM {table} WHERE {column} = '{value}'"
        elif form == 1:
            number = rng.choice(numbers)
            question = (
                f"What is the average {number} of {things} whose {_words_of(column)} is {shown}?"
            )
            sql = f"SELECT avg({number}) FROM {table} WHERE {column} = '{value}'"
        else:
            question = f"List the names of the {things} with {_words_of(column)} {shown}."
            sql = f"SELECT name FROM {table} WHERE {column} = '{value}'"
        items.append(Item(str(path), question, "", sql))
    conn.close()
    return items


def _child(argv: list[str]) -> dict[str, Any]:
    """Run one scale measurement in a fresh process, so its peak RSS is its own."""
    env = dict(os.environ)
    # MACSQL_BENCH_RUNNER: a script that runs this one against another checkout's code.
    runner = [os.environ["MACSQL_BENCH_RUNNER"]] if os.environ.get("MACSQL_BENCH_RUNNER") else []
    out = subprocess.run(
        [sys.executable, *runner, __file__, *argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
        env=env,
    )
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def _scale_index(db_path: str, cache: str) -> dict[str, Any]:
    os.environ["MACSQL_CACHE_DIR"] = cache
    db = resolve_database(db_path)
    started = time.perf_counter()
    schema = load_schema(db)
    schema_seconds = time.perf_counter() - started
    context = Context()
    started = time.perf_counter()
    index = open_value_index(
        db,
        schema,
        rows_per_table=context.link_index_rows_per_table,
        values_per_column=context.link_index_values_per_column,
        max_values=context.link_index_max_values,
    )
    return {
        "schema_seconds": round(schema_seconds, 1),
        "build_seconds": round(time.perf_counter() - started, 1),
        "rebuilt": index.stats.rebuilt,
        "values": index.stats.values,
        "columns": index.stats.columns,
        "size_mb": round(index.stats.size_bytes / 1e6, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def _scale_link(db_path: str, cache: str, budget: int) -> dict[str, Any]:
    os.environ["MACSQL_CACHE_DIR"] = cache
    db = resolve_database(db_path)
    schema = load_schema(db)
    items = scale_questions(Path(db_path))
    context = _context(budget)
    recalls, millis, cpu, chars = [], [], [], []
    first = None
    for item in items:
        gold = gold_elements(item.gold_sql, schema)
        t0, c0 = time.perf_counter(), time.process_time()
        result = run_linking(schema, db_path, item.question, "", context)
        millis.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
        first = millis[0] if first is None else first
        recalls.append(
            ItemRecall("scale", gold, kept_of(result.schema), schema.total_columns, result.values)
        )
        chars.append(prompt_chars(result.schema, result.values))
    overall = summarise(recalls)["overall"]
    misses = [
        {"question": i.question, "kept_values": [v.value for v in r.values][:5]}
        for i, r in zip(items, recalls, strict=True)
        if not r.strict or r.literals_hit < len(r.gold.literals)
    ][:5]
    return {
        "questions": len(items),
        "strict_recall": overall["strict_recall"],
        "value_recall": overall["value_recall"],
        "first_question_ms": round(first or 0.0, 1),
        "p50_ms": round(_percentile(millis[1:], 0.5), 1),
        "p99_ms": round(_percentile(millis[1:], 0.99), 1),
        "cpu_p50_ms": round(_percentile(cpu[1:], 0.5), 1),
        "cpu_p99_ms": round(_percentile(cpu[1:], 0.99), 1),
        "chars_mean": round(statistics.mean(chars)),
        "chars_max": max(chars),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "misses": misses,
    }


def bench_scale() -> None:
    db_path = WORK / "scale_catalog_1000x20.sqlite"
    WORK.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    existed = db_path.is_file()
    generate_scale_catalog(db_path)
    size = db_path.stat().st_size / 1e9
    made = "reused" if existed else f"generated in {time.perf_counter() - started:.0f} s"
    print(
        f"\n## Scale catalog: {len(SCALE_DOMAINS)} domains, "
        f"{len(SCALE_DOMAINS) * SCALE_TABLES_PER_DOMAIN} tables × 20 columns, {SCALE_ROWS:,} rows "
        f"per table, {size:.2f} GB ({made})"
    )
    for q in scale_questions(db_path, 3):
        print(f"  e.g. {q.question!r}  ->  {q.gold_sql}")
    # The run's own cache folder (a fresh index every time), apart from other runs'.
    cache = str(Path(os.environ.get("MACSQL_CACHE_DIR") or WORK / "cache") / "scale")
    shutil.rmtree(cache, ignore_errors=True)
    cold = _child(["--child-index", str(db_path), cache])
    print("| index | build s | values | columns | size MB | peak RSS MB | schema load s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print(
        f"| cold build | {cold['build_seconds']} | {cold['values']:,} | {cold['columns']:,} | "
        f"{cold['size_mb']} | {cold['peak_rss_mb']} | {cold['schema_seconds']} |"
    )
    print(
        "\n| budget (chars) | questions | strict recall | value recall | first question ms | "
        "linking p50 / p99 ms (wall) | p50 / p99 ms (CPU) | prompt chars mean / max | peak RSS MB |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for budget in (24000,):
        r = _child(["--child-link", str(db_path), cache, str(budget)])
        print(
            f"| {budget:,} | {r['questions']} | {r['strict_recall']:.1%} | "
            f"{r['value_recall']:.1%} | {r['first_question_ms']} | {r['p50_ms']} / {r['p99_ms']} | "
            f"{r['cpu_p50_ms']} / {r['cpu_p99_ms']} | {r['chars_mean']:,} / {r['chars_max']:,} | "
            f"{r['peak_rss_mb']} |",
            flush=True,
        )
        for miss in r["misses"]:
            print(f"  missed: {miss}")
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


def main() -> None:
    global EMBEDDINGS
    EMBEDDINGS = os.environ.get("MACSQL_BENCH_EMBEDDINGS") or None
    if len(sys.argv) > 1 and sys.argv[1] == "--child-index":
        print(json.dumps(_scale_index(sys.argv[2], sys.argv[3])))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--child-link":
        print(json.dumps(_scale_link(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parts = ["bird", "catalog", "synonyms", "spider", "scale", "values", "all"]
    parser.add_argument("--part", default="all", choices=parts)
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--embeddings", default=None, help="link_embeddings for every run")
    parser.add_argument(
        "--limit",
        type=int,
        default=None,
        help="first N questions of each set (synonyms: a seeded sample of N)",
    )
    parser.add_argument(
        "--catalog-budgets", default="16000,24000,40000", help="character budgets, catalog part"
    )
    args = parser.parse_args()
    data = Path(args.data_dir)
    os.environ.setdefault("MACSQL_CACHE_DIR", str(WORK / "cache"))
    EMBEDDINGS = args.embeddings
    CATALOG_BUDGETS[:] = [int(x) for x in args.catalog_budgets.split(",")]
    if EMBEDDINGS:
        os.environ["MACSQL_BENCH_EMBEDDINGS"] = EMBEDDINGS
    print(f"embeddings: {EMBEDDINGS or 'none (lexical only)'}")
    for name, bench in (
        ("bird", bench_bird),
        ("catalog", bench_catalog),
        ("synonyms", bench_synonyms),
        ("spider", bench_spider),
        ("values", bench_values),
    ):
        if args.part in (name, "all"):
            bench(data, args.limit)
    if args.part in ("scale", "all"):
        bench_scale()


if __name__ == "__main__":
    main()
