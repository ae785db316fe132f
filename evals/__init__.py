"""macsql.evals."""
