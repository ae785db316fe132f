"""Spider and BIRD question files, in their official layouts.

- Spider ``DIR``: ``dev.json`` (or ``train_spider.json``), ``tables.json`` and
  ``database/<db>/<db>.sqlite`` (a test-suite layout may hold more ``*.sqlite`` files per
  database folder; all of them are used in scoring, as the official scorer does).
- BIRD ``DIR``: ``dev.json``, ``dev_tables.json`` and ``dev_databases/<db>/<db>.sqlite`` with
  ``database_description/``. BIRD mini-dev's files (``mini_dev_sqlite.json`` and its
  ``mini_dev_mysql.json`` / ``mini_dev_postgresql.json`` siblings) load the same way, by
  split name (``--split mini_dev`` or the file stem).
- SParC / CoSQL ``DIR`` (conversations over Spider's databases): ``dev.json`` (CoSQL:
  ``cosql_dev.json``), a list of interactions with ``database_id`` and ``interaction``, turns
  with ``utterance`` and ``query``. The databases are ``DIR/database/`` (SParC's release) or
  ``DIR/../database/`` (CoSQL's), else Spider's beside ``DIR`` (``../spider/database``). Each
  turn is an item (its index counts turns over the whole file); `Dataset.interactions` groups
  them.

An item whose database is missing is kept, with ``skip_reason`` set, so a run reports it.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from macsql.evals.hardness import item_hardness

DatasetName = Literal["spider", "bird", "sparc", "cosql"]
CONVERSATION_DATASETS = ("sparc", "cosql")
"""Multi-turn datasets: each interaction is one conversation, scored turn by turn."""

SPIDER_LEVELS = ("easy", "medium", "hard", "extra")
BIRD_LEVELS = ("simple", "moderate", "challenging")

SPIDER_QUESTION_FILES = {"dev": "dev.json", "train": "train_spider.json"}
CONVERSATION_FILES = {
    "sparc": {"dev": "dev.json", "train": "train.json"},
    "cosql": {"dev": "cosql_dev.json", "train": "cosql_train.json"},
}
BIRD_SPLIT_ALIASES = {"mini_dev": "mini_dev_sqlite", "minidev": "mini_dev_sqlite"}


class DatasetError(ValueError):
    """The data directory does not hold the files the dataset needs."""


@dataclass
class EvalItem:
    """One question, its gold SQL and where its database is."""

    index: int
    """Position in the dataset's question file (the key of the official prediction files)."""
    db_id: str
    question: str
    gold_sql: str
    evidence: str = ""
    level: str = "unknown"
    """Spider hardness (easy/medium/hard/extra) or BIRD difficulty (simple/...)."""
    question_id: int | None = None
    db: str | None = None
    """A SQLite path or a database URL; None when the database is missing."""
    db_files: list[str] = field(default_factory=list)
    """Every SQLite file the item is scored on (Spider test suites hold several)."""
    skip_reason: str | None = None
    interaction: int | None = None
    """SParC / CoSQL: the position of the turn's interaction in the file."""
    turn: int | None = None
    """SParC / CoSQL: the turn's position in its interaction (0 for the first)."""

    @property
    def skipped(self) -> bool:
        return self.skip_reason is not None


@dataclass
class Interaction:
    """One conversation of SParC or CoSQL: its turns, in order."""

    index: int
    db_id: str
    turns: list[EvalItem]

    @property
    def skip_reason(self) -> str | None:
        return self.turns[0].skip_reason if self.turns else "no turns"


@dataclass
class Dataset:
    name: DatasetName
    split: str
    data_dir: Path
    question_file: Path
    items: list[EvalItem]
    tables: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    """The schema file's entries by db_id (Spider's `tables.json`); only exact-match scoring
    reads them, so Spider's and BIRD's are read when first asked for (`TablesFile`)."""
    interactions: list[Interaction] = field(default_factory=list)
    """SParC / CoSQL: the items grouped by conversation (empty for single-question sets)."""

    @property
    def levels(self) -> tuple[str, ...]:
        return BIRD_LEVELS if self.name == "bird" else SPIDER_LEVELS

    @property
    def is_conversational(self) -> bool:
        return self.name in CONVERSATION_DATASETS

    @property
    def skip_counts(self) -> Counter[str]:
        return Counter(item.skip_reason for item in self.items if item.skip_reason)


def load_dataset(
    name: DatasetName, data_dir: str | Path, split: str = "dev", *, db_url: str | None = None
) -> Dataset:
    """Load a dataset by name; `db_url` (BIRD, with ``{db_id}``) replaces the SQLite files."""
    if name == "spider":
        return load_spider(data_dir, split, db_url=db_url)
    if name == "bird":
        return load_bird(data_dir, split, db_url=db_url)
    if name in CONVERSATION_DATASETS:
        return load_conversations(name, data_dir, split, db_url=db_url)
    raise DatasetError(f"unknown dataset {name!r}: choose spider, bird, sparc or cosql")


def _read_json(path: Path) -> Any:
    try:
        with path.open(encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise DatasetError(f"missing file: {path}") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path} is not valid JSON: {exc}") from None


def _tables_by_db(path: Path) -> dict[str, dict[str, Any]]:
    if not path.is_file():
        return {}
    return {entry["db_id"]: entry for entry in _read_json(path)}


class TablesFile(Mapping[str, dict[str, Any]]):
    """A schema file's entries by db_id, read on first use: an eval that scores by execution
    never reads it (Spider's `tables.json` is 0.8 MB of JSON, a fixed cost of every run).
    A file that is not valid JSON raises `DatasetError` then."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: dict[str, dict[str, Any]] | None = None
        self._lock = threading.Lock()

    def _read(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            if self._entries is None:
                self._entries = _tables_by_db(self.path)
            return self._entries

    def __getitem__(self, db_id: str) -> dict[str, Any]:
        return self._read()[db_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


def missing_database_reason(db_id: str) -> str:
    return f"database missing: {db_id}"


def unreachable_database_reason(url: str) -> str | None:
    """None when the database at `url` answers; else why it does not (the item is skipped)."""
    from macsql.database.connection import DatabaseNotFoundError, get_engine, resolve_database

    try:
        ref = resolve_database(url)
        with get_engine(ref).connect():
            return None
    except DatabaseNotFoundError as exc:
        return f"database missing: {exc}"
    except Exception as exc:  # a server that refuses, a database that was never loaded
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        # Keep the server's own words ('database "x" does not exist'), not the wrappers'.
        first_line = first_line.rsplit("FATAL:", 1)[-1].strip()
        return f"database unreachable: {first_line[:200]}"


def _apply_db_url(items: list[EvalItem], db_url: str) -> None:
    """Point every item at `db_url` with its db_id; unreachable databases are skipped."""
    reasons: dict[str, str | None] = {}
    for item in items:
        url = db_url.replace("{db_id}", item.db_id)
        if url not in reasons:
            reasons[url] = unreachable_database_reason(url)
        item.db, item.db_files, item.skip_reason = url, [url], reasons[url]


SPIDER_LAYOUT = "Spider's layout: dev.json, tables.json, database/<db>/<db>.sqlite"
BIRD_LAYOUT = "BIRD's layout: dev.json, dev_tables.json, dev_databases/<db>/<db>.sqlite"


def _check_layout(root: Path, dataset: str, db_folders: tuple[str, ...]) -> None:
    """A folder of the other dataset, or one with no databases at all, is a configuration
    mistake to name now, not a run whose every item is skipped."""
    if not root.is_dir():
        raise DatasetError(f"no such folder: {root}")
    if any((root / name).is_dir() for name in db_folders):
        return
    if dataset == "bird" and (root / "database").is_dir() and (root / "tables.json").is_file():
        raise DatasetError(f"{root} is a Spider folder, not BIRD: use --dataset spider")
    if dataset == "spider" and (root / "dev_databases").is_dir():
        raise DatasetError(f"{root} is a BIRD folder, not Spider: use --dataset bird")
    layout = BIRD_LAYOUT if dataset == "bird" else SPIDER_LAYOUT
    raise DatasetError(
        f"{root} has no {db_folders[0]}/ folder ({layout}; or pass --db-url for a server)"
    )


def load_spider(data_dir: str | Path, split: str = "dev", *, db_url: str | None = None) -> Dataset:
    root = Path(data_dir).expanduser()
    if not db_url:
        _check_layout(root, "spider", ("database", "test_database"))
    question_file = root / SPIDER_QUESTION_FILES.get(split, f"{split}.json")
    records = _read_json(question_file)
    db_root = root / "database"
    if not db_root.is_dir() and (root / "test_database").is_dir():
        db_root = root / "test_database"
    items: list[EvalItem] = []
    suites: dict[str, list[str] | None] = {}  # per database, not per question
    for index, rec in enumerate(records):
        db_id = rec["db_id"]
        gold = rec["query"]
        item = EvalItem(
            index=index,
            db_id=db_id,
            question=rec["question"],
            gold_sql=gold,
            level=item_hardness(rec),
        )
        if db_id not in suites:
            suites[db_id] = _spider_suite(db_root / db_id / f"{db_id}.sqlite")
        suite = suites[db_id]
        if suite is not None:
            item.db = suite[0]
            item.db_files = suite[1:]
        else:
            item.skip_reason = missing_database_reason(db_id)
        items.append(item)
    if db_url:
        _apply_db_url(items, db_url)
    return Dataset("spider", split, root, question_file, items, TablesFile(root / "tables.json"))


def _spider_suite(main_file: Path) -> list[str] | None:
    """The database's main file, then every SQLite file of its folder (a test suite holds
    several); None when the main file is missing."""
    if not main_file.is_file():
        return None
    files = sorted(
        str(p) for p in main_file.parent.iterdir() if p.is_file() and p.name.endswith(".sqlite")
    )
    return [str(main_file), *files]


def _bird_question_file(root: Path, split: str) -> Path:
    stem = BIRD_SPLIT_ALIASES.get(split, split)
    for candidate in (root / f"{stem}.json", root / stem):
        if candidate.is_file():
            return candidate
    raise DatasetError(f"no BIRD question file for split {split!r} in {root}")


def _bird_database_root(root: Path, split: str) -> Path:
    for name in (f"{split}_databases", "dev_databases", "databases"):
        if (root / name).is_dir():
            return root / name
    return root / "dev_databases"


def _bird_tables_file(root: Path, split: str) -> Path:
    for name in (f"{split}_tables.json", "dev_tables.json", "tables.json"):
        if (root / name).is_file():
            return root / name
    return root / "dev_tables.json"


def load_bird(data_dir: str | Path, split: str = "dev", *, db_url: str | None = None) -> Dataset:
    root = Path(data_dir).expanduser()
    if not db_url:
        _check_layout(root, "bird", ("dev_databases", f"{split}_databases", "databases"))
    question_file = _bird_question_file(root, split)
    records = _read_json(question_file)
    db_root = _bird_database_root(root, split)
    items: list[EvalItem] = []
    for index, rec in enumerate(records):
        db_id = rec["db_id"]
        item = EvalItem(
            index=index,
            db_id=db_id,
            question=rec["question"],
            gold_sql=rec.get("SQL") or rec.get("query") or "",
            evidence=rec.get("evidence") or "",
            level=rec.get("difficulty") or "unknown",
            question_id=rec.get("question_id"),
        )
        path = db_root / db_id / f"{db_id}.sqlite"
        if path.is_file():
            item.db = str(path)
            item.db_files = [str(path)]
        else:
            item.skip_reason = missing_database_reason(db_id)
        items.append(item)
    if db_url:
        _apply_db_url(items, db_url)
    return Dataset(
        "bird", split, root, question_file, items, TablesFile(_bird_tables_file(root, split))
    )


def _conversation_databases(root: Path) -> Path:
    """`DIR/database` (SParC's release), `DIR/../database` (CoSQL's, whose question files are
    in `sql_state_tracking/`), else Spider's beside `DIR`."""
    for candidate in (
        root / "database",
        root.parent / "database",
        root.parent / "spider" / "database",
    ):
        if candidate.is_dir():
            return candidate
    raise DatasetError(
        f"{root} has no database/ folder, and there is no Spider folder beside it "
        "(SParC and CoSQL run on Spider's databases: DIR/database/<db>/<db>.sqlite)"
    )


def load_conversations(
    name: str, data_dir: str | Path, split: str = "dev", *, db_url: str | None = None
) -> Dataset:
    """SParC or CoSQL: each turn an item, grouped into `Dataset.interactions`."""
    root = Path(data_dir).expanduser()
    if not root.is_dir():
        raise DatasetError(f"no such folder: {root}")
    files = CONVERSATION_FILES[name]
    question_file = root / files.get(split, f"{split}.json")
    records = _read_json(question_file)
    if not isinstance(records, list) or not all(
        isinstance(r, dict) and isinstance(r.get("interaction"), list) for r in records
    ):
        raise DatasetError(
            f"{question_file} is not a {name} file: a list of interactions, each with "
            "'database_id' and 'interaction' (turns with 'utterance' and 'query')"
        )
    db_root = _conversation_databases(root) if not db_url else root / "database"
    suites: dict[str, list[str] | None] = {}
    items: list[EvalItem] = []
    interactions: list[Interaction] = []
    for number, record in enumerate(records):
        db_id = str(record.get("database_id") or record.get("db_id") or "")
        if db_id not in suites:
            suites[db_id] = None if db_url else _spider_suite(db_root / db_id / f"{db_id}.sqlite")
        turns = []
        for position, turn in enumerate(record["interaction"]):
            item = EvalItem(
                index=len(items),
                db_id=db_id,
                question=str(turn.get("utterance") or ""),
                gold_sql=str(turn.get("query") or ""),
                level=item_hardness(turn),
                interaction=number,
                turn=position,
            )
            suite = suites[db_id]
            if suite is not None:
                item.db, item.db_files = suite[0], suite[1:]
            elif not db_url:
                item.skip_reason = missing_database_reason(db_id)
            items.append(item)
            turns.append(item)
        interactions.append(Interaction(number, db_id, turns))
    if db_url:
        _apply_db_url(items, db_url)
    tables_file = root / "tables.json"
    if not tables_file.is_file():
        tables_file = db_root.parent / "tables.json"
    return Dataset(
        name,  # type: ignore[arg-type]
        split,
        root,
        question_file,
        items,
        _tables_by_db(tables_file),
        interactions,
    )
