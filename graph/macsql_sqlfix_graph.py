"""SQLFixAgent as a repair stage after MAC-SQL: `macsql` writes the SQL, `sqlfix` checks it.

    [contextualize] → macsql (subgraph) → sqlfix (subgraph, given macsql's `sql`) → [answer]

Both stages are the registered graphs (without their own `answer` node), embedded as subgraphs
through their narrow input and output schemas: macsql's output key `sql` is sqlfix's input key
`sql`. When macsql ends with no SQL at all (the model unreachable, or no reply with SQL), there is
nothing to review and the run ends there. The output is sqlfix's; `usage` adds up both stages'
model calls. A follow-up question is made standalone once, here; the stages get it with
`standalone_question` equal to `question` and do not rewrite it again.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.graph import END, StateGraph

from macsql.graph.beginning import start_through_contextualize
from macsql.graph.context import MacSqlSqlFixContext
from macsql.graph.ending import with_endings
from macsql.graph.macsql_graph import build_macsql_graph
from macsql.graph.sqlfix_graph import build_sqlfix_graph
from macsql.graph.state import MacSqlInput, MacSqlSqlFixState, SqlFixOutput


def route_after_macsql(state: MacSqlSqlFixState) -> Literal["sqlfix", "__end__"]:
    return "sqlfix" if (state.get("sql") or "").strip() else "__end__"


def build_macsql_sqlfix_graph() -> StateGraph[
    MacSqlSqlFixState, MacSqlSqlFixContext, MacSqlInput, SqlFixOutput
]:
    builder: Any = StateGraph(
        MacSqlSqlFixState,
        context_schema=MacSqlSqlFixContext,
        input_schema=MacSqlInput,
        output_schema=SqlFixOutput,
    )
    # The stages run without their own answer node: the answer, if any, is written last.
    builder.add_node("macsql", build_macsql_graph().compile(name="macsql"))
    builder.add_node("sqlfix", build_sqlfix_graph().compile(name="sqlfix"))
    start_through_contextualize(builder, "macsql")
    builder.add_conditional_edges("macsql", route_after_macsql)
    builder.add_edge("sqlfix", END)
    return builder


builder = with_endings(build_macsql_sqlfix_graph())
graph = builder.compile(name="macsql+sqlfix")
