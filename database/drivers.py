"""Optional database drivers: which extra installs each, and URLs that name a maintained one.

SQLite and PostgreSQL drivers come with macsql. MySQL/MariaDB (PyMySQL) and DuckDB
(duckdb-engine) are optional extras; a URL for them without the driver installed gets one line
naming the extra to install, instead of SQLAlchemy's `No module named 'MySQLdb'`.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

# SQLAlchemy backend -> (modules its macsql driver needs, the extra that installs them).
OPTIONAL_DRIVERS: dict[str, tuple[tuple[str, ...], str]] = {
    "mysql": (("pymysql",), "mysql"),
    "mariadb": (("pymysql",), "mysql"),
    "duckdb": (("duckdb", "duckdb_engine"), "duckdb"),
}

# A bare `mysql://` would pick SQLAlchemy's default driver, mysqlclient (MySQLdb), a C build.
_DEFAULT_DRIVERS = {"mysql": "mysql+pymysql", "mariadb": "mariadb+pymysql"}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def check_driver(url: URL) -> str | None:
    """A one-line error when `url`'s optional driver is not installed, else None."""
    backend = url.get_backend_name()
    needed = OPTIONAL_DRIVERS.get(backend)
    if needed is None or (url.drivername not in (backend, *_DEFAULT_DRIVERS.values())):
        return None  # a driver the user chose explicitly: SQLAlchemy reports on it
    modules, extra = needed
    missing = [module for module in modules if not _installed(module)]
    if not missing:
        return None
    return (
        f"the {backend} driver is not installed (no module {missing[0]!r}): "
        f'pip install "macsql[{extra}]"'
    )


def normalise_url(text: str) -> str:
    """`mysql://` and `mariadb://` -> PyMySQL; other URLs unchanged (the text, not re-rendered,
    so that a password keeps its exact spelling)."""
    from sqlalchemy.engine import make_url

    url = make_url(text)
    driver = _DEFAULT_DRIVERS.get(url.drivername)
    if driver is None:
        return text
    return text.replace(url.drivername, driver, 1)
