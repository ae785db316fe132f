"""Embed macsql in your own assistant: a chat graph that answers data questions with SQL.

The parent graph has its own state, a chat history (`messages`, with `add_messages`), and uses
the macsql graph as one of its nodes. Two ways are shown:

(a) `build_direct_assistant`: the compiled macsql graph *is* the node. LangGraph then passes the
    parent state to it and writes macsql's output back, key by key, so the parent state must
    share macsql's input keys (`question`, `db`, `evidence`) and declares only the output keys it
    wants (`sql`, `status`, `rows`, ...). Declare `error` with `status`: it is the only key that
    says why a run failed. (Or derive the state from `macsql.core.state.MacSqlOutput`.) A small
    node before it maps the last user message to `question`; one after it turns the result into
    an AI message.

(b) `build_wrapper_assistant`: a node of the parent invokes macsql itself, mapping the last user
    message to macsql's input and only macsql's output back into an AI message. The parent
    state then needs none of macsql's keys.

(c) `build_chat_assistant`: a small chat assistant. macsql reads the whole conversation from
    `messages`, so a follow-up ("and in 2019?") is rewritten into a standalone question first,
    and with `Context(answer=True)` it answers in words; the reply keeps the SQL in the AI
    message's `additional_kwargs["macsql"]`, where the next follow-up finds it.

Either way the run's `context=` (a `macsql.core.context.Context`) reaches macsql's agents,
and a checkpointer given to the parent also persists macsql's state (so `approve_sql`
interrupts inside macsql pause and resume the parent). Stream with `subgraphs=True` to see
macsql's own updates and progress events.

Run `python examples/assistant_subgraph.py` for an offline demo on the bundled demo database
with a scripted model; pass `--model openai:gpt-4o-mini` (and an API key) for a real one.
"""

from __future__ import annotations

import argparse
from typing import Annotated, Any, NotRequired

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.runtime import Runtime
from typing_extensions import TypedDict  # pydantic (Studio's schemas) needs it on Python < 3.12

from macsql.core.context import Context
from macsql.core.records import Usage, merge_usage
from macsql.graph.macsql_graph import graph as macsql_graph

# --------------------------------------------------------------------------- shared helpers


def last_user_text(messages: list[AnyMessage]) -> str:
    """The text of the newest human message: the question for macsql."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            content = message.content
            if isinstance(content, list):  # content blocks: the text ones, as separate words
                parts = (
                    c if isinstance(c, str) else c.get("text") or ""
                    for c in content
                    if isinstance(c, str) or c.get("type", "text") == "text"
                )
                return " ".join(part.strip() for part in parts if part.strip())
            return str(content)
    return ""


def answer_text(result: dict[str, Any], max_rows: int = 10) -> str:
    """A chat reply from macsql's output keys."""
    if result.get("status") != "ok":
        reason = result.get("error") or "unknown error"
        return f"I could not answer that from the database: {reason}"
    columns = result.get("columns") or []
    rows = result.get("rows") or []
    lines = [f"SQL: {result.get('sql')}"]
    if columns:
        lines.append(" | ".join(str(c) for c in columns))
    lines += [" | ".join("NULL" if v is None else str(v) for v in row) for row in rows[:max_rows]]
    if len(rows) > max_rows or result.get("truncated"):
        lines.append("(more rows not shown)")
    return "\n".join(lines)


class ChatInput(TypedDict):
    """What the assistant is called with: the conversation and the database it may query."""

    messages: Annotated[list[AnyMessage], add_messages]
    db: str


class ChatOutput(TypedDict):
    """What the assistant's caller gets back: the conversation, with the assistant's answer."""

    messages: Annotated[list[AnyMessage], add_messages]


# --------------------------------------------------------------------------- (a) graph as a node


class DirectAssistantState(TypedDict):
    """Chat state plus exactly the macsql keys this assistant uses.

    - macsql's input keys (`question`, `db`, `evidence`), which the parent fills; macsql's
      `input_schema` reads only these from the parent;
    - the macsql output keys the assistant wants. Output keys it does not declare (e.g.
      `selector_fallback`) are simply not written into the parent; macsql's internal keys
      (schema text, candidate SQL, counters) never reach it, thanks to macsql's narrow
      `output_schema`.
    - `usage` keeps macsql's reducer, so it adds up over the turns of a conversation.
    """

    messages: Annotated[list[AnyMessage], add_messages]
    question: NotRequired[str]
    db: str
    evidence: NotRequired[str]
    sql: NotRequired[str]
    status: NotRequired[str]
    error: NotRequired[str | None]
    columns: NotRequired[list[str]]
    rows: NotRequired[list[list[Any]]]
    truncated: NotRequired[bool]
    attempts: NotRequired[int]
    usage: NotRequired[Annotated[Usage, merge_usage]]


def prepare_question(state: DirectAssistantState) -> dict[str, Any]:
    """Map the chat to macsql's input keys."""
    return {"question": last_user_text(state["messages"]), "evidence": ""}


def reply_from_result(state: DirectAssistantState) -> dict[str, Any]:
    """Turn macsql's output keys, now in the parent state, into one AI message."""
    return {"messages": [AIMessage(answer_text(dict(state)), name="macsql")]}


def build_direct_assistant() -> StateGraph:
    """(a) The compiled macsql graph added directly as a node named `macsql`."""
    builder: Any = StateGraph(
        DirectAssistantState,
        context_schema=Context,
        input_schema=ChatInput,
        output_schema=ChatOutput,
    )
    builder.add_node("prepare_question", prepare_question)
    builder.add_node("macsql", macsql_graph)
    builder.add_node("reply", reply_from_result)
    builder.add_edge(START, "prepare_question")
    builder.add_edge("prepare_question", "macsql")
    builder.add_edge("macsql", "reply")
    builder.add_edge("reply", END)
    return builder


# --------------------------------------------------------------------------- (b) wrapper node


class WrapperAssistantState(TypedDict):
    """Chat state with no macsql keys at all; only what the assistant itself keeps."""

    messages: Annotated[list[AnyMessage], add_messages]
    db: str
    last_sql: NotRequired[str]
    usage: NotRequired[Annotated[Usage, merge_usage]]


def ask_database(state: WrapperAssistantState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Map the last user message to macsql's input, invoke it, map its output back.

    Invoked inside a node, macsql runs as a subgraph of this run: it shares the run's
    checkpointer (its state is saved under this node's namespace, and its interrupts pause the
    parent) and its stream (`subgraphs=True`). The context is passed on explicitly.
    """
    result = macsql_graph.invoke(
        {"question": last_user_text(state["messages"]), "db": state["db"]},
        context=runtime.context,
    )
    return {
        "messages": [AIMessage(answer_text(result), name="macsql")],
        "last_sql": result.get("sql", ""),
        "usage": result.get("usage") or {},
    }


def build_wrapper_assistant() -> StateGraph:
    """(b) A wrapper node that invokes the macsql graph."""
    builder: Any = StateGraph(
        WrapperAssistantState,
        context_schema=Context,
        input_schema=ChatInput,
        output_schema=ChatOutput,
    )
    builder.add_node("ask_database", ask_database)
    builder.add_edge(START, "ask_database")
    builder.add_edge("ask_database", END)
    return builder


# --------------------------------------------------------------------------- (c) a chat assistant


class ChatAssistantState(TypedDict):
    """A MessagesState-style chat: macsql reads the conversation itself from `messages` (the
    newest human message is the question, earlier ones make follow-ups standalone), and writes
    back the output keys declared here, including the answer in words."""

    messages: Annotated[list[AnyMessage], add_messages]
    db: str
    sql: NotRequired[str]
    status: NotRequired[str]
    error: NotRequired[str | None]
    columns: NotRequired[list[str]]
    rows: NotRequired[list[list[Any]]]
    truncated: NotRequired[bool]
    answer: NotRequired[str]
    usage: NotRequired[Annotated[Usage, merge_usage]]


def chat_reply(state: ChatAssistantState) -> dict[str, Any]:
    """The answer in words (`Context.answer`), or the table; the SQL rides along in
    `additional_kwargs["macsql"]`, where the next turn's follow-up rewriting finds it."""
    text = state.get("answer") or answer_text(dict(state))
    meta = {"macsql": {"sql": state.get("sql") or ""}}
    return {"messages": [AIMessage(text, name="macsql", additional_kwargs=meta)]}


def build_chat_assistant() -> StateGraph:
    """(c) The macsql graph as a node of a chat whose only input is the conversation."""
    builder: Any = StateGraph(
        ChatAssistantState,
        context_schema=Context,
        input_schema=ChatInput,
        output_schema=ChatOutput,
    )
    builder.add_node("macsql", macsql_graph)
    builder.add_node("reply", chat_reply)
    builder.add_edge(START, "macsql")
    builder.add_edge("macsql", "reply")
    builder.add_edge("reply", END)
    return builder


direct_builder = build_direct_assistant()
wrapper_builder = build_wrapper_assistant()
direct_assistant = direct_builder.compile(name="assistant_direct")
wrapper_assistant = wrapper_builder.compile(name="assistant_wrapper")
chat_builder = build_chat_assistant()
chat_assistant = chat_builder.compile(name="assistant_chat")


# --------------------------------------------------------------------------- demo


def _demo(argv: list[str] | None = None) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from macsql.database.demo import ensure_demo_database
    from macsql.llm.models import registered_chat_model
    from macsql.testing.scripted import ScriptedChatModel

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question", nargs="?", default="How many books are there per genre?")
    parser.add_argument("--model", default=None, help="e.g. openai:gpt-4o-mini (default scripted)")
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--wrapper", action="store_true", help="use way (b), the wrapper node")
    parser.add_argument(
        "--chat",
        action="store_true",
        help="way (c): a conversation, one question per line of stdin, answered in words",
    )
    args = parser.parse_args(argv)

    def scripted_reply(prompt: str) -> str:
        if prompt.startswith("You help a text-to-SQL system follow a conversation"):
            newest = prompt.split("Newest message:", 1)[1].splitlines()[0].strip()
            return f"Question: {newest}\nBuilds on the previous SQL: no"
        if prompt.startswith("You turn the result of a database query"):
            return "Here is what the database says (a scripted answer)."
        return (
            "```sql\nSELECT genre, COUNT(*) AS books FROM book GROUP BY genre ORDER BY genre\n```"
        )

    scripted = ScriptedChatModel(responder=scripted_reply)
    with registered_chat_model("scripted-demo", scripted):
        context = Context(
            model=args.model or "scripted-demo", base_url=args.base_url, answer=args.chat
        )
        db = str(ensure_demo_database())
        if args.chat:
            _chat_demo(context, db)
            return
        builder = wrapper_builder if args.wrapper else direct_builder
        assistant = builder.compile(checkpointer=InMemorySaver())
        config = {"configurable": {"thread_id": "demo"}}
        payload = {"messages": [HumanMessage(args.question)], "db": db}
        for namespace, mode, chunk in assistant.stream(
            payload, config, context=context, stream_mode=["custom", "updates"], subgraphs=True
        ):
            where = "/".join(part.split(":")[0] for part in namespace) or "assistant"
            if mode == "custom":
                print(f"  [{where}] {chunk.get('agent')} {chunk.get('phase')}")
            else:
                print(f"  [{where}] update from {', '.join(chunk)}")
        print(assistant.get_state(config).values["messages"][-1].content)


def _chat_demo(context: Context, db: str) -> None:
    """One thread; each line of stdin is the next message of the conversation."""
    import sys

    from langgraph.checkpoint.memory import InMemorySaver

    assistant = chat_builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "chat-demo"}}
    for line in sys.stdin:
        if not line.strip():
            continue
        result = assistant.invoke(
            {"messages": [HumanMessage(line.strip())], "db": db}, config, context=context
        )
        print(f"you: {line.strip()}\nassistant: {result['messages'][-1].content}")


if __name__ == "__main__":
    _demo()
