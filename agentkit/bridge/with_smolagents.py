"""Chapter 02's ReAct in smolagents (`ToolCallingAgent`), driven by a course LLM.

* `CourseModel(llm)`: a smolagents `Model` (as smolagents' own tests subclass it) over any course LLM.
  smolagents writes its history as text: its system prompt, "New task:", then per step the model's text,
  "Calling tools: [...]" and "Observation: ..." (or "Error: ... Now let's retry"). The adapter writes
  those steps as the text protocol (see `agentkit.bridge`) under smolagents' own system prompt, which
  carries the course's ReAct role prompt as its custom `instructions`; `Finish[answer]` becomes a call
  of smolagents' `final_answer` tool. A call without tools (smolagents' last try at max_steps) gets the
  same history under smolagents' own final-answer prompt. Each step's action is written back as the model
  wrote it (the adapter keeps its calls by id: smolagents' memory would show a JSON input as a Python dict),
  and a call smolagents could not write into its memory (an input nested deeper than its JSON reading goes)
  is handed over as a reply without a tool call, which smolagents answers with its parse error.
* `react_agent(llm, tools, max_steps)`: a `ToolCallingAgent` with the executor's tools, silent.
* `SmolagentsReAct`: it behind the course's agent interface, so `agentkit.evaluate` runs it.
Import this module only where the bridge is installed (`agentkit.bridge.missing()`).
"""
from __future__ import annotations

import ast
import copy
import functools
import importlib.resources
import re

import yaml

from smolagents import Tool, ToolCallingAgent
from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole, Model
from smolagents.monitoring import LogLevel, TokenUsage
from smolagents.utils import make_json_serializable

from ..modes import get_llm
from ..protocol import ledger
from ..react import ROLE_PROMPT
from ..tools import default_executor
from . import FINISH, Turn, call_id, clean, keep_call, read, render, thought_of, tool_name

FINAL_ANSWER = "final_answer"  # smolagents' own tool for the answer
_CALL_ID = re.compile(r"'id': '(call_[0-9a-f]{12})'")  # the adapter's ids, in smolagents' "Calling tools" text


def _text(message) -> str:
    content = message.content if not isinstance(message, dict) else message.get("content")
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def _role(message) -> str:
    role = message.role if not isinstance(message, dict) else message.get("role")
    return getattr(role, "value", role)


def _called(text: str) -> tuple[str, str]:
    """(tool, input) of the first call in smolagents' "Calling tools:\\n[...]" text."""
    try:
        calls = ast.literal_eval(text.split("\n", 1)[1])
        function = calls[0]["function"]
        arguments = function["arguments"]
        if isinstance(arguments, dict):
            arguments = arguments.get("input", arguments.get("answer", ""))
        return str(function["name"]), str(arguments)
    except (ValueError, SyntaxError, IndexError, KeyError, TypeError):
        return "", ""


def history(messages, asked=None) -> tuple[str, str, list[Turn], str]:
    """(system prompt, task message, steps, closing user message) of smolagents' messages; `asked` maps the
    adapter's call ids to the (tool, input) the model wrote."""
    asked = asked or {}
    system = next((_text(m) for m in messages if _role(m) == "system"), "")
    users = [i for i, m in enumerate(messages) if _role(m) == "user"]
    head = _text(messages[users[0]]) if users else ""
    tail = _text(messages[users[-1]]) if len(users) > 1 else ""
    turns: list[Turn] = []
    for message in messages[(users[0] + 1 if users else 0):]:
        role, text = _role(message), _text(message)
        if role == "assistant":
            turns.append(Turn(thought_of(text), "", "", ""))
        elif role == "tool-call" and turns:
            known = _CALL_ID.search(text)
            turns[-1].tool, turns[-1].argument = asked.get(known[1]) if known and known[1] in asked else _called(text)
        elif role == "tool-response" and turns:
            turns[-1].observation = text.removeprefix("Observation:\n")
    return system, head, turns, tail


class CourseModel(Model):
    """A smolagents Model whose replies come from a course LLM (`think(messages) -> str`)."""

    def __init__(self, llm) -> None:
        super().__init__(model_id=getattr(llm, "model", "") or type(llm).__name__)
        self.llm = llm
        self.asked: dict = {}  # call id -> (tool, input) as the model wrote them

    def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):
        system, head, turns, tail = history(messages, self.asked)
        before = len(ledger(self.llm))
        reply = clean(self.llm.think(render(system, head, turns, tail)))
        calls = ledger(self.llm)[before:]
        usage = TokenUsage(sum(c.prompt_tokens for c in calls), sum(c.completion_tokens for c in calls))
        if not tools_to_call_from:
            return ChatMessage(MessageRole.ASSISTANT, reply, token_usage=usage)
        parsed = read(reply)
        if not parsed.action:  # no tool call: smolagents tries to parse one from the text, and retries
            return ChatMessage(MessageRole.ASSISTANT, reply, token_usage=usage)
        tool = FINISH if parsed.action == FINISH else tool_name(parsed.action, [t.name for t in tools_to_call_from])
        name, field = (FINAL_ANSWER, "answer") if tool == FINISH else (tool, "input")
        try:  # what smolagents does to write the call into its memory; too deep, and its whole run would crash
            make_json_serializable({field: parsed.argument})
        except RecursionError:
            return ChatMessage(MessageRole.ASSISTANT, parsed.thought, token_usage=usage)
        call = ChatMessageToolCall(function=ChatMessageToolCallFunction(name=name, arguments={field: parsed.argument}),
                                   id=call_id(tool, parsed.argument, len(turns)), type="function")
        self.asked[call.id] = (tool, parsed.argument)
        keep_call(self.llm, before, name, {field: parsed.argument}, call.id)
        return ChatMessage(MessageRole.ASSISTANT, parsed.thought, [call], token_usage=usage)


class CourseTool(Tool):
    """One of the executor's tools as a smolagents Tool: one string input; every call runs through the executor."""

    inputs = {"input": {"type": "string", "description": "the tool's input, as text"}}
    output_type = "string"

    def __init__(self, executor, name: str, description: str) -> None:
        self.executor, self.name, self.description = executor, name, description
        super().__init__()

    def forward(self, input: str) -> str:
        return self.executor.run(self.name, input)


@functools.cache
def _prompt_templates() -> str:
    """smolagents' own prompts for a ToolCallingAgent, read once (it parses their YAML for every agent it builds,
    in pure Python: most of the cost of building one)."""
    return importlib.resources.files("smolagents.prompts").joinpath("toolcalling_agent.yaml").read_text()


def react_agent(llm, tools, max_steps: int = 5, **options) -> ToolCallingAgent:
    """Chapter 02's ReAct as a ToolCallingAgent: the course's role prompt as its instructions, the executor's tools."""
    options.setdefault("prompt_templates", _parsed_templates())
    return ToolCallingAgent(tools=[CourseTool(tools, t.name, t.description) for t in tools.tools.values()],
                            model=CourseModel(llm), max_steps=max_steps, verbosity_level=LogLevel.OFF,
                            instructions=ROLE_PROMPT.format(tools=tools.describe()), name="ReAct", **options)


def _parsed_templates() -> dict:
    return copy.deepcopy(_parsed_once())


@functools.cache
def _parsed_once() -> dict:
    return yaml.safe_load(_prompt_templates())


class SmolagentsReAct:
    """`react_agent` behind the course's agent interface."""

    def __init__(self, llm=None, tools=None, max_steps: int = 5) -> None:
        self.llm = llm if llm is not None else get_llm()
        self.tools = tools if tools is not None else default_executor()
        self.agent = react_agent(self.llm, self.tools, max_steps)
        self.steps, self.stop_reason, self.unverified, self.answer = 0, "", False, ""

    def run(self, question: str, verbose: bool = False) -> str:
        result = self.agent.run(f"Question: {question}", return_full_result=True)
        self.steps = len(self.agent.memory.steps) - 1  # the task step is not an action
        finished = any(getattr(step, "is_final_answer", False) for step in self.agent.memory.steps)
        self.stop_reason = "finished" if finished else "max_steps"
        self.unverified = not finished  # smolagents' extra call at max_steps answered from memory alone
        self.answer = str(result.output)
        if verbose:
            print(f"Answer [{self.stop_reason}]: {self.answer}")
        return self.answer
