"""CSV files as spreadsheet programs write them load with every character as written: UTF-8
(with or without a byte-order mark), UTF-16 with its mark, and Windows-1252; gzipped or not.
An empty CSV file is refused by name."""

from __future__ import annotations

import csv
import gzip
import io
import random
from pathlib import Path

import pytest

pytest.importorskip("duckdb")

from macsql.database.loaders.csv_text import csv_encoding
from macsql.database.loaders.plan import LoaderError
from macsql.database.loaders.tables import load_tables

# Characters Windows-1252 can write, non-ASCII ones among them (its 0x80-0x9F range too).
CP1252 = "abcXYZ 019,;\"'-éèçñüÖßØåæ€“”‘’…–—™•œŠžŸ¡¿°±²µ¼"
# What UTF-8 and UTF-16 can write beyond that.
WIDE = CP1252 + "表数据ĞŞİקשαβγ😀ℕ"
ENCODINGS = [("utf-8", WIDE), ("utf-8-sig", WIDE), ("utf-16", WIDE), ("cp1252", CP1252)]


def _rows(rng: random.Random, alphabet: str) -> list[list[str]]:
    def cell() -> str:
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))).strip()
        return text if text and not text[0].isdigit() else f"v{text}"

    return [[cell(), cell()] for _ in range(rng.randint(3, 40))]


def _write(path: Path, rows: list[list[str]], encoding: str, gz: bool) -> None:
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows([["name", "note"], *rows])
    data = text.getvalue().encode(encoding)
    path.write_bytes(gzip.compress(data) if gz else data)


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize(("encoding", "alphabet"), ENCODINGS, ids=[e for e, _ in ENCODINGS])
def test_every_character_reads_back_as_written(
    tmp_path: Path, encoding: str, alphabet: str, gz: bool
) -> None:
    import duckdb

    rng = random.Random(f"{encoding}-{gz}")
    for round_ in range(5):
        rows = _rows(rng, alphabet)
        path = tmp_path / f"t{round_}.csv{'.gz' if gz else ''}"
        _write(path, rows, encoding, gz)
        target = load_tables(path, tmp_path / f"t{round_}.duckdb")
        with duckdb.connect(str(target), read_only=True) as duck:
            read = duck.execute(f"SELECT name, note FROM t{round_}").fetchall()
        assert [list(r) for r in read] == rows
    assert sorted(p.name for p in tmp_path.iterdir() if "partial" in p.name) == []


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("naïve,x\n".encode(), "utf-8"),
        ("naïve,x\n".encode("utf-16"), "utf-16"),
        ("naïve,5€\n".encode("cp1252"), "cp1252"),
        # A character cut at a chunk's end is not a decoding error.
        (b"a" * ((1 << 20) - 1) + "é\n".encode(), "utf-8"),
        (b"a" * ((1 << 20) + 5) + b"\xe9\n", "cp1252"),
    ],
    ids=["utf-8", "utf-16", "cp1252", "split-char", "late-byte"],
)
def test_the_encoding_is_told_from_the_bytes(tmp_path: Path, data: bytes, expected: str) -> None:
    path = tmp_path / "f.csv"
    path.write_bytes(data)
    assert csv_encoding(path) == expected


def test_an_undefined_windows_1252_byte_is_kept_as_latin_1(tmp_path: Path) -> None:
    import duckdb

    path = tmp_path / "odd.csv"
    path.write_bytes(b"name\nA\x81B\n")
    with duckdb.connect(str(load_tables(path, tmp_path / "odd.duckdb")), read_only=True) as duck:
        assert duck.execute("SELECT name FROM odd").fetchall() == [("A\x81B",)]


def test_an_empty_csv_file_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_bytes(b"")
    with pytest.raises(LoaderError, match=r"empty\.csv is empty: a CSV file needs at least"):
        load_tables(path, tmp_path / "empty.duckdb")


def test_a_duckdb_error_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # DuckDB's own CSV errors run to a dozen lines; this one (a Windows-1252 file taken for
    # UTF-8) is one of them.
    monkeypatch.setattr("macsql.database.loaders.tables.csv_encoding", lambda path: "utf-8")
    path = tmp_path / "taken.csv"
    path.write_bytes("name\nCafé\n".encode("cp1252"))
    with pytest.raises(LoaderError) as info:
        load_tables(path, tmp_path / "taken.duckdb")
    assert str(info.value).startswith(f"cannot load {path} into DuckDB: Invalid Input Error")
    assert "\n" not in str(info.value)
