"""macsql.database."""
