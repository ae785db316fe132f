"""macsql.cli."""
