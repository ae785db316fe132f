"""macsql.llm."""
