"""macsql.graph: the wiring. One module per pipeline builds its StateGraph from the nodes, and
exports `builder` (uncompiled, for hosts with their own checkpointer) and `graph` (compiled, for
LangGraph Studio and servers); `registry` finds a pipeline by name."""
