"""Chapter 02's ReAct and chapter 04's Plan-and-Solve in LangGraph, driven by a course LLM.

* `CourseChatModel(llm=...)`: a LangChain chat model (a `BaseChatModel`, as LangChain's own fake models
  are) over any course LLM. With tools bound, it writes the history as the text protocol and reads the
  reply back into a tool call (see `agentkit.bridge`); without tools, it passes the messages through.
* `react_agent(llm, tools, max_steps)`: `langchain.agents.create_agent` with the course's ReAct role
  prompt, the executor's tools, and `ModelCallLimitMiddleware(run_limit=max_steps)` as the step fuse.
* `plan_and_solve_graph(llm)`: a `StateGraph` with two nodes, plan (one call, `agentkit.plan.parse_plan`)
  and execute (one call per step, every earlier result in its prompt), looping until the plan is done.
  With `review=True` (and a checkpointer), a review node between them calls `langgraph.types.interrupt` once
  with the whole plan: the run pauses there, and resuming with `Command(resume=...)` decides for every step at
  once: True runs the plan, a list of steps runs that plan instead, anything else runs nothing.
* `LangGraphReAct`, `LangGraphPlanAndSolve`: the same graphs behind the course's agent interface
  (`run(question) -> answer`, `.llm`, `.tools`, `.steps`, `.stop_reason`), so `agentkit.evaluate` runs them.
Import this module only where the bridge is installed (`agentkit.bridge.missing()`).
"""
from __future__ import annotations

import functools
from typing import Any, Optional, TypedDict

from langchain.agents import create_agent
from langchain.agents.middleware import ModelCallLimitMiddleware
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from ..modes import get_llm
from ..plan import EXECUTOR_PROMPT, EXECUTOR_ROLE, PLANNER_PROMPT, PLANNER_ROLE, StepResult, parse_plan, step_context
from ..protocol import ledger
from ..react import ROLE_PROMPT
from ..tools import default_executor
from . import FINISH, Turn, call_id, clean, keep_call, read, render, thought_of, tool_name

LIMIT_MESSAGE = "Model call limits exceeded"  # how ModelCallLimitMiddleware's closing message begins


def _text(message) -> str:
    content = message.content
    return content if isinstance(content, str) else " ".join(part.get("text", "") for part in content
                                                             if isinstance(part, dict))


def _turns(messages) -> list[Turn]:
    """Each AI message that called a tool, with the tool's result, as a Turn."""
    results = {m.tool_call_id: _text(m) for m in messages if isinstance(m, ToolMessage)}
    return [Turn(thought_of(_text(m)), m.tool_calls[0]["name"], str(m.tool_calls[0]["args"].get("input", "")),
                 results.get(m.tool_calls[0]["id"], ""))
            for m in messages if isinstance(m, AIMessage) and m.tool_calls]


class CourseChatModel(BaseChatModel):
    """A LangChain chat model whose replies come from a course LLM (`think(messages) -> str`)."""

    llm: Any
    with_tools: bool = False
    tool_names: list = []  # the bound tools' names: a call's name takes their spelling

    @property
    def _llm_type(self) -> str:
        return "agentkit-course-llm"

    def bind_tools(self, tools, **kwargs):
        names = [getattr(t, "name", None) or (t.get("function", t).get("name") if isinstance(t, dict) else None)
                 for t in tools]
        return self.model_copy(update={"with_tools": True, "tool_names": [n for n in names if n]})

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        if not self.with_tools:
            sent = [{"role": "system" if isinstance(m, SystemMessage) else "user", "content": _text(m)} for m in messages]
            return _result(AIMessage(content=clean(self.llm.think(sent))))
        system = next((_text(m) for m in messages if isinstance(m, SystemMessage)), "")
        head = next((_text(m) for m in messages if isinstance(m, HumanMessage)), "")
        turns = _turns(messages)
        before = len(ledger(self.llm))
        reply = clean(self.llm.think(render(system, head, turns)))
        parsed = read(reply)
        if parsed.action == FINISH:
            return _result(AIMessage(content=parsed.argument))
        if not parsed.action:  # no tool call: to create_agent, that is the answer
            return _result(AIMessage(content=reply))
        name = tool_name(parsed.action, self.tool_names)
        call = {"name": name, "args": {"input": parsed.argument}, "id": call_id(name, parsed.argument, len(turns))}
        keep_call(self.llm, before, call["name"], call["args"], call["id"])
        return _result(AIMessage(content=parsed.thought, tool_calls=[call]))


def _result(message: AIMessage) -> ChatResult:
    return ChatResult(generations=[ChatGeneration(message=message)])


def _one_string(input: str) -> str:
    return input


@functools.cache
def _input_schema():
    """The arguments' schema of every course tool (one string, `input`), made once: LangChain builds a pydantic
    model for it, which cost more than the rest of building an agent (tens of ms a tool, for every agent)."""
    return StructuredTool.from_function(_one_string, name="input", description="input").args_schema


def langchain_tools(tools) -> list:
    """The executor's tools as LangChain tools: one string argument, `input`; each call runs through the executor."""
    def wrap(name: str, description: str):
        def run(input: str) -> str:
            return tools.run(name, input)
        return StructuredTool(name=name, description=description, func=run, args_schema=_input_schema())

    return [wrap(t.name, t.description) for t in tools.tools.values()]


def react_agent(llm, tools, max_steps: int = 5, middleware=(), checkpointer=None):
    """Chapter 02's ReAct as `create_agent`: the course's role prompt and tools, max_steps model calls at most."""
    return create_agent(CourseChatModel(llm=llm), langchain_tools(tools),
                        system_prompt=ROLE_PROMPT.format(tools=tools.describe()),
                        middleware=[ModelCallLimitMiddleware(run_limit=max_steps, exit_behavior="end"), *middleware],
                        checkpointer=checkpointer, name="ReAct")


class LangGraphReAct:
    """`react_agent` behind the course's agent interface."""

    def __init__(self, llm=None, tools=None, max_steps: int = 5) -> None:
        self.llm = llm if llm is not None else get_llm()
        self.tools = tools if tools is not None else default_executor()
        self.max_steps = max_steps
        self.graph = react_agent(self.llm, self.tools, max_steps)
        self.messages: list = []
        self.steps, self.stop_reason, self.answer = 0, "", ""

    def run(self, question: str, verbose: bool = False) -> str:
        state = self.graph.invoke({"messages": [HumanMessage(f"Question: {question}")]})
        self.messages = state["messages"]
        last = _text(self.messages[-1])
        self.stop_reason = "max_steps" if last.startswith(LIMIT_MESSAGE) else "finished"
        self.steps = sum(isinstance(m, AIMessage) for m in self.messages) - (self.stop_reason == "max_steps")
        self.answer = last
        if verbose:
            print(f"Answer [{self.stop_reason}]: {last}")
        return last


# --- Plan-and-Solve as a StateGraph -------------------------------------------------------------


class PlanState(TypedDict, total=False):
    question: str
    plan: list
    results: list  # [step, result] per executed step: plain lists, which every checkpointer can store


def plan_and_solve_graph(llm, max_steps: int = 10, checkpointer=None, interrupt_before: Optional[list] = None,
                         review: bool = False):
    """plan -> [review ->] execute -> execute ... -> END: chapter 04's 1 + N calls, the state in a TypedDict."""
    model = CourseChatModel(llm=llm)

    def plan(state: PlanState) -> dict:
        prompt = PLANNER_PROMPT.format(role=PLANNER_ROLE, max_steps=max_steps, tools="", question=state["question"])
        return {"plan": parse_plan(_text(model.invoke([HumanMessage(prompt)])), max_steps), "results": []}

    def execute(state: PlanState) -> dict:
        done = [StepResult(step, result) for step, result in state["results"]]
        prompt = EXECUTOR_PROMPT.format(role=EXECUTOR_ROLE,
                                        context=step_context(state["question"], state["plan"], done, len(done)))
        result = _text(model.invoke([HumanMessage(prompt)])).strip()
        return {"results": [*state["results"], [state["plan"][len(done)], result]]}

    def read_plan(state: PlanState) -> dict:  # a person decides once, for the whole plan
        decision = interrupt({"question": state["question"], "plan": state["plan"]})
        if decision is True:
            return {}
        if isinstance(decision, list) and decision:
            return {"plan": [str(step) for step in decision]}
        return {"plan": []}

    def more_to_do(state: PlanState) -> str:
        return "execute" if len(state["results"]) < len(state["plan"]) else END

    graph = StateGraph(PlanState)
    graph.add_node("plan", plan)
    graph.add_node("execute", execute)
    graph.add_edge(START, "plan")
    if review:
        graph.add_node("review", read_plan)
        graph.add_edge("plan", "review")
        graph.add_conditional_edges("review", more_to_do, ["execute", END])
    else:
        graph.add_conditional_edges("plan", more_to_do, ["execute", END])
    graph.add_conditional_edges("execute", more_to_do, ["execute", END])
    return graph.compile(checkpointer=checkpointer, interrupt_before=interrupt_before)


class LangGraphPlanAndSolve:
    """`plan_and_solve_graph` behind the course's agent interface (`.plan`, `.results` as PlanAndSolveAgent's)."""

    def __init__(self, llm=None, max_plan_steps: int = 10) -> None:
        self.llm = llm if llm is not None else get_llm()
        self.graph = plan_and_solve_graph(self.llm, max_plan_steps)
        self.plan, self.results, self.stop_reason = [], [], ""

    def run(self, question: str, verbose: bool = False) -> str:
        state = self.graph.invoke({"question": question}, {"recursion_limit": 50})
        self.plan, self.stop_reason = state["plan"], "finished"
        self.results = [StepResult(step, result) for step, result in state["results"]]
        return self.results[-1].result
