"""macsql.nodes."""
