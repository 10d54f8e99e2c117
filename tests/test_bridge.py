"""Chapter 16's bridge: the course's ReAct and Plan-and-Solve in LangGraph and smolagents, driven by the stand-in
through the adapters, and agentkit importable without any of it."""
from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentkit import get_llm
from agentkit.bridge import SMOLAGENTS_FALLBACK_MARKER, call_id
from agentkit.data import read_text
from agentkit.parsing import FORMAT_REMINDER
from agentkit.plan import PlanAndSolveAgent
from agentkit.react import REACT_MARKER, ReActAgent
from agentkit.scripted import ScriptedLLM
from agentkit.scripts.react import CHECKPOINT_QUESTION
from agentkit.sick import FormatBreakerLLM, StuckLLM
from agentkit.tasks import load_tasks
from agentkit.tools import default_executor

ROOT = Path(__file__).resolve().parent.parent
APPLES = "Tom has 23 apples. He uses 20 for lunch and buys 6 more. How many apples does he have?"
LOOPS = ("agentkit", "LangGraph", "smolagents")


@functools.cache
def frameworks() -> SimpleNamespace:
    """The bridge's framework side, imported when a test first needs it: LangGraph and smolagents take about a
    second to import, which every pytest worker would otherwise pay while it collects this file."""
    pytest.importorskip("langgraph")
    pytest.importorskip("smolagents")
    from agentkit.bridge.compare import REACT, code_lines, sweep
    from agentkit.bridge.with_langgraph import LangGraphPlanAndSolve, LangGraphReAct, plan_and_solve_graph
    from agentkit.bridge.with_smolagents import SmolagentsReAct

    return SimpleNamespace(REACT=REACT, code_lines=code_lines, sweep=sweep, LangGraphPlanAndSolve=LangGraphPlanAndSolve,
                           plan_and_solve_graph=plan_and_solve_graph,
                           loops={"agentkit": ReActAgent, "LangGraph": LangGraphReAct, "smolagents": SmolagentsReAct})


def run(loop, llm, max_steps=5):
    agent = frameworks().loops[loop](llm, default_executor(), max_steps=max_steps)
    return agent, agent.run(CHECKPOINT_QUESTION, verbose=False)


def sick(kind):
    llm = kind()
    llm.add(SMOLAGENTS_FALLBACK_MARKER, llm.fallback, name="smolagents' last try")
    return llm


@pytest.mark.parametrize("loop", LOOPS)
def test_each_loop_answers_the_checkpoint_with_the_course_tools_in_three_calls(loop):
    agent, answer = run(loop, get_llm("fake"))
    assert answer == "25185" and agent.stop_reason == "finished"
    assert len(agent.llm.calls) == 3
    assert [(c.tool, c.argument) for c in agent.tools.log] == [("Search", "Steve Jobs"), ("Calculate", "(2024 - 1955) * 365")]
    assert all(REACT_MARKER in c.messages[0]["content"] for c in agent.llm.calls)  # the course's role prompt reached it


def test_langgraph_sends_the_very_prompts_agentkit_sends():
    ours, _ = run("agentkit", get_llm("fake"))
    theirs, _ = run("LangGraph", get_llm("fake"))
    assert [c.messages for c in theirs.llm.calls] == [c.messages for c in ours.llm.calls]


def test_smolagents_sends_its_own_system_prompt_around_ours_and_its_own_task_line():
    agent, _ = run("smolagents", get_llm("fake"))
    system, user = (m["content"] for m in agent.llm.calls[-1].messages)
    assert system.index("You are an expert assistant") < system.index(REACT_MARKER) < system.index("Now Begin!")
    assert user.startswith(f"New task:\nQuestion: {CHECKPOINT_QUESTION}")
    assert "Action: Search[Steve Jobs]\nObservation: Steve Jobs" in user  # its history, as the text protocol


def test_the_adapters_write_each_tool_call_and_its_id_into_the_ledger():
    for loop in ("LangGraph", "smolagents"):
        agent, _ = run(loop, get_llm("fake"))
        asked = [call for record in agent.llm.calls for call in record.tool_calls]
        assert [c.name for c in asked[:2]] == ["Search", "Calculate"]
        assert asked[0].id == call_id("Search", "Steve Jobs", 0) and json.loads(asked[0].arguments) == {"input": "Steve Jobs"}
    assert call_id("Search", "x", 0) != call_id("Search", "x", 1)  # the same call later in a run gets another id


def test_on_a_reply_without_an_action_each_loop_keeps_its_own_contract():
    agent, answer = run("agentkit", FormatBreakerLLM())
    assert answer == "25185" and FORMAT_REMINDER in agent.llm.calls[1].prompt  # the reminder, then recovery
    agent, answer = run("LangGraph", FormatBreakerLLM())
    assert len(agent.llm.calls) == 1 and answer.startswith("Sure!") and agent.stop_reason == "finished"
    agent, answer = run("smolagents", sick(FormatBreakerLLM))
    assert "Error while parsing tool call" in agent.llm.calls[1].prompt  # smolagents' own feedback, not ours
    assert len(agent.llm.calls) == 6 and agent.tools.log == [] and agent.stop_reason == "max_steps"


def test_only_agentkit_has_a_repeat_fuse():
    costs = {loop: (len(a.llm.calls), len(a.tools.log), a.stop_reason)
             for loop in LOOPS for a, _ in [run(loop, sick(StuckLLM))]}
    assert costs == {"agentkit": (2, 1, "repeat_fuse"), "LangGraph": (5, 5, "max_steps"),
                     "smolagents": (6, 5, "max_steps")}


def test_the_planner_graph_makes_chapter_04s_calls_and_pauses_for_a_person_with_a_checkpointer():
    frameworks()
    from langgraph.checkpoint.memory import InMemorySaver

    ours, graph_agent = PlanAndSolveAgent(get_llm("fake")), frameworks().LangGraphPlanAndSolve(get_llm("fake"))
    assert ours.run(APPLES, verbose=False) == graph_agent.run(APPLES)
    assert [c.messages for c in graph_agent.llm.calls] == [c.messages for c in ours.llm.calls]
    assert graph_agent.results == ours.results and len(graph_agent.llm.calls) == 1 + len(ours.plan)
    llm = get_llm("fake")
    graph = frameworks().plan_and_solve_graph(llm, checkpointer=InMemorySaver(), interrupt_before=["execute"])
    thread = {"configurable": {"thread_id": "t"}}
    graph.invoke({"question": APPLES}, thread)
    assert graph.get_state(thread).next == ("execute",) and len(llm.calls) == 1  # planned, nothing executed
    graph.invoke(None, thread)
    assert len(llm.calls) == 2  # one step per approval


def test_the_shipped_sweep_is_what_the_loops_do_now():
    shipped = json.loads(read_text("bridge_sweep.json"))
    wanted = [row for row in shipped["rows"] if row["rate"] == 0.2 and row["seed"] == 0]
    assert frameworks().sweep(rates=(0.2,), seeds=(0,)) == wanted
    assert {row["framework"] for row in wanted} == set(frameworks().REACT) and shipped["tasks"] == len(load_tasks())


def test_code_lines_leave_out_docstrings_comments_and_blank_lines():
    def sample():
        """A docstring
        on two lines."""
        # a comment
        x = [1,
             2]

        return x

    assert frameworks().code_lines(sample) == 4  # def, the two lines of x, return


def test_agentkit_and_the_chapter_import_without_the_bridge():
    blocker = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('langchain', 'langchain_core', 'langgraph', 'smolagents') or "
        "name.startswith('opentelemetry.sdk') or name.startswith('opentelemetry.exporter'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import agentkit, agentkit.otel, agentkit.bridge.compare, agentkit.bridge.inside, agentkit.exercises.ch16\n"
        "from agentkit.bridge import missing\n"
        "from agentkit.exercises import check\n"
        "print(sorted(missing()))\n"
        "print(check('16.predict', {'agentkit': (2, 1), 'LangGraph': (5, 5), 'smolagents': (6, 5)}).text)\n"
    )
    out = subprocess.run([sys.executable, "-c", blocker], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "'langgraph'" in out.stdout and "'smolagents'" in out.stdout
    assert "not yet" in out.stdout and "install them with" in out.stdout  # the check says what to install


# --- hostile replies through the adapters: each case failed before its fix --------------------------------------

ADAPTED = ("LangGraph", "smolagents")
DEEP = "[" * 5_000 + "]" * 5_000  # deeper than Python's JSON parser goes


class Bare:
    """The smallest LLM (no ledger, no token counting): whatever it replies reaches the adapter unchanged."""

    def __init__(self, reply):
        self.reply = reply

    def think(self, messages, temperature=0):
        return self.reply


def hostile(*rules):
    """A stand-in that answers by the given (when, reply) rules, first match first."""
    llm = ScriptedLLM()
    for when, reply in reversed(rules):
        llm.add(when, reply)
    return llm


def names_handed_over(agent) -> list[str]:
    """Every tool name the framework received from the adapter."""
    if hasattr(agent, "graph"):
        return [call["name"] for m in agent.messages for call in (getattr(m, "tool_calls", None) or [])]
    return [call.function.name for step in agent.agent.memory.steps
            for call in (getattr(getattr(step, "model_output_message", None), "tool_calls", None) or [])]


@pytest.mark.parametrize("loop", ADAPTED)
@pytest.mark.parametrize("reply", [None, 42, "Thought: odd \ud800 text\nAction: Search[\ud800]"],
                         ids=["None", "a number", "a lone surrogate"])
def test_a_reply_that_is_not_clean_text_never_crashes_the_adapter(loop, reply):
    agent = frameworks().loops[loop](Bare(reply), default_executor(), max_steps=2)
    agent.run("What?", verbose=False)  # before: pydantic's ValidationError, AttributeError, UnicodeEncodeError
    assert agent.stop_reason in ("finished", "max_steps")


@pytest.mark.parametrize("loop", ADAPTED)
def test_a_tool_name_in_another_case_runs_the_tool_as_the_course_parser_promises(loop):
    llm = hostile((lambda p: "Observation: Steve Jobs (February" in p, "Action: Finish[1955]"),
                  (lambda p: True, "Thought: look him up\nAction: SEARCH[Steve Jobs]"))
    agent, answer = run(loop, llm, max_steps=3)
    assert [(c.tool, c.ok) for c in agent.tools.log] == [("Search", True)] and answer == "1955"
    assert "SEARCH" not in names_handed_over(agent)


@pytest.mark.parametrize("loop", ADAPTED)
def test_a_huge_unknown_tool_name_reaches_the_framework_bounded(loop):
    name = "S" * 50_000
    agent, _ = run(loop, hostile((lambda p: True, f"Thought: x\nAction: {name}[x]")), max_steps=3)
    handed = names_handed_over(agent)
    assert handed and max(map(len, handed)) <= 100
    assert max(len(c.prompt) for c in agent.llm.calls) < 20_000  # before: 200,815 characters by the third call


@pytest.mark.parametrize("reply", [f"Thought: x\nAction: Search[{DEEP}]", f"Action: Finish[{DEEP}]"],
                         ids=["tool input", "answer"])
def test_smolagents_survives_an_argument_nested_deeper_than_json_goes(reply):
    agent, _ = run("smolagents", hostile((lambda p: True, reply)), max_steps=2)  # before: RecursionError
    assert agent.stop_reason in ("finished", "max_steps")


def test_smolagents_history_shows_the_models_action_as_it_wrote_it():
    action = 'Action: Search[{"name":"Steve Jobs"}]'
    agent, _ = run("smolagents", hostile((lambda p: True, f"Thought: x\n{action}")), max_steps=2)
    sent = agent.llm.calls[-1].messages[-1]["content"]
    assert f"{action}\nObservation:" in sent  # before: Search[{'name': 'Steve Jobs'}], smolagents' repr of it


# --- a real chat model class, approval once for several calls, CodeAgent in WebAssembly, traces from inside ---------


def chat():
    frameworks()
    pytest.importorskip("langchain_openai")
    from agentkit.bridge import chat_model

    return chat_model


def test_create_agent_on_chatopenai_sends_tool_schemas_and_native_tool_messages():
    chat_model = chat()
    from langchain_core.messages import HumanMessage

    llm, tools = get_llm("fake"), default_executor()
    with chat_model.endpoint(llm) as server:
        agent = chat_model.native_agent(chat_model.chat_model(server), tools)
        state = agent.invoke({"messages": [HumanMessage(f"Question: {CHECKPOINT_QUESTION}")]})
    bodies = [r.body for r in server.requests]
    assert state["messages"][-1].content == "25185" and [r.status for r in server.requests] == [200] * 3
    assert [(c.tool, c.argument) for c in tools.log] == [("Search", "Steve Jobs"), ("Calculate", "(2024 - 1955) * 365")]
    summaries = [chat_model.request_summary(body) for body in bodies]
    assert [s["roles"] for s in summaries] == [["system", "user"], ["system", "user", "assistant+calls", "tool"],
                                               ["system", "user", "assistant+calls", "tool", "assistant+calls", "tool"]]
    schema = bodies[0]["tools"][0]["function"]
    assert schema["name"] == "Search" and schema["parameters"]["required"] == ["input"]
    assert all(s["tools"] == ["Search", "Calculate"] for s in summaries)
    asked, answered = bodies[1]["messages"][2], bodies[1]["messages"][3]
    assert answered["tool_call_id"] == asked["tool_calls"][0]["id"] and answered["content"].startswith("Steve Jobs (")
    assert [c.messages for c in llm.calls] == [b["messages"] for b in bodies]  # the server passed them on unchanged
    assert all(REACT_MARKER not in str(b) for b in bodies)  # no text protocol: the format lives in the API


def test_the_course_adapter_sends_no_schema_the_tools_are_text_in_the_role_prompt():
    agent, _ = run("LangGraph", get_llm("fake"))
    assert all([m["role"] for m in c.messages] == ["system", "user"] for c in agent.llm.calls)
    assert all("- Search[input]:" in c.messages[0]["content"] for c in agent.llm.calls)
    assert "Action: Search[Steve Jobs]\nObservation: Steve Jobs (" in agent.llm.calls[1].messages[1]["content"]


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_human_in_the_loop_middleware_pauses_once_for_both_sends_and_one_resume_decides_both(decision):
    chat_model = chat()
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    from agentkit.bridge import RECIPIENTS, SEND_TASK
    from agentkit.world import World

    world, tools = World.temporary(), default_executor()
    tools.register("SendMessage", world.tool_functions()["SendMessage"], "send `recipient: text`", effect="send")
    thread = {"configurable": {"thread_id": decision}}
    with chat_model.endpoint(get_llm("fake")) as server:
        agent = chat_model.native_agent(chat_model.chat_model(server), tools, checkpointer=InMemorySaver(),
                                        middleware=[HumanInTheLoopMiddleware(interrupt_on={"SendMessage": True})])
        paused = agent.invoke({"messages": [HumanMessage(f"Question: {CHECKPOINT_QUESTION} {SEND_TASK}")]}, thread)
        asked = paused["__interrupt__"][0].value["action_requests"]
        assert [a["name"] for a in asked] == ["SendMessage"] * 2 and world.outbox() == []  # nothing sent yet
        done = agent.invoke(Command(resume={"decisions": [{"type": decision}] * 2}), thread)
    assert "__interrupt__" not in done and len(server.requests) == 4  # one pause, one resume, no second pause
    sent = sorted(recipient for recipient, _ in world.outbox())  # ToolNode runs the two calls at once, in threads
    assert sent == (sorted(RECIPIENTS) if decision == "approve" else [])
    assert [c.tool for c in tools.log] == ["Search", "Calculate"] + ["SendMessage"] * len(sent)
    assert ("sent to" if decision == "approve" else "not sent to") in done["messages"][-1].content


@pytest.mark.parametrize("decision, calls, steps", [(True, 4, 3), (False, 1, 0), (["Compute 23 - 20 + 6."], 2, 1)],
                         ids=["approved", "refused", "edited"])
def test_the_plan_review_interrupts_once_and_one_resume_decides_every_step(decision, calls, steps):
    frameworks()
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    llm = get_llm("fake")
    graph = frameworks().plan_and_solve_graph(llm, checkpointer=InMemorySaver(), review=True)
    thread = {"configurable": {"thread_id": "t"}}
    paused = graph.invoke({"question": APPLES}, thread)
    assert len(paused["__interrupt__"][0].value["plan"]) == 3 and len(llm.calls) == 1  # planned, nothing run
    done = graph.invoke(Command(resume=decision), thread)
    assert "__interrupt__" not in done and not graph.get_state(thread).next
    assert len(llm.calls) == calls and len(done["results"]) == steps


def test_code_agent_runs_its_snippet_in_webassembly_and_each_tool_here_through_the_executor():
    frameworks()
    from agentkit.bridge.code_agent import WasmExecutor, code_agent

    llm, tools = get_llm("fake"), default_executor()
    agent = code_agent(llm, tools)
    result = agent.run(f"Question: {CHECKPOINT_QUESTION}", return_full_result=True)
    runs = agent.python_executor.runs
    assert str(result.output) == "25185" and len(llm.calls) == 1, runs  # one snippet made two tool calls
    assert [(c.tool, c.argument) for c in tools.log] == [("Search", "Steve Jobs"), ("Calculate", "(2024 - 1955) * 365")]
    assert [what for _, _, what in runs] == ["stopped at Search('Steve Jobs')",
                                             "1 call(s) answered from the record; stopped at Calculate('(2024 - 1955) * 365')",
                                             "2 call(s) answered from the record; ran to final_answer('25185')"]
    assert agent.python_executor.variables["year"] == 1955  # kept for the next step, as JSON can carry it
    executor = WasmExecutor(max_tool_calls=0)
    executor.send_tools({"Search": lambda text: tools.run("Search", text)})
    for code, said in [("print(open('/etc/passwd').read())", "Capabilities insufficient"),
                       ("Search('Ada Lovelace')", "more than 0 tool calls"),
                       ("_AK_CALLS.append(['Shell', 'rm -rf /'])", "asked for a tool this agent does not have")]:
        with pytest.raises(RuntimeError, match=said):
            executor(code)
    assert len(tools.log) == 2  # the refused call never ran


def test_the_shipped_inside_spans_are_what_the_instrumentors_make_now():
    frameworks()
    pytest.importorskip("openinference.instrumentation.langchain")
    pytest.importorskip("opentelemetry.instrumentation.openai_v2")
    from agentkit.bridge import inside

    recorded = inside.record()
    assert recorded == json.loads(read_text("inside_spans.json"))
    spans = [s for run in recorded["runs"].values() for s in run]
    assert {s["scope"] for s in spans} == {"LangChain (OpenInference)", "smolagents (OpenInference)",
                                           "openai client (OpenTelemetry)"}
    assert all(v == "__REDACTED__" for s in spans for k, v in s["attributes"].items() if k.endswith(("input.value", "output.value")))
    from langchain_core.callbacks.manager import CallbackManager  # the instrumentors are off again afterwards
    assert not any("OpenInference" in type(h).__name__ for h in CallbackManager.configure().handlers)
