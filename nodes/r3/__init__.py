"""R^3's agents: k-shot examples, the SQL writer and the reviewers."""
