"""The tests' data rule: benchmark data from one place, a skip that says how to get it, a failure
under CI; and the generated databases the core tests use instead."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import conftest
import pytest


@pytest.fixture
def no_spider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "spider"
    _, probe, source = conftest.DATASETS["spider"]
    monkeypatch.setitem(conftest.DATASETS, "spider", (folder, probe, source))
    return folder


def test_missing_data_skips_with_how_to_get_it(
    no_spider: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        conftest.require_data("spider")
    reason = str(skipped.value)
    assert str(no_spider) in reason and "MACSQL_DATA_DIR" in reason
    assert "yale-lily.github.io/spider" in reason and "database/<db_id>/<db_id>.sqlite" in reason


def test_missing_data_fails_under_ci(no_spider: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true but this test needs the spider"):
        conftest.require_data("spider")


def test_present_data_is_returned(no_spider: Path) -> None:
    no_spider.mkdir()
    (no_spider / "dev.json").write_text("[]")
    assert conftest.require_data("spider") == no_spider


def test_the_data_folder_comes_from_the_environment_else_beside_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MACSQL_DATA_DIR", str(tmp_path))
    assert conftest.data_dir() == tmp_path.resolve()
    monkeypatch.delenv("MACSQL_DATA_DIR")
    checkout = Path(conftest.__file__).resolve().parents[1]
    assert conftest.data_dir() == checkout.parent / "shared" / "data"


def test_generated_spider_sample_answers_its_own_gold() -> None:
    root = conftest.spider_sample()
    dev = json.loads((root / "dev.json").read_text())
    assert len(dev) == len(conftest.SAMPLE_QUESTIONS) == 20
    conn = sqlite3.connect(root / "database" / "concert_singer" / "concert_singer.sqlite")
    try:
        for item in dev:
            assert conn.execute(item["query"]).fetchall(), item["question"]
        assert conn.execute("SELECT count(*) FROM singer").fetchone() == (6,)
    finally:
        conn.close()
