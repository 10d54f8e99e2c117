"""Chapter 16's exercises: predict what a stuck model costs in three loops, build a chat span's attributes, break
LangGraph's ReAct with a reply that ends its run, two questions. The frameworks' checks need the bridge extra."""
from __future__ import annotations

from ..bridge import INSTALL, missing
from ..i18n import tr, tr_later
from ..llm import CallRecord
from ..otel import spans_of
from ..parsing import parse_reply
from ..react import ReActAgent
from ..scripted import ScriptedLLM
from ..scripts import course_script
from ..scripts.react import CHECKPOINT_QUESTION
from ..sick import FormatBreakerLLM, StuckLLM
from ..tools import default_executor
from . import Fail, call, cases, copied_from, exercise, question, reference, shown
from .predictions import Prediction, prediction


def _need_the_bridge(case: str) -> None:
    absent = missing()
    if absent:
        raise Fail(case, tr("LangGraph, smolagents and OpenTelemetry installed"),
                   tr("not installed: {names}", names=", ".join(absent)),
                   tr("this check runs the frameworks: install them with {install}, restart the kernel, check again.",
                      install=INSTALL))


# --- 16.predict: a stuck model in three loops ---------------------------------------------------

PREDICT_STEPS = 7  # section 4 runs the stuck stand-in at max_steps=5, agentkit without finish_fallback: not these
PREDICT_LOOPS = {f"agentkit, max_steps={PREDICT_STEPS}, finish_fallback=True": "agentkit",
                 f"LangGraph, max_steps={PREDICT_STEPS}": "LangGraph",
                 f"smolagents, max_steps={PREDICT_STEPS}": "smolagents"}
WHY = {
    f"agentkit, max_steps={PREDICT_STEPS}, finish_fallback=True":
        "the repeat fuse (chapter 03) refuses the second identical action before its tool runs: 2 LLM calls, 1 tool "
        "call; finish_fallback asks once more, with tools off, after ANY stop that is not a Finish, the fuse's too: "
        "3 LLM calls, 1 tool call, whatever max_steps is",
    f"LangGraph, max_steps={PREDICT_STEPS}": tr_later(
        "create_agent has no repeat fuse: ModelCallLimitMiddleware(run_limit={steps}) ends the run after model call "
        "{steps}, and every one of them ran the search: {steps} and {steps}", steps=PREDICT_STEPS),
    f"smolagents, max_steps={PREDICT_STEPS}": tr_later(
        "no repeat fuse either: {steps} steps, each with its search, then at max_steps smolagents asks the model once "
        "more for an answer, without tools: {calls} LLM calls, {steps} tool calls", steps=PREDICT_STEPS,
        calls=PREDICT_STEPS + 1),
}


def stuck_costs() -> dict:
    """(LLM calls, tool calls) of each loop on the stuck stand-in, read from the ledgers."""
    _need_the_bridge("running the three loops")
    from ..bridge import SMOLAGENTS_FALLBACK_MARKER
    from ..bridge.with_langgraph import LangGraphReAct
    from ..bridge.with_smolagents import SmolagentsReAct

    makers = {"agentkit": lambda llm: ReActAgent(llm, default_executor(), PREDICT_STEPS, finish_fallback=True),
              "LangGraph": lambda llm: LangGraphReAct(llm, default_executor(), max_steps=PREDICT_STEPS),
              "smolagents": lambda llm: SmolagentsReAct(llm, default_executor(), max_steps=PREDICT_STEPS)}
    costs = {}
    for row, loop in PREDICT_LOOPS.items():
        llm = StuckLLM()
        llm.add(SMOLAGENTS_FALLBACK_MARKER, llm.fallback, name="smolagents' last try")
        agent = makers[loop](llm)
        agent.run(CHECKPOINT_QUESTION, verbose=False)
        costs[row] = (len(llm.calls), len(agent.tools.log))
    return costs


prediction("16.predict", "A stuck model in three loops",
           tr_later("Set `prediction` to {{loop: (LLM calls, tool calls)}} for the stuck stand-in at max_steps={steps}, "
                    "agentkit's loop with finish_fallback=True, before running anything.", steps=PREDICT_STEPS),
           Prediction(truth=stuck_costs, labels=("LLM calls", "tool calls"), why=WHY,
                      case=lambda row: tr("{row}, the stuck stand-in", row=row),
                      done=lambda truth: tr("A fuse is a few lines of the loop; a framework without one pays the "
                                            "whole budget."),
                      pointer="follow each loop as section 4 runs it on the stuck stand-in: which loop notices the "
                              "repeat, and when; what each does at its step limit; and what finish_fallback adds "
                              "after a stop (chapter 03, section 6)."))


# --- 16.span: the attributes of one chat span ------------------------------------------------------

H_NAMES = (tr_later("the conventions of version 1.41.0 spell them gen_ai.operation.name, gen_ai.provider.name, "
                    "gen_ai.request.model, gen_ai.request.temperature, gen_ai.usage.input_tokens and "
                    "gen_ai.usage.output_tokens; section 7 prints a chat span with all six."))
H_OLD = (tr_later("gen_ai.usage.prompt_tokens and completion_tokens are the names of older versions, deprecated for "
                  "gen_ai.usage.input_tokens and output_tokens: a viewer that reads the current names finds nothing."))
H_SYSTEM = tr_later("gen_ai.system is the older name; the version this chapter follows calls it gen_ai.provider.name.")
H_VALUES = (tr_later("read every value from the record and the provider you are given: its model, its temperature as a "
                     "float, its prompt_tokens and completion_tokens; the operation is the string 'chat'."))

RECORDS = [  # (record, provider): shown cases; each check adds records and providers drawn for it
    (CallRecord([{"role": "user", "content": "hi"}], "Action: Finish[hi]", 12, 5, 0.0, 0.01, model="scripted-stand-in"),
     "agentkit"),
    (CallRecord([{"role": "user", "content": "2 + 2?"}], "4", 7, 1, 0.7, 0.2, model="gpt-4o-mini"), "openai"),
    (CallRecord([{"role": "user", "content": "x"}], "", 0, 0, 1, 0.0, model="SmolLM2-135M-Instruct"), "agentkit"),
]
MODELS = ("gpt-4o-mini", "gpt-4.1-nano", "SmolLM2-135M-Instruct", "SmolLM2-360M-Instruct", "scripted-stand-in",
          "qwen2.5-0.5b-instruct", "llama-3.2-1b-instruct")
PROVIDERS = ("openai", "agentkit", "llama.cpp", "azure.ai.openai", "mistral_ai")


def unseen_record() -> tuple:
    """(record, provider) drawn for this check: any model, provider, temperature (an int now and then) and tokens."""
    rng = cases()
    temperature = rng.choice([0, 1, 2, 0.0, 0.2, 0.7, 1.0, round(rng.uniform(0, 2), 2)])
    model = rng.choice(MODELS) + rng.choice(["", "", f"-{rng.randint(1, 9)}"])
    messages = [{"role": "user", "content": f"question {rng.randint(1, 999)}"}]
    record = CallRecord(messages, f"reply {rng.randint(1, 999)}", rng.randint(0, 4000), rng.randint(0, 600),
                        temperature, round(rng.uniform(0, 3), 3), model=model)
    return record, rng.choice(PROVIDERS)


@reference
def span_truth(record, provider: str) -> dict:
    """The chat span's attributes as agentkit.otel writes them."""
    return spans_of([record], [], agent_name="check", provider=provider)[1].attributes


def _warm_bridge() -> None:
    """The frameworks, imported in the kernel once, not in every forked check."""
    if not missing():
        from ..bridge import with_langgraph, with_smolagents  # noqa: F401


@exercise("16.span", "build", "A chat span's attributes",
          "Write `chat_attributes(record, provider)`: the gen_ai.* attributes of the chat span for one CallRecord, "
          "the temperature as a float (an int 1 in the record is 1.0 in the span); agentkit.otel's spans_of and "
          "trace_of are refused.", forbid=("agentkit.otel:spans_of", "agentkit.otel:trace_of"), objects=False)
def _span(chat_attributes):
    if not callable(chat_attributes):
        raise Fail(tr("your answer"), tr("a function chat_attributes(record, provider) -> dict"),
                   repr(chat_attributes), tr("define it with def."))
    drawn = [unseen_record() for _ in range(6)]
    for record, provider in RECORDS + drawn:
        case = tr("a call to {model} at temperature {temperature}, provider {provider}", model=record.model,
                  temperature=repr(record.temperature), provider=repr(provider))
        yours = call(chat_attributes, record, provider, case=case, hint=H_VALUES)
        expected = span_truth(record, provider)
        if not isinstance(yours, dict):
            raise Fail(case, tr("a dict of attributes"), shown(yours), tr("return a dict."))
        keys = set(yours)
        hint = H_OLD if any("prompt_tokens" in str(k) or "completion_tokens" in str(k) for k in keys) else \
            H_SYSTEM if "gen_ai.system" in keys else H_NAMES
        if keys != set(expected):
            raise Fail(case, tr("the keys {keys}", keys=sorted(expected)), shown(sorted(map(str, keys)), 400), hint)
        wrong = {k: yours[k] for k in expected if yours[k] != expected[k] or type(yours[k]) is not type(expected[k])}
        if wrong:  # the type too: a viewer tells the int 1 from the double 1.0
            raise Fail(case, repr({k: expected[k] for k in wrong}), shown(wrong, 400), H_VALUES)
    return tr("Your attributes match agentkit.otel's on {entries} ledger entries, {drawn} of them drawn for this "
              "check. Any viewer that reads the GenAI conventions now shows each call's model and tokens, whatever "
              "framework made the call.", entries=len(RECORDS) + len(drawn), drawn=len(drawn))


# --- 16.break: a reply that ends LangGraph's run ---------------------------------------------------

H_ACTION = (tr_later("parse_reply finds an action in your reply, so the adapter turns it into a tool call (or, for "
                     "Finish, a proper answer) and LangGraph goes on as agentkit does. Write a reply with no Action "
                     "line and no Finish."))
H_RIGHT = tr_later("the run ended with the right answer: make the reply say something else than 25185.")


def _printed(reply: str) -> bool:
    """Is the reply section 4's format breaker's chat, whole, cut or edited?"""
    return copied_from(reply, [FormatBreakerLLM().symptom("")]) is not None


@exercise("16.break", "break", "End LangGraph's run with a chat",
          "Set `reply` to a first reply, not section 4's format-breaker chat (whole, cut or edited), that ends "
          "LangGraph's ReAct at once with a wrong answer; agentkit's goes on.", warm=_warm_bridge, objects=False)
def _break(reply):
    if not isinstance(reply, str) or not reply.strip():
        raise Fail(tr("your reply"), tr("a non-empty string: the model's first reply"), repr(reply),
                   tr("write the reply as text."))
    if _printed(reply):
        raise Fail(tr("your reply"), tr("a reply of your own"),
                   tr("{reply}: section 4's format-breaker chat, whole, cut or edited", reply=shown(reply, 100)),
                   tr("section 4 runs the format breaker's chat through LangGraph already: write a chat of your own."))
    if parse_reply(reply).action:
        raise Fail(repr(reply[:80]), tr("a reply without an action"),
                   tr("parse_reply reads {action}", action=repr(parse_reply(reply).action)), H_ACTION)
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
        raise Fail(tr("LangGraph's run"), tr("a wrong answer"), repr(answer), H_RIGHT)
    ours, our_calls = runs["ReActAgent"]
    return tr("LangGraph stopped after {calls} call with your text as its answer: a reply without a tool call is an "
              "answer to create_agent. agentkit's loop fed the format reminder back and went on: {ours} calls, answer "
              "{answer}. Neither is a bug; they are two contracts, and the table of section 6 lists both.", calls=calls,
              ours=our_calls, answer=repr(ours))


question("16.q1", "Through the course's adapter, LangGraph's ReAct sends the model exactly the prompts agentkit's "
                  "sends, and smolagents' prompts are several times longer. Why?", {
    "a": ("smolagents re-sends the whole history twice on every call, once as messages and once in its memory's "
          "summary, so each prompt doubles.", False,
          "it re-sends it once, as every loop does; the extra tokens are the same on the first call, before any "
          "history exists."),
    "b": ("create_agent never sends tool schemas or tool messages, whatever chat model it drives, so its prompts "
          "are plain text like agentkit's.", False,
          "with a real chat model class (section 8's ChatOpenAI) it sends a JSON schema per tool and native tool "
          "messages; the prompts match only because of the adapter."),
    "c": ("The stand-in answers smolagents with longer replies, and every later prompt of the run carries those long "
          "replies, so the prompts grow.", False,
          "the replies are the same length; the difference is in the prompt tokens, not the completion tokens."),
    "d": ("smolagents puts its own long system prompt, with tool-calling rules and examples, before ours on every "
          "call; the adapter writes LangGraph's messages back into our text protocol, and its bind_tools sends no "
          "schema.", True,
          "section 2 prints smolagents' system message: its own instructions, then ours, then its rules. The "
          "course's adapter (CourseChatModel) turns LangChain's messages back into the text protocol and its "
          "bind_tools returns the model itself, so LangGraph's prompts are agentkit's, byte for byte."),
}, hint="section 2, the token counts per call and the system prompts printed there; section 8 for a real chat "
        "model class.")

question("16.q2", "The execute_tool spans of agentkit's text ReAct carry no gen_ai.tool.call.id; those of the "
                  "LangGraph and smolagents runs do. Why?", {
    "a": ("Text-protocol actions have no ids; native tool calls do, and the conventions recommend the attribute only "
          "when an id exists.", True,
          "a reply 'Action: Search[x]' names a tool and an input, nothing else; a native tool call carries an id "
          "that its result must answer (the adapter makes one per call)."),
    "b": ("agentkit's executor drops the ids of the calls it runs, because its log keeps only each tool's name, input "
          "and output.", False,
          "there is no id to drop: the model's text never had one."),
    "c": ("The conventions forbid call ids on INTERNAL spans, and agentkit's tool spans are INTERNAL while the "
          "frameworks' tool spans are not.", False,
          "execute_tool spans are INTERNAL, and gen_ai.tool.call.id is one of their recommended attributes."),
    "d": ("The in-memory exporter removes them.", False,
          "the exporter sends every attribute it is given; section 7 prints the ids of the framework runs."),
}, hint="section 7, the trace printed for each of the three runs.")
