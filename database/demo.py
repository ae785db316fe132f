"""The project's own demo database: a small bookshop, generated deterministically.

`macsql ask ... --db demo` uses it, so a fresh machine has something to ask about.
"""

from __future__ import annotations

import random
import sqlite3
from datetime import date, timedelta
from pathlib import Path

from macsql.database.atomic_files import replacing
from macsql.database.cache_paths import cache_root

DEMO_NAME = "demo"

_SCHEMA = """
CREATE TABLE author (
    author_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    country TEXT,
    born INTEGER
);
CREATE TABLE book (
    book_id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    author_id INTEGER NOT NULL REFERENCES author(author_id),
    genre TEXT NOT NULL,
    published INTEGER,
    price REAL NOT NULL
);
CREATE TABLE customer (
    customer_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    city TEXT NOT NULL,
    joined DATE NOT NULL
);
CREATE TABLE sale (
    sale_id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customer(customer_id),
    book_id INTEGER NOT NULL REFERENCES book(book_id),
    sold_on DATE NOT NULL,
    quantity INTEGER NOT NULL
);
"""

_AUTHORS = [
    ("Amara Ndiaye", "Senegal", 1971),
    ("Tomasz Wolny", "Poland", 1958),
    ("Keiko Arai", "Japan", 1983),
    ("Lucia Ferreira", "Brazil", 1966),
    ("Owen Pritchard", "Wales", 1949),
    ("Ingrid Solberg", "Norway", 1990),
    ("Rafael Quiroga", "Argentina", 1977),
    ("Mei Lin Tan", "Singapore", None),
]
_GENRES = ["mystery", "science fiction", "history", "poetry", "travel", "cooking"]
_WORDS = [
    "Silent",
    "Harbour",
    "Copper",
    "Winter",
    "Garden",
    "Atlas",
    "Lantern",
    "River",
    "Northern",
    "Glass",
    "Orchard",
    "Signal",
    "Paper",
    "Salt",
    "Island",
    "Clockwork",
]
_CITIES = ["Lisbon", "Dakar", "Osaka", "Bergen", "Cardiff", "Rosario", "Krakow"]
_FIRST = ["Ana", "Bruno", "Chiara", "Dmitri", "Efua", "Farid", "Greta", "Hiro", "Ines", "Jonas"]
_LAST = ["Silva", "Mensah", "Kowalski", "Sato", "Hughes", "Berg", "Diaz", "Okoro"]


def build_demo_database(path: Path, *, seed: int = 7) -> Path:
    """Write the demo database to `path` (replacing it), the same every time."""
    rng = random.Random(seed)
    with replacing(path) as tmp:
        _write_demo_database(tmp, rng)
    return path


def _write_demo_database(tmp: Path, rng: random.Random) -> None:
    conn = sqlite3.connect(tmp)
    try:
        conn.executescript(_SCHEMA)
        conn.executemany(
            "INSERT INTO author VALUES (?, ?, ?, ?)", [(i + 1, *a) for i, a in enumerate(_AUTHORS)]
        )
        books = []
        for book_id in range(1, 41):
            title = f"The {rng.choice(_WORDS)} {rng.choice(_WORDS)}"
            books.append(
                (
                    book_id,
                    title,
                    rng.randint(1, len(_AUTHORS)),
                    rng.choice(_GENRES),
                    rng.randint(1985, 2024),
                    round(rng.uniform(6, 45), 2),
                )
            )
        conn.executemany("INSERT INTO book VALUES (?, ?, ?, ?, ?, ?)", books)
        start = date(2023, 1, 1)
        customers = [
            (
                i,
                f"{rng.choice(_FIRST)} {rng.choice(_LAST)}",
                rng.choice(_CITIES),
                (start + timedelta(days=rng.randint(0, 300))).isoformat(),
            )
            for i in range(1, 61)
        ]
        conn.executemany("INSERT INTO customer VALUES (?, ?, ?, ?)", customers)
        sales = [
            (
                i,
                rng.randint(1, 60),
                rng.choice(books)[0],
                (start + timedelta(days=rng.randint(0, 700))).isoformat(),
                rng.choice([1, 1, 1, 2, 2, 3]),
            )
            for i in range(1, 501)
        ]
        conn.executemany("INSERT INTO sale VALUES (?, ?, ?, ?, ?)", sales)
        conn.commit()
    finally:
        conn.close()


def demo_database_path() -> Path:
    return cache_root() / "demo" / "bookshop.sqlite"


def ensure_demo_database() -> Path:
    """The demo database's path, generating it on first use."""
    path = demo_database_path()
    if not path.is_file():
        build_demo_database(path)
    return path
