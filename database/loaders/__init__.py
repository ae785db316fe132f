"""Copy SQLite databases (Spider's, BIRD's, your own) into PostgreSQL, DuckDB and MySQL/MariaDB:
`macsql load` (`command`). `plan` is what every loader shares (sources, table plans, reports);
`postgres`, `duckdb` and `mysql` write one backend each; `tables` loads CSV and Parquet files
into DuckDB for the Python API.
"""
