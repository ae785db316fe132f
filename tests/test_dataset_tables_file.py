"""Spider's and BIRD's schema file (`tables.json`) is read when first asked for: an eval that
scores by execution never reads it, and what it holds is the same as an eager read."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from macsql.evals.datasets import DatasetError, TablesFile, load_dataset


def _spider(root: Path, rng: random.Random, n_dbs: int) -> list[dict[str, Any]]:
    entries, questions = [], []
    for d in range(n_dbs):
        db_id = f"db{d}"
        folder = root / "database" / db_id
        folder.mkdir(parents=True)
        sqlite3.connect(folder / f"{db_id}.sqlite").close()
        tables = [f"t{t}" for t in range(rng.randint(1, 4))]
        entries.append({"db_id": db_id, "table_names_original": tables, "foreign_keys": []})
        questions.append({"db_id": db_id, "question": f"q{d}", "query": "SELECT 1"})
    (root / "tables.json").write_text(json.dumps(entries))
    (root / "dev.json").write_text(json.dumps(questions))
    return entries


def test_the_tables_file_is_read_on_first_use_with_the_same_entries(
    tmp_path: Path, monkeypatch: Any
) -> None:
    rng = random.Random(31)
    entries = _spider(tmp_path, rng, rng.randint(3, 9))
    reads: list[Path] = []
    import macsql.evals.datasets as datasets

    real = datasets._read_json
    monkeypatch.setattr(datasets, "_read_json", lambda p: reads.append(p) or real(p))
    dataset = load_dataset("spider", tmp_path)
    assert reads == [tmp_path / "dev.json"]  # the questions only
    assert dict(dataset.tables) == {e["db_id"]: e for e in entries}
    assert dataset.tables.get("db0") == entries[0] and "nope" not in dataset.tables
    assert reads == [tmp_path / "dev.json", tmp_path / "tables.json"]  # once


def test_a_broken_tables_file_still_says_so(tmp_path: Path) -> None:
    broken = tmp_path / "tables.json"
    broken.write_text("[{")
    with pytest.raises(DatasetError, match="not valid JSON"):
        dict(TablesFile(broken))
    assert dict(TablesFile(tmp_path / "missing.json")) == {}
