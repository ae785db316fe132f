"""Copy SQLite databases (Spider's, BIRD's, your own) into PostgreSQL, DuckDB and MySQL/MariaDB:
`macsql load`."""
