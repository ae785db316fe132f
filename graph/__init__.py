"""macsql.graph."""
