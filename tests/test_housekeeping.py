"""Housekeeping (issue 14): a quiet install, and quiet schema reflection that loses nothing."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

from sqlalchemy.exc import SAWarning

from macsql.database.connection import dispose_all, resolve_database
from macsql.database.schema import build_schema

ROOT = Path(__file__).resolve().parents[1]


def test_building_the_metadata_prints_no_license_deprecation(tmp_path: Path) -> None:
    """setuptools deprecates `project.license` as a TOML table; the SPDX string is current."""
    proc = subprocess.run(
        [sys.executable, "-W", "always", "-c",
         "import sys; from setuptools import build_meta; "
         "print(build_meta.prepare_metadata_for_build_wheel(sys.argv[1]))", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )  # fmt: skip
    assert "project.license" not in proc.stderr, proc.stderr
    metadata = (tmp_path / proc.stdout.strip().splitlines()[-1] / "METADATA").read_text()
    assert "License-Expression: MIT" in metadata


def test_reflection_warnings_are_silenced_and_nothing_is_lost(tmp_path: Path) -> None:
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript(
            """
            CREATE TABLE Customer (cust_id INTEGER(11) PRIMARY KEY, name varchar(20));
            CREATE TABLE loan (
                loan_id BIGINT(20) PRIMARY KEY,
                cust_ID INTEGER(11),
                FOREIGN KEY (Cust_ID) REFERENCES customer(Cust_ID)
            );
            INSERT INTO Customer VALUES (1, 'Ada');
            INSERT INTO loan VALUES (10, 1);
            """
        )
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            schema = build_schema(resolve_database(str(path)))
    finally:
        dispose_all()
    assert [str(w.message)[:80] for w in caught if issubclass(w.category, SAWarning)] == []
    assert [(fk.table, fk.column, fk.ref_table, fk.ref_column) for fk in schema.foreign_keys] == [
        ("loan", "cust_ID", "Customer", "cust_id")
    ]
    loan = schema.table("loan")
    assert loan is not None
    assert [(c.name, c.type) for c in loan.columns] == [
        ("loan_id", "BIGINT"),
        ("cust_ID", "INTEGER"),
    ]
