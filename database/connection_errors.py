"""One-line messages for a database that cannot be opened, naming the fix when there is one.

SQLAlchemy's errors carry the statement it was running and a link to its documentation, over
several lines; a user who gave a wrong password or a CSV file needs the driver's own reason.
"""

from __future__ import annotations

# The package that provides each DBAPI module SQLAlchemy imports for a URL's driver.
_DRIVER_PACKAGES = {
    "MySQLdb": "mysqlclient (or use mysql+pymysql:// with PyMySQL)",
    "pymysql": "PyMySQL",
    "psycopg2": "psycopg2-binary (or use postgresql+psycopg://, which macsql installs)",
    "asyncpg": "asyncpg",
    "pyodbc": "pyodbc",
    "pymssql": "pymssql",
    "oracledb": "oracledb",
    "cx_Oracle": "oracledb",
    "duckdb": "duckdb-engine",
    "snowflake": "snowflake-sqlalchemy",
}


class DatabaseUnavailableError(ValueError):
    """The database is named correctly but cannot be opened or read (wrong password, unknown
    database, not a database file, missing driver)."""


def first_line(text: str, limit: int = 300) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0][:limit] if lines else ""


def describe_database_error(exc: BaseException) -> str:
    """The cause of `exc` in one line: the driver's message without SQLAlchemy's statement and
    link, or the package to install for a missing driver."""
    from sqlalchemy.exc import DBAPIError, NoSuchModuleError

    if isinstance(exc, ModuleNotFoundError) and exc.name:
        top = exc.name.split(".")[0]
        package = _DRIVER_PACKAGES.get(top, top)
        return f"the database driver {top!r} is not installed: pip install {package}"
    if isinstance(exc, NoSuchModuleError):
        dialect = str(exc).rpartition(":")[2].strip() or "this"
        return f"SQLAlchemy knows no {dialect!r} database dialect; check the URL's scheme"
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        reason = first_line(str(exc.orig)) or type(exc.orig).__name__
        # psycopg prefixes the server's message with where it tried to connect.
        return reason.rpartition("failed: FATAL:")[2].strip() if "FATAL:" in reason else reason
    return first_line(str(exc)) or type(exc).__name__
