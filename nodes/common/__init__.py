"""The nodes every pipeline shares: schema loading and linking, execution, approval, the
conversation rewrite and the answer in words."""
