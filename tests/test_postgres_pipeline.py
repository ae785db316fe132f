"""MAC-SQL on a real PostgreSQL server: `macsql ask`, the schema in PostgreSQL's dialect."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from conftest import (
    FRANCE,
    FRENCH_SINGERS,
    ask_scripted,
    french_singers,
    spider_eval_args,
)

from macsql.cli.main import main
from macsql.database.connection import DatabaseRef, get_engine
from macsql.database.relation_inventory import clear_inventories
from macsql.database.schema import build_schema
from macsql.prompts.schema_text import render_foreign_keys

pytestmark = pytest.mark.postgres


def test_schema_of_a_loaded_spider_database(pg_spider: Callable[[str], DatabaseRef]) -> None:
    ref = pg_spider("concert_singer")
    assert ref.dialect == "postgres"
    schema = build_schema(ref)
    singer = schema.table("singer")
    assert singer is not None and singer.column("singer_id").primary_key
    assert "France" in singer.column("country").examples
    assert '"singer_id" = singer."singer_id"' in render_foreign_keys(schema)


def test_engines_are_pooled_per_database(pg_spider: Callable[[str], DatabaseRef]) -> None:
    assert get_engine(pg_spider("pets_1")) is get_engine(pg_spider("pets_1"))
    assert get_engine(pg_spider("pets_1")) is not get_engine(pg_spider("car_1"))


def test_ask_on_postgres_with_a_refine(
    pg_spider: Callable[[str], DatabaseRef], capsys: pytest.CaptureFixture[str]
) -> None:
    ref = pg_spider("concert_singer")
    clear_inventories()
    replies = [
        # SQLite habits fail on PostgreSQL: the Refiner sees the server's message.
        '```sql\nSELECT name FROM singer WHERE country = "France"\n```',
        f"```sql\n{FRENCH_SINGERS}\n```",
    ]
    code, (decomposer_prompt, refiner_prompt) = ask_scripted(ref.url, replies, FRANCE)
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert code == 0, out
    assert out["attempts"] == 2
    # the tests connect as a role that may only read: nothing to warn about
    assert "warning" not in captured.err
    assert out["rows"] == french_singers()
    assert len(out["rows"]) >= 2
    assert "PostgreSQL" in decomposer_prompt and "double quotes" in decomposer_prompt
    # the database's message, quoted as data (its own quotes escaped)
    assert '"column \\"France\\" does not exist' in refiner_prompt
    assert "UndefinedColumn" in refiner_prompt


@pytest.mark.slow
@pytest.mark.needs_data("spider")
def test_eval_gold_on_postgres(
    pg_admin_url: str, tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    from pg_support import allow_privileged

    from macsql.database.loaders.postgres import database_url

    clear_inventories()
    # The admin role, accepted on purpose: warned about once, on stderr, with the fix.
    url = allow_privileged(database_url(pg_admin_url, "DBID")).replace("DBID", "{db_id}")
    out = tmp_path / "pg-gold"
    code = main(spider_eval_args(out, "--gold", "--db-url", url))
    assert code == 0
    err = capsys.readouterr().err
    assert err.count("because the URL allows a privileged role") == 1, err
    assert "--grant-select-to ROLE" in err
    summary = json.loads((out / "summary.json").read_text())
    # Every gold query that is valid PostgreSQL scores; SQLite-only gold is a dataset error.
    assert summary["n_scored"] >= 150
    assert summary["ex"] == 100.0
    reasons = " ".join(summary["skip_reasons"])
    assert 'database "wta_1" does not exist' in reasons
    assert summary["n_scored"] + summary["n_skipped"] == 1034
