"""`SchemaInfo.to_dict` is `dataclasses.asdict`, without its deep copy (issue 31): checked on
generated schemas whose value examples hold every kind of value a database returns."""

from __future__ import annotations

import datetime
import decimal
import random
from dataclasses import asdict

from macsql.database.schema import ColumnInfo, ForeignKey, SchemaInfo, TableInfo

VALUES = (
    lambda r: r.choice(["Fresno", "São Paulo", "", "x" * 60]),
    lambda r: r.randint(-(10**12), 10**12),
    lambda r: r.random() * 1e6,
    lambda r: None,
    lambda r: r.random() < 0.5,
    lambda r: bytes(r.randrange(256) for _ in range(r.randint(0, 8))),
    lambda r: decimal.Decimal(r.randint(0, 10**6)) / 100,
    lambda r: datetime.date(2000 + r.randint(0, 30), r.randint(1, 12), r.randint(1, 28)),
    lambda r: (r.randint(0, 9), "t"),
    lambda r: [r.randint(0, 9), ["nested"]],
    lambda r: {"k": r.randint(0, 9)},
)


def generated_schema(rng: random.Random) -> SchemaInfo:
    tables = [
        TableInfo(
            f"t{t}",
            [
                ColumnInfo(
                    f"c{c}",
                    rng.choice(["TEXT", "INTEGER", "REAL", "BLOB", ""]),
                    primary_key=rng.random() < 0.2,
                    full_name=rng.choice(["", "a full name"]),
                    description=rng.choice(["", "described"]),
                    examples=[rng.choice(VALUES)(rng) for _ in range(rng.randint(0, 4))],
                    has_nulls=rng.random() < 0.3,
                )
                for c in range(rng.randint(0, 12))
            ],
        )
        for t in range(rng.randint(0, 6))
    ]
    keys = [ForeignKey(f"t{i}", "c0", f"t{i + 1}", "c0") for i in range(rng.randint(0, 3))]
    return SchemaInfo("db", rng.choice(["sqlite", "postgres"]), tables, keys, ["a note"])


def test_to_dict_is_asdict_on_generated_schemas() -> None:
    rng = random.Random(31)
    for _ in range(300):
        schema = generated_schema(rng)
        plain = schema.to_dict()
        assert plain == asdict(schema)
        assert list(plain) == list(asdict(schema))  # field order too (the cache file's JSON)
        assert SchemaInfo.from_dict(plain) == schema


def test_to_dict_shares_no_mutable_value_with_the_schema() -> None:
    examples = [1, [2, 3], {"k": [4]}]
    schema = SchemaInfo(
        "db", "sqlite", [TableInfo("t", [ColumnInfo("c", "TEXT", examples=examples)])], []
    )
    column = schema.to_dict()["tables"][0]["columns"][0]
    column["examples"].append(5)
    column["examples"][1].append(6)
    column["examples"][2]["k"].append(7)
    assert schema.tables[0].columns[0].examples == [1, [2, 3], {"k": [4]}]
