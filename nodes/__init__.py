"""macsql.nodes: one module per graph node, a plain function of `(state, runtime)`.

`common` holds the nodes every pipeline shares (load_schema, link_schema, executor, approval,
contextualize, answer); `macsql`, `sqlfix` and `r3` hold each pipeline's own agents.
"""
