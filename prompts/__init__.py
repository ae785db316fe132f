"""macsql.prompts."""
