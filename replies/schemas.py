"""The answer of each agent as fields, for `Context.reply_format="structured"`.

Each schema carries what the agent's text layout carries (the SQL and the reasoning before it,
the table map, the verdict, ...), so the nodes read a structured answer and a text one alike.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class SqlAnswer(BaseModel):
    """A query, with the reasoning that led to it (Decomposer, Refiner, SQLTool, R^3 writer)."""

    reasoning: str = Field(description="Your step-by-step reasoning, before the query.")
    sql: str = Field(description="The final SQL query only, with no code fence.")


class TableChoice(BaseModel):
    table: str
    keep: Literal["keep_all", "drop_all", "columns"] = Field(
        description="keep_all or drop_all the table, or keep only the listed columns."
    )
    columns: list[str] = Field(default_factory=list, description="Columns kept, for 'columns'.")


class SelectorAnswer(BaseModel):
    """MAC-SQL's Selector: what to keep of each table."""

    tables: list[TableChoice]


class ReviewAnswer(BaseModel):
    """SQLFixAgent's SQLReviewer: a walk through the query, then a verdict."""

    explanation: str = Field(description="What each clause of the query does.")
    verdict: Literal["pass", "error"]
    reason: str = Field(description="Why, in one sentence.")


class ParaphraseAnswer(BaseModel):
    """SQLFixAgent's QueryCrafter."""

    paraphrases: list[str]


class RepairAnswer(BaseModel):
    """SQLFixAgent's SQLRefiner: a candidate's number, or 0 and its own fix."""

    explanation: str
    choice: int = Field(description="The chosen candidate's number, or 0 for your own fix.")
    sql: str = Field(default="", description="Your own fixed query when choice is 0.")


class PersonaAnswer(BaseModel):
    """R^3's reviewer professions."""

    reviewers: list[str]
