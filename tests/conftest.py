"""Shared fixtures: data locations, generated sample databases, an isolated cache, scripted
models.

Benchmark data (Spider, BIRD dev) is found in one place, here: `MACSQL_DATA_DIR`, else
`../shared/data` beside the checkout. A test that needs it is marked
`@pytest.mark.needs_data("spider")` (or "bird"), or asks for the `spider_dir` / `bird_dir`
fixture; without the data it is skipped with a reason that says how to get it, and under
`CI=true` it fails instead, since CI must run everything. The core tests need no download: they
run on the demo database and on the small databases generated below.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import random
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# PostgreSQL (issue 4): the MACSQL_PG_URL fixtures; the logic lives in tests/pg_support.py.
from pg_support import in_ci as _in_ci
from pg_support import pg_admin_url, pg_reader_url, pg_spider, skip_or_fail_in_ci  # noqa: F401

from macsql.core.context import Agent, Context
from macsql.database.schema import clear_schema_cache
from macsql.llm.models import registered_chat_model
from macsql.testing.scripted import ScriptedChatModel

ROOT = Path(__file__).resolve().parents[1]
DATA_ENV = "MACSQL_DATA_DIR"


def data_dir() -> Path:
    """`MACSQL_DATA_DIR`, else `../shared/data` beside the checkout."""
    configured = os.environ.get(DATA_ENV, "").strip()
    return (
        Path(configured).expanduser().resolve() if configured else ROOT.parent / "shared" / "data"
    )


DATA = data_dir()
SPIDER = DATA / "spider"
BIRD = DATA / "bird_dev"

# dataset -> (folder, a file that proves it is there, where to get it and what the folder holds)
DATASETS: dict[str, tuple[Path, str, str]] = {
    "spider": (
        SPIDER,
        "dev.json",
        "Spider 1.0 (https://yale-lily.github.io/spider): spider/ with dev.json, dev_gold.sql, "
        "tables.json, train_spider.json and database/<db_id>/<db_id>.sqlite",
    ),
    "bird": (
        BIRD,
        "dev_tables.json",
        "BIRD dev (https://bird-bench.github.io/): bird_dev/ with dev.json, dev_gold.sql, "
        "dev_tables.json and dev_databases/<db_id>/database_description/*.csv",
    ),
}


def missing_data(dataset: str) -> str | None:
    """Why `dataset` cannot be used, with how to get it; None when it is there."""
    folder, probe, source = DATASETS[dataset]
    if (folder / probe).is_file():
        return None
    return (
        f"needs the {dataset} benchmark data, not found at {folder}. Get {source}, and set "
        f"{DATA_ENV} to the folder that holds {folder.name}/ (without {DATA_ENV}, the tests "
        f"look in ../shared/data beside the checkout)"
    )


def require_data(dataset: str) -> Path:
    """The dataset's folder; skips the test when it is missing, or fails it under CI=true."""
    reason = missing_data(dataset)
    if reason is not None:
        skip_or_fail_in_ci(f"this test {reason}")
    return DATASETS[dataset][0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`@pytest.mark.needs_data("spider", ...)` without the data: a skip reported at the test
    (under CI=true the setup below fails the test instead)."""
    for item in items:
        for mark in item.iter_markers(name="needs_data"):
            reasons = [r for r in map(missing_data, mark.args) if r is not None]
            if reasons and not _in_ci():
                item.add_marker(pytest.mark.skip(reason=f"this test {reasons[0]}"))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Under CI=true, `needs_data` without the data fails, before any fixture is built."""
    if _in_ci():
        for mark in item.iter_markers(name="needs_data"):
            for dataset in mark.args:
                require_data(dataset)


@pytest.fixture(scope="session")
def spider_dir() -> Path:
    return require_data("spider")


@pytest.fixture(scope="session")
def bird_dir() -> Path:
    return require_data("bird")


# --- generated sample databases: the tables of Spider's concert_singer and world_1 (so the
# scripted SQL in the tests reads naturally), with rows of our own --------------------------

_CONCERT_SCHEMA = """
CREATE TABLE stadium (
    Stadium_ID INTEGER PRIMARY KEY, Location TEXT, Name TEXT, Capacity INTEGER,
    Highest INTEGER, Lowest INTEGER, Average INTEGER
);
CREATE TABLE singer (
    Singer_ID INTEGER PRIMARY KEY, Name TEXT, Country TEXT, Song_Name TEXT,
    Song_release_year TEXT, Age INTEGER, Is_male BOOL
);
CREATE TABLE concert (
    concert_ID INTEGER PRIMARY KEY, concert_Name TEXT, Theme TEXT,
    Stadium_ID TEXT REFERENCES stadium(Stadium_ID), Year TEXT
);
CREATE TABLE singer_in_concert (
    concert_ID INTEGER REFERENCES concert(concert_ID),
    Singer_ID TEXT REFERENCES singer(Singer_ID),
    PRIMARY KEY (concert_ID, Singer_ID)
);
"""
SINGERS = [  # six singers; the oldest is the only one over 50, the youngest is 22
    (1, "Mira Okafor", "Nigeria", "Lagos Rain", "2011", 34, "F"),
    (2, "Anton Brask", "Denmark", "North Light", "2003", 41, "T"),
    (3, "Lea Fontaine", "France", "Quai Bleu", "2016", 29, "F"),
    (4, "Oskar Lind", "Sweden", "Old Roads", "1994", 58, "T"),
    (5, "Priya Raman", "India", "Monsoon", "2014", 37, "F"),
    (6, "Teo Alvarez", "Chile", "Salt Wind", "2019", 22, "T"),
]
WORLD_CITIES = 4079


def _generated_dir() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="macsql-test-dbs-"))
    owner = os.getpid()  # a forked eval worker exiting must not delete the parent's files

    def remove() -> None:
        if os.getpid() == owner:
            shutil.rmtree(folder, ignore_errors=True)

    atexit.register(remove)
    return folder


_generated = functools.cache(_generated_dir)


@functools.cache
def concert_db() -> Path:
    """A small generated concert database (four tables, six singers), built once per run."""
    path = _generated() / "concert_singer.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(_CONCERT_SCHEMA)
    conn.executemany(
        "INSERT INTO stadium VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (1, "Harbour Point", "Quay Arena", 12000, 9800, 400, 3100),
            (2, "Hill Park", "Green Bowl", 30500, 28000, 1200, 9000),
            (3, "Old Town", "Stone Hall", 4200, 4100, 300, 1500),
        ],
    )
    conn.executemany("INSERT INTO singer VALUES (?, ?, ?, ?, ?, ?, ?)", SINGERS)
    conn.executemany(
        "INSERT INTO concert VALUES (?, ?, ?, ?, ?)",
        [
            (1, "Spring Lights", "Opening", "1", "2014"),
            (2, "Night Tide", "Ballads", "2", "2014"),
            (3, "Autumn Sessions", "Folk", "3", "2015"),
            (4, "Winter Voices", "Choirs", "2", "2015"),
        ],
    )
    conn.executemany(
        "INSERT INTO singer_in_concert VALUES (?, ?)",
        [(1, "2"), (1, "3"), (2, "5"), (3, "1"), (3, "5"), (4, "6"), (4, "2")],  # 4 sang nowhere
    )
    conn.commit()
    conn.close()
    return path


SAMPLE_QUESTIONS = [  # (question, gold SQL) on the generated concert database
    ("How many singers are there?", "SELECT count(*) FROM singer"),
    ("How many concerts are there?", "SELECT count(*) FROM concert"),
    ("List the names of all singers.", "SELECT Name FROM singer"),
    ("What is the average age of the singers?", "SELECT avg(Age) FROM singer"),
    ("Which singers are older than 40?", "SELECT Name FROM singer WHERE Age > 40"),
    ("Who is the youngest singer?", "SELECT Name FROM singer ORDER BY Age LIMIT 1"),
    ("How many stadiums are there?", "SELECT count(*) FROM stadium"),
    ("What is the largest stadium capacity?", "SELECT max(Capacity) FROM stadium"),
    ("List the countries of the singers.", "SELECT DISTINCT Country FROM singer"),
    ("How many concerts took place in 2014?", "SELECT count(*) FROM concert WHERE Year = '2014'"),
    ("Give each concert's name and theme.", "SELECT concert_Name, Theme FROM concert"),
    ("Which stadium is in Old Town?", "SELECT Name FROM stadium WHERE Location = 'Old Town'"),
    ("How many male singers are there?", "SELECT count(*) FROM singer WHERE Is_male = 'T'"),
    (
        "Which songs came out after 2010?",
        "SELECT Song_Name FROM singer WHERE Song_release_year > '2010'",
    ),
    (
        "How many singers sang at each concert?",
        "SELECT concert_ID, count(*) FROM singer_in_concert GROUP BY concert_ID",
    ),
    ("Where is the oldest singer from?", "SELECT Country FROM singer ORDER BY Age DESC LIMIT 1"),
    ("Which stadiums average over 2000?", "SELECT Name FROM stadium WHERE Average > 2000"),
    (
        "In how many different years were there concerts?",
        "SELECT count(DISTINCT Year) FROM concert",
    ),
    ("What is the lowest attendance at any stadium?", "SELECT min(Lowest) FROM stadium"),
    (
        "Which singers sang at no concert?",
        "SELECT Name FROM singer WHERE Singer_ID NOT IN (SELECT Singer_ID FROM singer_in_concert)",
    ),
]


@functools.cache
def spider_sample() -> Path:
    """A generated folder in Spider's layout (dev.json, tables.json, database/): the questions
    above on the generated concert database, for eval tests that need no download."""
    root = _generated() / "spider_sample"
    (root / "database" / "concert_singer").mkdir(parents=True)
    shutil.copyfile(concert_db(), root / "database" / "concert_singer" / "concert_singer.sqlite")
    dev = [{"db_id": "concert_singer", "question": q, "query": sql} for q, sql in SAMPLE_QUESTIONS]
    (root / "dev.json").write_text(json.dumps(dev, indent=1))
    (root / "tables.json").write_text("[]")
    return root


@functools.cache
def world_db() -> Path:
    """A generated database with a `city` table of 4,079 rows (enough for runaway joins)."""
    path = _generated() / "world_1.sqlite"
    rng = random.Random(7)
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE city (ID INTEGER PRIMARY KEY, Name TEXT, CountryCode TEXT, "
        "District TEXT, Population INTEGER)"
    )
    conn.executemany(
        "INSERT INTO city VALUES (?, ?, ?, ?, ?)",
        [
            (i, f"City {i}", f"C{i % 97:02d}", f"District {i % 31}", rng.randint(500, 9_000_000))
            for i in range(1, WORLD_CITIES + 1)
        ],
    )
    conn.commit()
    conn.close()
    return path


def spider_eval_args(out: Path, *options: str, data_dir: Path = SPIDER) -> list[str]:
    """`macsql eval` arguments for Spider without a progress bar, writing under `out`, in one
    process unless `options` ask for more (the command's default follows the cores)."""
    return [
        "eval",
        "--dataset",
        "spider",
        "--data-dir",
        str(data_dir),
        "--processes",
        "1",
        *options,
        "--out",
        str(out),
        "--no-progress",
    ]


FRENCH_SINGERS = "SELECT name FROM singer WHERE country = 'France' ORDER BY name"
"""A concert_singer query every backend must answer alike (the other backends' ask tests)."""
FRANCE = "Which singers are from France?"


def ask_scripted(db: str, replies: list[str], question: str) -> tuple[int, list[str]]:
    """`macsql ask --json` on `db` against the scripted server answering `replies` in order:
    the exit code and the prompts the server saw (the JSON is on stdout)."""
    from macsql.cli.main import main
    from macsql.testing.scripted import ScriptedOpenAIServer

    with ScriptedOpenAIServer(replies) as server:
        argv = ["ask", question, "--db", db, "--json", "--model", "openai:scripted"]
        code = main([*argv, "--base-url", server.base_url, "--api-key", "k"])
        return code, list(server.prompts)


def french_singers() -> list[list[object]]:
    """`FRENCH_SINGERS` on Spider's own SQLite file: what every backend must return."""
    with sqlite3.connect(spider_db("concert_singer")) as conn:
        return [list(row) for row in conn.execute(FRENCH_SINGERS)]


def wrong_then_fixed(wrong_sql: str, fixed_sql: str) -> dict[str, str]:
    """Replies for MAC-SQL whose Decomposer writes `wrong_sql` and whose Refiner then writes
    `fixed_sql`: one trip round the repair loop. A call by any other agent fails the test."""
    return {
        Agent.DECOMPOSER: f"```sql\n{wrong_sql}\n```\nQuestion Solved.",
        Agent.REFINER: f"The last SQL failed; this one fixes it.\n```sql\n{fixed_sql}\n```",
    }


def spider_db(db_id: str) -> Path:
    return SPIDER / "database" / db_id / f"{db_id}.sqlite"


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Caches (schemas, demo database) go to a temp dir, never the developer's home."""
    previous = os.environ.get("MACSQL_CACHE_DIR")
    os.environ["MACSQL_CACHE_DIR"] = str(tmp_path_factory.mktemp("macsql-cache"))
    yield
    if previous is None:
        os.environ.pop("MACSQL_CACHE_DIR", None)
    else:
        os.environ["MACSQL_CACHE_DIR"] = previous


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never reach a real model, whatever the developer's shell exports."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def concert(tmp_path: Path) -> Iterator[Any]:
    """A copy of the concert database of this test's own, opened (a `DatabaseRef`); its
    engines are dropped after the test."""
    from macsql.database.connection import forget_database, resolve_database

    path = tmp_path / "concert_singer.sqlite"
    shutil.copyfile(concert_db(), path)
    yield resolve_database(str(path))
    forget_database(str(path))


@pytest.fixture
def fresh_schema_cache() -> Iterator[None]:
    clear_schema_cache()
    yield
    clear_schema_cache()


@pytest.fixture
def scripted() -> Iterator[object]:
    """`scripted(replies, **context_fields)` -> (model, Context) with the model registered."""
    registered: list[object] = []

    def make(replies: object, **fields: object) -> tuple[ScriptedChatModel, Context]:
        name = f"scripted:test-{len(registered)}"
        model = ScriptedChatModel(responder=replies)
        manager = registered_chat_model(name, model)
        manager.__enter__()
        registered.append(manager)
        return model, Context(model=name, **fields)  # type: ignore[arg-type]

    yield make
    for manager in registered:
        manager.__exit__(None, None, None)  # type: ignore[attr-defined]


# --- MySQL/MariaDB (issue 18): MACSQL_MYSQL_URL fixtures; the logic lives in tests/mysql_support.py
from mysql_support import mysql_admin_url, mysql_reader_url, mysql_spider  # noqa: E402, F401
