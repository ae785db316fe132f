"""The scripted models answer by the agent that `call_model` names, in process and over HTTP."""

from __future__ import annotations

import time

import pytest

from macsql.core.context import Agent
from macsql.llm.calls import AGENT_HEADER, call_model
from macsql.llm.models import registered_chat_model
from macsql.llm.settings import ModelSettings
from macsql.testing.scripted import ScriptedChatModel, ScriptedOpenAIServer

# The same prompt for every agent: only the agent's name can pick the reply.
PROMPT = "Which reply do I get?"


def _replies() -> dict[str, object]:
    refinements = iter(["first fix", "second fix"])
    return {
        Agent.DECOMPOSER: "a fixed reply",
        Agent.REFINER: lambda _prompt: next(refinements),
        Agent.REVIEWER: ["one review", "another review"],
    }


def _calls(settings: ModelSettings) -> list[str]:
    agents = [Agent.REFINER, Agent.DECOMPOSER, Agent.REVIEWER, Agent.REFINER, Agent.REVIEWER]
    return [call_model(settings, agent.value, PROMPT).text for agent in agents]


EXPECTED = ["first fix", "a fixed reply", "one review", "second fix", "another review"]
CALLED = ["refiner", "decomposer", "reviewer", "refiner", "reviewer"]


def test_in_process_model_answers_by_the_calling_agent() -> None:
    model = ScriptedChatModel(responder=_replies())
    with registered_chat_model("scripted:by-agent", model):
        assert _calls(ModelSettings(model="scripted:by-agent")) == EXPECTED
        unscripted = call_model(ModelSettings(model="scripted:by-agent"), "selector", PROMPT)
    assert model.agents == [*CALLED, "selector"]
    assert unscripted.failed and "no script for agent 'selector'" in (unscripted.error or "")


def test_server_answers_by_the_agent_header_of_the_real_client() -> None:
    with ScriptedOpenAIServer(_replies()) as server:
        settings = ModelSettings(
            model="openai:scripted", base_url=server.base_url, api_key="k", max_retries=0
        )
        assert _calls(settings) == EXPECTED
        assert server.agents == CALLED
        # The agent travels as a header: the request body is the plain OpenAI one.
        assert all(
            set(body) <= {"model", "messages", "stream", "temperature"} for body in server.bodies
        )
        assert AGENT_HEADER not in str(server.bodies)
        unscripted = call_model(settings, "selector", PROMPT)
    assert unscripted.failed


@pytest.mark.parametrize("replies", [["a", "b"], lambda _prompt: "a"])
def test_responders_without_agents_still_answer_every_call(replies: object) -> None:
    model = ScriptedChatModel(responder=replies)
    with registered_chat_model("scripted:plain", model):
        reply = call_model(ModelSettings(model="scripted:plain"), "decomposer", PROMPT)
    assert reply.text == "a" and model.agents == ["decomposer"]


def test_a_client_that_hung_up_leaves_no_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    """A client timeout leaves the server writing a late reply to a closed connection; that must
    not print a traceback into whichever test owns stderr by then."""
    with ScriptedOpenAIServer(lambda _prompt: "late", delay=0.5) as server:
        settings = ModelSettings(
            model="openai:scripted",
            base_url=server.base_url,
            api_key="k",
            timeout=0.1,
            max_retries=0,
        )
        assert call_model(settings, "decomposer", PROMPT).failed
        time.sleep(1.0)  # the late reply is written meanwhile
    assert "Traceback" not in capsys.readouterr().err
