"""`contextualize`: a follow-up question becomes a standalone one, from the conversation.

History comes from either source a host has: earlier turns that macsql kept itself on a
checkpointed thread (or that the caller passed as `turns`), or a LangGraph `messages` list. The
rewriter sees earlier questions and their SQL and outcome, never their rows. Without history no
model is called.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast, get_type_hints

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from macsql.core.context import Agent, BaseContext, ContextT, context_of
from macsql.core.events import emit
from macsql.core.records import ConversationTurn, Fallback, Usage
from macsql.core.state import PipelineState, SqlFixInput
from macsql.llm.agent_calls import call_agent
from macsql.nodes.common.close_turn import closed_turn, on_thread, open_turn
from macsql.prompts import render_prompt
from macsql.replies.follow_ups import follow_up_cue
from macsql.replies.reader import extract_sql
from macsql.replies.rewrite import read_rewrite


def message_text(message: AnyMessage) -> str:
    """A message's text, or its text blocks (OpenAI's and LangChain's) joined; images, files
    and other blocks say nothing here. A person's blocks are joined by a space, since a client
    that splits a question into blocks means them as separate words; a model's as they are
    (a reply's blocks may split a SQL block anywhere)."""
    content = message.content
    if not isinstance(content, list):
        return str(content or "")
    parts = [_block_text(block) for block in content]
    if not isinstance(message, HumanMessage):
        return "".join(parts)
    return " ".join(part.strip() for part in parts if part.strip())


def _block_text(block: object) -> str:
    if isinstance(block, str):
        return block
    if isinstance(block, dict) and block.get("type", "text") == "text":
        text = block.get("text")
        return text if isinstance(text, str) else ""
    return ""


def has_words(question: str) -> bool:
    """Whether `question` has a letter or digit in any script: one that has none ('-', '?')
    is not asked, nor rewritten (`load_schema` fails the run)."""
    return any(ch.isalnum() for ch in question)


def split_messages(messages: list[AnyMessage]) -> tuple[list[ConversationTurn], str]:
    """Earlier turns and the newest human message's text. An AI message gives its turn's SQL:
    macsql's own (`additional_kwargs["macsql"]["sql"]`) or a ```sql block; its prose is never
    used, since it may quote result rows."""
    turns: list[ConversationTurn] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            turns.append({"question": message_text(message).strip()})
        elif isinstance(message, AIMessage) and turns:
            meta = message.additional_kwargs.get("macsql")
            sql = meta.get("sql") if isinstance(meta, dict) else None
            sql = sql or extract_sql(message_text(message))
            if sql:
                turns[-1]["sql"] = str(sql)
    if turns:
        latest = turns.pop()
        return turns, latest.get("question", "")
    return [], ""


def finished_turn(state: PipelineState) -> ConversationTurn | None:
    """The previous run on this thread when its turn is not in `turns` yet (a thread saved
    before turns were recorded as they start): from its keys, which are still in the state."""
    asked = state.get("asked")
    turns = state.get("turns") or []
    if not asked or (turns and turns[-1].get("question") == asked):
        return None
    return closed_turn(state)


def render_history(turns: list[ConversationTurn]) -> str:
    lines = []
    for number, turn in enumerate(turns, 1):
        lines.append(f"{number}. User: {turn.get('question', '')}")
        standalone = turn.get("standalone_question")
        if standalone and standalone != turn.get("question"):
            lines.append(f"   (understood as: {standalone})")
        sql = turn.get("sql")
        lines.append(f"   SQL: {sql}" if sql else "   SQL: (none)")
        if turn.get("outcome"):
            lines.append(f"   Outcome: {turn['outcome']}")
    return "\n".join(lines)


def parse_rewrite(reply: str) -> tuple[str | None, bool]:
    """The standalone question and whether it builds on the previous SQL, from a reply in any
    form (`macsql.replies.rewrite`)."""
    rewrite = read_rewrite(reply)
    return rewrite.question, rewrite.builds_on_sql


# Every text key of every pipeline's input (SQLFixAgent's holds them all), read off the schema
# so that an input added later is checked too.
_TEXT_INPUTS = tuple(k for k, t in get_type_hints(SqlFixInput).items() if t is str)
_RECORD_LIST_INPUTS = ("turns",)


def not_text(state: PipelineState) -> str | None:
    """What is wrong with an input that should be text (or a list of records) and is not, or
    None. A parent graph's state mapped in as it is (a number, a list) used to raise
    AttributeError from whichever node read it first; `load_schema` fails the run with this
    instead."""
    for key in _TEXT_INPUTS:
        value = state.get(key)
        if value is not None and not isinstance(value, str):
            return f"the input {key!r} must be text, not {type(value).__name__}"
    for key in _RECORD_LIST_INPUTS:
        value = state.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            return f"the input {key!r} must be a list of objects, not {type(value).__name__}"
        for item in value:
            if not isinstance(item, Mapping):
                return f"the input {key!r} must hold objects, not {type(item).__name__}"
    return None


def has_conversation(state: PipelineState, on_thread: bool) -> bool:
    """Whether `contextualize` has anything to do for this run: history to rewrite the question
    with (turns, messages, or a previous run's keys), a question to clean or to take from the
    messages, a caller's `standalone_question` or `previous_sql` to settle, or a checkpointed
    thread whose next run reads this one's `asked`. Otherwise its update would change nothing
    but `standalone_question`, which `load_schema` then writes (`standalone_of`)."""
    if not_text(state) is not None:  # `load_schema` fails the run, saying why
        return False
    if on_thread or state.get("turns") or state.get("messages") or state.get("asked"):
        return True
    question = state.get("question") or ""
    if follow_up_cue(question) is not None:  # to be noted: a follow-up with nothing before it
        return True
    standalone = state.get("standalone_question")
    if not question or question != question.strip() or standalone not in (None, question):
        return True
    return bool(state.get("previous_sql")) and standalone != question


def standalone_of(state: PipelineState) -> PipelineState:
    """`standalone_question` when the run skipped `contextualize` (it is then the question as
    asked); nothing when it ran, since it wrote the key itself."""
    if state.get("standalone_question") is not None:
        return {}
    return {"standalone_question": (state.get("question") or "").strip()}


def contextualize_node(
    state: PipelineState, runtime: Runtime[ContextT], config: RunnableConfig
) -> PipelineState:
    update = _contextualize(state, runtime)
    if on_thread(config):  # the turn is recorded now, as failed until `close_turn` says more
        turn = open_turn(update.get("asked", ""), update.get("standalone_question", ""))
        update["turns"] = [*update.get("turns", []), turn]
    update["thread_turn"] = on_thread(config)
    return update


def _contextualize(state: PipelineState, runtime: Runtime[ContextT]) -> PipelineState:
    context = context_of(runtime, BaseContext)
    turns = list(state.get("turns") or [])
    previous = finished_turn(state)
    if previous is not None:
        turns.append(previous)
    turns = turns[-context.history_turns :]  # only these are ever shown
    from_messages, latest = split_messages(list(state.get("messages") or []))
    question = (state.get("question") or "").strip() or latest.strip()
    history = turns or from_messages[-context.history_turns :]
    update: PipelineState = {
        "asked": question,
        "question": question,
        "standalone_question": question,
        "turns": turns,
        "previous_sql": "",
        # A thread that answers a second question starts its usage again, past the reducer.
        "usage": cast(Usage, Overwrite({})),
        "fallbacks": cast(list[Fallback], Overwrite([])),
    }
    already_standalone = state.get("standalone_question") == question and previous is None
    if already_standalone:  # rewritten by the caller (or an enclosing graph), with its context
        update["previous_sql"] = state.get("previous_sql") or ""
    if not history or not has_words(question) or already_standalone:
        cue = follow_up_cue(question) if question and not already_standalone else None
        if cue is not None:
            update["fallbacks"] = cast(list[Fallback], Overwrite([_no_history(runtime, cue)]))
        return update
    emit(runtime, Agent.CONTEXTUALIZER, "start", turns=len(history))
    prompt = render_prompt(
        "contextualize",
        db_id=_db_label(state),
        history=render_history(history),
        question=question,
    )
    reply = call_agent(context, Agent.CONTEXTUALIZER, prompt)
    update["usage"] = cast(Usage, Overwrite(reply.usage))
    if reply.failed:
        emit(runtime, Agent.CONTEXTUALIZER, "error", error=reply.error)
        return _not_rewritten(update, history[-1], f"the rewriter failed ({reply.error})", runtime)
    standalone, builds = parse_rewrite(reply.text)
    if standalone is None:
        excerpt = " ".join(reply.text.split())[:160]
        why = f"the rewriter's reply held no standalone question ({excerpt!r})"
        return _not_rewritten(update, history[-1], why, runtime)
    update["question"] = standalone
    update["standalone_question"] = standalone
    if builds and history[-1].get("sql"):
        update["previous_sql"] = history[-1].get("sql", "")
    emit(runtime, Agent.CONTEXTUALIZER, "done", question=standalone, builds_on_sql=builds)
    return update


def _not_rewritten(
    update: PipelineState, previous: ConversationTurn, why: str, runtime: Any
) -> PipelineState:
    """No rewrite to use: the writer gets the follow-up with the previous question and its SQL
    (never the bare follow-up, which may mean nothing alone), and the output says so."""
    question = update.get("question") or ""
    before = previous.get("standalone_question") or previous.get("question") or ""
    sql = previous.get("sql") or ""
    if before:
        question = f'{question} (a follow-up to the earlier question "{before}")'
    update["question"] = question
    update["standalone_question"] = question
    update["previous_sql"] = sql
    given = "the previous question and its SQL" if sql else "the previous question"
    detail = f"{why}; the writer was given the follow-up with {given}"
    emit(runtime, Agent.CONTEXTUALIZER, "fallback", reason=detail)
    fallback: Fallback = {
        "agent": Agent.CONTEXTUALIZER.value,
        "kind": "unreadable_reply",
        "detail": detail,
    }
    update["fallbacks"] = cast(list[Fallback], Overwrite([fallback]))
    return update


def _no_history(runtime: Any, cue: str) -> Fallback:
    detail = (
        f"the question reads like a follow-up ({cue!r}) but there is no earlier question in this "
        "conversation: it was answered as it stands"
    )
    emit(runtime, Agent.CONTEXTUALIZER, "fallback", reason=detail)
    return {"agent": Agent.CONTEXTUALIZER.value, "kind": "no_history", "detail": detail}


def _db_label(state: Any) -> str:
    db = str(state.get("db") or "")
    return db.rsplit("/", 1)[-1] or "the database"
