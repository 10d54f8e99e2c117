"""Chapter 16's exercises: predict what a stuck model costs in three loops, build a chat span's attributes, break
LangGraph's ReAct with a reply that ends its run, two questions. The frameworks' checks need the bridge extra."""
from __future__ import annotations

from ..bridge import INSTALL, missing
from ..llm import CallRecord
from ..otel import spans_of
from ..parsing import parse_reply
from ..react import ReActAgent
from ..scripted import ScriptedLLM
from ..scripts import course_script
from ..scripts.react import CHECKPOINT_QUESTION
from ..sick import StuckLLM
from ..tools import default_executor
from . import Fail, call, check_prediction, exercise, question


def _need_the_bridge(case: str) -> None:
    absent = missing()
    if absent:
        raise Fail(case, "LangGraph, smolagents and OpenTelemetry installed", f"not installed: {', '.join(absent)}",
                   f"this check runs the frameworks: install them with {INSTALL}, restart the kernel, check again.")


# --- 16.predict: a stuck model in three loops ---------------------------------------------------

WHY = {
    "agentkit": "the repeat fuse (chapter 03) refuses the second identical action before its tool runs: 2 LLM calls, "
                "1 tool call",
    "LangGraph": "create_agent has no repeat fuse: ModelCallLimitMiddleware(run_limit=5) ends the run after the fifth "
                 "model call, and every one of them ran the search: 5 and 5",
    "smolagents": "no repeat fuse either: 5 steps, each with its search, then at max_steps smolagents asks the model "
                  "once more for an answer, without tools: 6 LLM calls, 5 tool calls",
}


def stuck_costs() -> dict:
    """(LLM calls, tool calls) of each loop, max_steps=5, on the stuck stand-in, read from the ledgers."""
    from ..bridge import SMOLAGENTS_FALLBACK_MARKER
    from ..bridge.with_langgraph import LangGraphReAct
    from ..bridge.with_smolagents import SmolagentsReAct

    costs = {}
    for name, make in (("agentkit", ReActAgent), ("LangGraph", LangGraphReAct), ("smolagents", SmolagentsReAct)):
        llm = StuckLLM()
        llm.add(SMOLAGENTS_FALLBACK_MARKER, llm.fallback, name="smolagents' last try")
        agent = make(llm, default_executor(), max_steps=5)
        agent.run(CHECKPOINT_QUESTION, verbose=False)
        costs[name] = (len(llm.calls), len(agent.tools.log))
    return costs


@exercise("16.predict", "predict", "A stuck model in three loops",
          "Set `prediction` to {loop: (LLM calls, tool calls)} for the stuck stand-in at max_steps=5, before running.")
def _predict(prediction):
    _need_the_bridge("running the three loops")
    truth = stuck_costs()
    check_prediction(prediction, truth, what="loop", labels=("LLM calls", "tool calls"),
                     hint=lambda name, guess, actual: WHY[name] + ". Section 4 runs the format breaker the same way.",
                     case=lambda name: f"{name}, stuck stand-in, max_steps=5")
    return ("The ledgers agree: " + " ".join(f"{name} {truth[name]}: {why}." for name, why in WHY.items())
            + " A fuse is a few lines of the loop; a framework without one pays the whole budget.")


# --- 16.span: the attributes of one chat span ------------------------------------------------------

H_NAMES = ("the conventions of version 1.41.0 spell them gen_ai.operation.name, gen_ai.provider.name, "
           "gen_ai.request.model, gen_ai.request.temperature, gen_ai.usage.input_tokens and "
           "gen_ai.usage.output_tokens; section 7 prints a chat span with all six.")
H_OLD = ("gen_ai.usage.prompt_tokens and completion_tokens are the names of older versions, deprecated for "
         "gen_ai.usage.input_tokens and output_tokens: a viewer that reads the current names finds nothing.")
H_SYSTEM = "gen_ai.system is the older name; the version this chapter follows calls it gen_ai.provider.name."
H_VALUES = ("read every value from the record: its model, its temperature as a float, its prompt_tokens and "
            "completion_tokens; the operation is the string 'chat'.")

RECORDS = [
    CallRecord([{"role": "user", "content": "hi"}], "Action: Finish[hi]", 12, 5, 0.0, 0.01, model="scripted-stand-in"),
    CallRecord([{"role": "user", "content": "2 + 2?"}], "4", 7, 1, 0.7, 0.2, model="gpt-4o-mini"),
    CallRecord([{"role": "user", "content": "x"}], "", 0, 0, 1, 0.0, model="SmolLM2-135M-Instruct"),
]


@exercise("16.span", "build", "A chat span's attributes",
          "Write `chat_attributes(record, provider)`: the gen_ai.* attributes of the chat span for one CallRecord.")
def _span(chat_attributes):
    if not callable(chat_attributes):
        raise Fail("your answer", "a function chat_attributes(record, provider) -> dict", repr(chat_attributes),
                   "define it with def.")
    for record in RECORDS:
        provider = "openai" if record.model.startswith("gpt") else "agentkit"
        expected = spans_of([record], [], agent_name="check", provider=provider)[1].attributes
        yours = call(chat_attributes, record, provider, case=f"a call to {record.model}", hint=H_VALUES)
        if not isinstance(yours, dict):
            raise Fail(f"a call to {record.model}", "a dict of attributes", repr(yours), "return a dict.")
        keys = set(yours)
        hint = H_OLD if any("prompt_tokens" in k or "completion_tokens" in k for k in keys) else \
            H_SYSTEM if "gen_ai.system" in keys else H_NAMES
        if keys != set(expected):
            raise Fail(f"a call to {record.model}", f"the keys {sorted(expected)}", f"{sorted(keys)}", hint)
        wrong = {k: yours[k] for k in expected if yours[k] != expected[k] or type(yours[k]) is not type(expected[k])}
        if wrong:  # the type too: a viewer tells the int 1 from the double 1.0
            raise Fail(f"a call to {record.model}", repr({k: expected[k] for k in wrong}), repr(wrong), H_VALUES)
    return (f"Your attributes match agentkit.otel's on {len(RECORDS)} ledger entries you had not seen. Any viewer that "
            "reads the GenAI conventions now shows each call's model and tokens, whatever framework made the call.")


# --- 16.break: a reply that ends LangGraph's run ---------------------------------------------------

H_ACTION = ("parse_reply finds an action in your reply, so the adapter turns it into a tool call (or, for Finish, a "
            "proper answer) and LangGraph goes on as agentkit does. Write a reply with no Action line and no Finish.")
H_RIGHT = "the run ended with the right answer: make the reply say something else than 25185."


@exercise("16.break", "break", "End LangGraph's run with a chat",
          "Set `reply` to a first reply that ends LangGraph's ReAct at once with a wrong answer; agentkit's goes on.")
def _break(reply):
    if not isinstance(reply, str) or not reply.strip():
        raise Fail("your reply", "a non-empty string: the model's first reply", repr(reply), "write the reply as text.")
    if parse_reply(reply).action:
        raise Fail(repr(reply[:80]), "a reply without an action", f"parse_reply reads {parse_reply(reply).action!r}",
                   H_ACTION)
    _need_the_bridge("running LangGraph's ReAct")
    from ..bridge.with_langgraph import LangGraphReAct

    def first_turn(prompt: str) -> bool:  # the history holds no step yet
        return CHECKPOINT_QUESTION in prompt and "Observation:" not in prompt

    runs = {}
    for make in (LangGraphReAct, ReActAgent):
        llm = ScriptedLLM(course_script())
        llm.add(first_turn, reply, name="your reply")
        agent = make(llm, default_executor(), max_steps=5)
        runs[make.__name__] = (agent.run(CHECKPOINT_QUESTION, verbose=False), len(llm.calls))
    answer, calls = runs["LangGraphReAct"]
    if "25185" in answer:
        raise Fail("LangGraph's run", "a wrong answer", repr(answer), H_RIGHT)
    ours, our_calls = runs["ReActAgent"]
    return (f"LangGraph stopped after {calls} call with your text as its answer: a reply without a tool call is an "
            f"answer to create_agent. agentkit's loop fed the format reminder back and went on: {our_calls} calls, "
            f"answer {ours!r}. Neither is a bug; they are two contracts, and the table of section 6 lists both.")


question("16.q1", "With the stand-in, LangGraph's ReAct sends the model exactly the prompts agentkit's sends, and "
                  "smolagents' prompts are several times longer. Why?", {
    "a": ("create_agent sends the system prompt we give it and nothing else, and the adapter writes the history as "
          "the text protocol; smolagents puts its own long system prompt (tool-calling rules, worked examples) "
          "before our role prompt, on every call.", True,
          "section 2 prints smolagents' system message: its own instructions, then ours, then its rules."),
    "b": ("smolagents re-sends the whole history twice.", False,
          "it re-sends it once, as every loop does; the extra tokens are the same on the first call, before any "
          "history exists."),
    "c": ("LangGraph compresses the history.", False,
          "nothing is compressed: the prompts are byte for byte agentkit's, history included."),
    "d": ("The stand-in answers smolagents with longer replies.", False,
          "the replies are the same length; the difference is in the prompt tokens, not the completion tokens."),
}, hint="section 2, the token counts per call and the system prompts printed there.")

question("16.q2", "The execute_tool spans of agentkit's text ReAct carry no gen_ai.tool.call.id; those of the "
                  "LangGraph and smolagents runs do. Why?", {
    "a": ("The text protocol has no call ids; the frameworks' tool calls do (the adapter makes one per call), and the "
          "conventions recommend the attribute only when an id is available.", True,
          "a reply 'Action: Search[x]' names a tool and an input, nothing else; a native tool call carries an id "
          "that its result must answer."),
    "b": ("agentkit's executor drops the ids.", False,
          "there is no id to drop: the model's text never had one."),
    "c": ("The conventions forbid call ids on INTERNAL spans.", False,
          "execute_tool spans are INTERNAL, and gen_ai.tool.call.id is one of their recommended attributes."),
    "d": ("The in-memory exporter removes them.", False,
          "the exporter sends every attribute it is given; section 7 prints the ids of the framework runs."),
}, hint="section 7, the trace printed for each of the three runs.")
