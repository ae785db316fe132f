"""Optional drivers: a URL whose driver is missing gets one line naming the extra to install."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from macsql.cli.main import main
from macsql.database import drivers
from macsql.database.connection import DatabaseNotFoundError, resolve_database


def hide_modules(monkeypatch: pytest.MonkeyPatch, *hidden: str) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name in hidden else real(name, *args, **kwargs)

    monkeypatch.setattr(drivers.importlib.util, "find_spec", find_spec)


@pytest.mark.parametrize(
    ("url", "hidden", "extra"),
    [
        ("mysql://u:p@127.0.0.1/db", "pymysql", "mysql"),
        ("mariadb://u:p@127.0.0.1/db", "pymysql", "mysql"),
        ("mysql+pymysql://u:p@127.0.0.1/db", "pymysql", "mysql"),
        ("duckdb:////tmp/x.duckdb", "duckdb_engine", "duckdb"),
        ("duckdb:////tmp/x.duckdb", "duckdb", "duckdb"),
    ],
)
def test_missing_driver_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, url: str, hidden: str, extra: str
) -> None:
    hide_modules(monkeypatch, hidden)
    with pytest.raises(DatabaseNotFoundError) as caught:
        resolve_database(url)
    message = str(caught.value)
    assert f'pip install "macsql[{extra}]"' in message
    assert repr(hidden) in message and "\n" not in message


def test_ask_with_a_missing_driver_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hide_modules(monkeypatch, "pymysql")
    code = main(["ask", "How many singers?", "--db", "mysql://u:p@127.0.0.1/concert_singer"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.count("\n") == 0
    assert 'pip install "macsql[mysql]"' in err and "Traceback" not in err


def test_installed_drivers_pass_and_bare_mysql_urls_use_pymysql() -> None:
    ref = resolve_database("mysql://u:p%40ss@127.0.0.1:3306/concert_singer")
    assert ref.url == "mysql+pymysql://u:p%40ss@127.0.0.1:3306/concert_singer"
    assert ref.dialect == "mysql" and ref.name == "concert_singer"
    assert resolve_database("mariadb://u:p@h/db").url.startswith("mariadb+pymysql://")


def test_duckdb_file_must_exist(tmp_path: Any) -> None:
    with pytest.raises(DatabaseNotFoundError, match="database file not found"):
        resolve_database(f"duckdb:///{tmp_path}/missing.duckdb")
    with pytest.raises(DatabaseNotFoundError, match="in-memory DuckDB"):
        resolve_database("duckdb:///:memory:")


def test_mysql_tests_fail_loudly_in_ci_and_skip_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    from mysql_support import require_mysql_url

    monkeypatch.delenv("MACSQL_MYSQL_URL", raising=False)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true but MACSQL_MYSQL_URL is not set"):
        require_mysql_url()
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match=r"scripts/ci_mariadb\.sh"):
        require_mysql_url()
    monkeypatch.setenv("MACSQL_MYSQL_URL", "mysql://u:p@127.0.0.1:1/")
    assert require_mysql_url() == "mysql://u:p@127.0.0.1:1/"
