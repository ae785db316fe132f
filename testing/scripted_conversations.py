"""A scripted conversation model for SParC / CoSQL evals: it follows each interaction's gold,
turn by turn, from what the pipeline shows it, so that a run scores EX 100 when nothing of a
conversation is lost on the way.

- The rewriter (`contextualize`) is answered from its prompt alone: the earlier turns it is
  shown (questions, standalone questions, SQL) and the newest message must be those of one
  interaction of the dataset, in order, each earlier turn with the SQL this model wrote for it
  or its gold (teacher forcing). Then the standalone question is the newest message
  tagged with its place (``[conversation 12, turn 3]``). A lost, reordered or foreign turn, or
  a wrong SQL shown, finds no interaction: the newest message comes back unchanged and its SQL
  will be wrong. Interactions that open with the same turns (SParC dev has some) cannot be
  told apart by any prompt: the run's thread tells them apart (below).
- An SQL writer (the Decomposer, SQLTool, R^3's writer) answers a tagged question with that
  turn's gold SQL. A first turn has no rewrite: it is answered by its database and question.
  When two interactions open with the same question on the same database but different gold
  (SParC dev has 5 such pairs), the one asked is told by the run's thread: an eval's thread id
  starts with the interaction's number (in-process only). The thread only ever breaks such
  ties; what the prompt shows must match on its own.
- A reviewer passes; the answer writer says it cannot answer in words.
"""

from __future__ import annotations

import contextvars
import re
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.messages.ai import UsageMetadata

from macsql.evals.compare import join_spaced_comparisons
from macsql.evals.datasets import Dataset, Interaction
from macsql.llm.models import registered_chat_model
from macsql.testing.scripted import ScriptedChatModel, ScriptedReply

REWRITER = "You help a text-to-SQL system follow a conversation"
WRITERS = ("You are the Decomposer", "You are the SQL writer", "You are the SQLTool")
REVIEWERS = ("You are a database administrator checking", "You are a reviewer")
_TAG = re.compile(r"\[conversation (\d+), turn (\d+)\]\s*$")
_THREAD = contextvars.ContextVar[str | None]("macsql_scripted_thread", default=None)


def tagged(question: str, interaction: int, turn: int) -> str:
    """The standalone question this model writes for an interaction's turn (0-based)."""
    return f"{question} [conversation {interaction}, turn {turn + 1}]"


def _same_sql(a: str, b: str) -> bool:
    return " ".join(a.split()).rstrip(";").lower() == " ".join(b.split()).rstrip(";").lower()


def _history(prompt: str) -> tuple[list[dict[str, str]], str, str]:
    """The rewriter prompt's earlier turns, newest message and database label."""
    turns: list[dict[str, str]] = []
    for line in prompt.split("Newest message:", 1)[0].splitlines():
        if m := re.match(r"\d+\. User: (.*)$", line):
            turns.append({"question": m.group(1).strip()})
        elif turns and (m := re.match(r"\s+\(understood as: (.*)\)$", line)):
            turns[-1]["standalone"] = m.group(1).strip()
        elif turns and (m := re.match(r"\s+SQL: (.*)$", line)):
            turns[-1]["sql"] = "" if m.group(1).strip() == "(none)" else m.group(1).strip()
    newest = prompt.split("Newest message:", 1)[1].splitlines()[0].strip()
    db = re.search(r'about the database "([^"]*)"', prompt)
    return turns, newest, (db.group(1) if db else "")


class GoldConversations:
    """The responder: see the module's docstring."""

    def __init__(self, dataset: Dataset) -> None:
        self.interactions = {i.index: i for i in dataset.interactions}
        self.first: dict[tuple[str, str], list[Interaction]] = defaultdict(list)
        for interaction in dataset.interactions:
            if interaction.turns:
                key = (interaction.db_id, interaction.turns[0].question.strip())
                self.first[key].append(interaction)
        self.lost = 0
        """Rewrites that matched no interaction (something was lost or wrong)."""

    # -- what this model writes for a turn

    def _thread_interaction(self) -> int | None:
        thread = _THREAD.get() or ""
        head = thread.split("-", 1)[0]
        return int(head) if head.isdigit() else None

    def _first_turn(self, db: str, question: str) -> Interaction | None:
        candidates = self.first.get((db, question.strip()), [])
        if len({c.turns[0].gold_sql for c in candidates}) > 1:
            asked = self._thread_interaction()
            candidates = [c for c in candidates if c.index == asked] or candidates
        return candidates[0] if candidates else None

    def answer_of(self, interaction: Interaction, turn: int) -> str:
        """The SQL this model writes for a turn: its gold, as the scorer runs it (SParC's gold
        holds a few `! =` that SQLite does not read)."""
        return join_spaced_comparisons(interaction.turns[turn].gold_sql)

    # -- the rewriter

    def _follows(self, interaction: Interaction, shown: list[dict[str, str]], newest: str) -> int:
        """The turn `newest` is in `interaction` when `shown` are its turns just before it, as
        this model answered them; else -1."""
        turns = interaction.turns
        for k in range(len(shown), len(turns)):
            if turns[k].question.strip() != newest:
                continue
            earlier = range(k - len(shown), k)
            if all(
                self._shown_right(interaction, j, s) for j, s in zip(earlier, shown, strict=True)
            ):
                return k
        return -1

    def _shown_right(self, interaction: Interaction, turn: int, shown: dict[str, str]) -> bool:
        item = interaction.turns[turn]
        if shown["question"] != item.question.strip():
            return False
        if turn > 0 and not self._same_turn(shown.get("standalone", ""), interaction, turn):
            return False
        sql = shown.get("sql", "")  # what this model wrote, or the gold (teacher forcing)
        return _same_sql(sql, self.answer_of(interaction, turn)) or _same_sql(sql, item.gold_sql)

    def _same_turn(self, standalone: str, interaction: Interaction, turn: int) -> bool:
        """Whether `standalone` is this model's rewrite of that turn, or of the same turn of an
        interaction that opens the same way (the prompt could not tell them apart)."""
        tag = _TAG.search(standalone)
        if tag is None or int(tag.group(2)) - 1 != turn:
            return False
        named = self.interactions.get(int(tag.group(1)))
        if named is None or len(named.turns) <= turn:
            return False
        pairs = zip(named.turns[: turn + 1], interaction.turns[: turn + 1], strict=True)
        return all(a.question.strip() == b.question.strip() for a, b in pairs)

    def rewrite(self, prompt: str) -> str:
        shown, newest, db_label = _history(prompt)
        db = db_label.rsplit("/", 1)[-1].removesuffix(".sqlite")
        matches = []
        for interaction in self.interactions.values():
            if interaction.db_id == db and (k := self._follows(interaction, shown, newest)) >= 0:
                matches.append((interaction, k))
        if not matches:
            self.lost += 1
            return f"Question: {newest}\nBuilds on the previous SQL: no"
        # Interactions that open alike are told apart by the thread, when the run has one.
        asked = self._thread_interaction()
        interaction, k = next(((i, k) for i, k in matches if i.index == asked), matches[0])
        return f"Question: {tagged(newest, interaction.index, k)}\nBuilds on the previous SQL: no"

    # -- the writers

    def write(self, prompt: str) -> str:
        question = prompt.rsplit("[Question]", 1)[1].splitlines()[0].strip()
        db_match = re.findall(r"\[Database\] (\S+)", prompt)
        db = db_match[-1] if db_match else ""
        sql = "SELECT 'no such conversation turn'"
        if tag := _TAG.search(question):
            interaction = self.interactions.get(int(tag.group(1)))
            turn = int(tag.group(2)) - 1
            if interaction is not None and 0 <= turn < len(interaction.turns):
                sql = self.answer_of(interaction, turn)
        elif (first := self._first_turn(db, question)) is not None:
            sql = self.answer_of(first, 0)
        return f"```sql\n{sql}\n```\nQuestion Solved."

    def __call__(self, prompt: str) -> str:
        if prompt.startswith(REWRITER):
            return self.rewrite(prompt)
        if prompt.startswith(WRITERS):
            return self.write(prompt)
        if prompt.startswith(REVIEWERS):
            return '{"verdict": "pass", "reason": "it answers the question"}'
        return "I cannot say it in words."


class GoldConversationModel(ScriptedChatModel):
    """`ScriptedChatModel` answering with `GoldConversations`, which may read the run's thread."""

    def _reply(
        self, messages: list[BaseMessage], run_manager: CallbackManagerForLLMRun | None
    ) -> tuple[str, UsageMetadata, ScriptedReply]:
        metadata = run_manager.metadata if run_manager else {}
        token = _THREAD.set(str(metadata.get("thread_id") or "") or None)
        try:
            return super()._reply(messages, run_manager)
        finally:
            _THREAD.reset(token)


@contextmanager
def gold_conversation_model(
    dataset: Dataset, name: str = "scripted-conversations"
) -> Iterator[Any]:
    """Register the model under `name` for a block (an eval's `--model NAME` then uses it);
    yields its responder (`.lost` counts rewrites that found no interaction)."""
    responder = GoldConversations(dataset)
    with registered_chat_model(name, GoldConversationModel(responder=responder)):
        yield responder
