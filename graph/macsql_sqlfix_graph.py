"""SQLFixAgent as a repair stage after MAC-SQL: `macsql` writes the SQL, `sqlfix` checks it.

    [contextualize] → macsql (subgraph) → sqlfix (subgraph, given macsql's `sql`) → finish
    → [answer]

Both stages are the registered graphs (without their own `answer` node), embedded as subgraphs
through their narrow input and output schemas: macsql's output key `sql` is sqlfix's input key
`sql`. When macsql ends with no SQL at all (the model unreachable, or no reply with SQL), there is
nothing to review and the run ends there. The output is sqlfix's; `usage` adds up both stages'
model calls. A follow-up question is made standalone once, here; the stages get it with
`standalone_question` equal to `question` and do not rewrite it again.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.graph import StateGraph

from macsql.core.context import MacSqlSqlFixContext
from macsql.core.state import MacSqlInput, MacSqlSqlFixState, SqlFixOutput
from macsql.graph.macsql_graph import build_macsql_graph
from macsql.graph.routing import FINISH, add_conversation_start, add_finish
from macsql.graph.sqlfix_graph import build_sqlfix_graph


def route_after_macsql(state: MacSqlSqlFixState) -> Literal["sqlfix", "finish"]:
    return "sqlfix" if (state.get("sql") or "").strip() else FINISH


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
    builder.add_node("macsql", build_macsql_graph(answer=False).compile(name="macsql"))
    # The SQL it hands on ran in the MAC-SQL stage, so under `approve_sql` a person approved it
    # there: the SQLFixAgent stage reviews it without asking about it a second time.
    sqlfix = build_sqlfix_graph(answer=False, given_sql_approved=True)
    builder.add_node("sqlfix", sqlfix.compile(name="sqlfix"))
    add_conversation_start(builder, "macsql")
    builder.add_conditional_edges("macsql", route_after_macsql)
    builder.add_edge("sqlfix", FINISH)
    add_finish(builder)
    return builder


builder = build_macsql_sqlfix_graph()
graph = builder.compile(name="macsql+sqlfix")
