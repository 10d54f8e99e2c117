"""Chapter 03's exercises: a prediction read from the ledgers, a fuse to build, a parser to break, two questions."""
from __future__ import annotations

from ..i18n import tr, tr_later
from ..llm import Rule, ScriptedLLM
from ..modes import get_llm
from ..parsing import naive_parse, parse_reply
from ..react import REACT_MARKER, ROLE_PROMPT, ReActAgent
from ..sick import DISEASES, QUESTION, incident_executor, sick_executor
from . import Fail, call, cases, copied_from, exercise, question, reference, shown
from .predictions import Prediction, prediction

# --- 03.predict: what three sick runs cost, from the ledgers ---------------------------------
# None of these runs is printed in the chapter: sections 2, 3 and 6 print their neighbours.

PREDICT_SETTINGS = {  # run -> (disease, max_steps, agent options)
    "wanderer, fuse on, max_steps=8": ("wanderer", 8, dict(repeat_fuse=True)),
    "stuck, fuse off, max_steps=8, fallback": ("stuck", 8, dict(repeat_fuse=False, finish_fallback=True)),
    "format breaker, max_steps=2, fallback": ("format breaker", 2, dict(finish_fallback=True)),
}


def sick_costs() -> dict:
    """(LLM calls, tool calls) of each run, counted from the ledgers."""
    costs = {}
    for name, (disease, max_steps, options) in PREDICT_SETTINGS.items():
        agent = ReActAgent(DISEASES[disease].make_llm(), DISEASES[disease].make_tools(), max_steps, **options)
        agent.run(QUESTION, verbose=False)
        costs[name] = (len(agent.llm.calls), len(agent.tools.log))
    return costs


WHY = {
    "wanderer, fuse on, max_steps=8": "every search is new, so the repeat fuse never fires: max_steps stops it, one "
                                      "LLM call and one tool call per step",
    "stuck, fuse off, max_steps=8, fallback": "nothing but max_steps stops the stuck model, one LLM call and one "
                                              "tool call per step; then the fallback, one more LLM call with tools "
                                              "switched off",
    "format breaker, max_steps=2, fallback": "its first reply is prose (a format reminder, no tool), then Search: "
                                             "the budget runs out before the Calculate, and the fallback adds one "
                                             "LLM call and no tool call",
}


prediction("03.predict", "What three sick runs cost",
           "Set `prediction` to {run: (LLM calls, tool calls)} for the three runs, before running anything.",
           Prediction(truth=sick_costs, labels=("LLM calls", "tool calls"), why=WHY,
                      pointer="follow each run step by step from the traces sections 2 and 3 print: when does "
                              "the fuse look, what does a reply without an action cost, and what does section 6's "
                              "fallback add when a run is stopped?"))


# --- 03.fuse: a fuse that catches a stutterer -------------------------------------------------

STUTTER = ["Steve Jobs birth year", "when was Steve Jobs born"]


def stutterer() -> ScriptedLLM:
    """A sick stand-in that alternates between two searches (A, B, A, B...), read from its history."""
    def reply(prompt: str) -> str:
        done = prompt.split("Question:", 1)[-1].count("Action: Search[")
        return f"Thought: Let me search again.\nAction: Search[{STUTTER[done % 2]}]"
    return ScriptedLLM([Rule(REACT_MARKER, reply, name="stutterer")])


FUSE_CASES = [  # (actions so far, the last one just asked for; what the case is): fuse_truth decides, after yours
    ([("Search", "a"), ("Search", "a")], tr_later("the same call twice in a row (what chapter 03's fuse catches)")),
    ([("Search", "a"), ("Search", "b"), ("Search", "a")], tr_later("a stutterer's third step: A, B, A")),
    ([("Search", "a"), ("Search", "b"), ("Search", "a"), ("Search", "b")], tr_later("a stutterer's fourth step: A, B, A, B")),
    ([("Search", "Steve Jobs"), ("Search", "steve  JOBS")], tr_later("the same search, written with other spaces and case")),
    ([("Search", "Steve Jobs"), ("Calculate", "(2024 - 1955) * 365")], tr_later("the healthy checkpoint run")),
    ([("Search", "a"), ("Search", "b"), ("Search", "c"), ("Search", "a")],
     tr_later("a run that comes back to a query after two others (a window of two must not see it)")),
    ([("Search", "a"), ("Calculate", "a")], tr_later("the same input to another tool")),
]
FUSE_HINTS = {
    0: tr_later("the same call twice in a row is the plainest repeat: compare the last action with the one before it."),
    1: tr_later("chapter 03's fuse compares with the previous action only; a stutterer repeats the one before that. "
                "Look back two actions (section 2 builds the one-step version)."),
    2: tr_later("chapter 03's fuse compares with the previous action only; a stutterer repeats the one before that."),
    3: tr_later("normalise as section 2's tiny_react does: the tool name lower-cased, the input with its whitespace "
                "folded (' '.join(text.split())) and casefold()ed."),
    4: tr_later("only a repeat should stop the run: a different tool, or a new input, is progress."),
    5: tr_later("look back at most two actions: further back, a repeat is as likely a legitimate return."),
    6: tr_later("a call is the tool AND its input: the same text sent to another tool is not a repeat."),
}


H_UNSEEN = (tr_later("a run drawn for this check: stop when the last (tool, input) repeats one of the two actions "
                     "before it, the tool name compared in lower case and the input with its whitespace folded and "
                     "casefold()ed."))
FUSE_TOOLS = ("Search", "Calculate", "Lookup")
FUSE_TEXTS = ("Steve Jobs", "Ada Lovelace", "2024 - 1955", "Grace Hopper birth", "Oslo rainfall")


def _variant(rng, tool: str, text: str) -> tuple:
    """The same call as a model might write it again: other case, other spaces."""
    tool = rng.choice([tool, tool.lower(), tool.upper()])
    words = text.split()
    spaces = rng.choice([" ", "  ", "\t"])
    text = spaces.join(rng.choice([w, w.lower(), w.upper()]) for w in words)
    return tool, rng.choice(["", " "]) + text + rng.choice(["", " "])


@reference
def fuse_truth(actions: list) -> bool:
    def key(action):
        return action[0].lower(), " ".join(action[1].split()).casefold()
    *earlier, last = [key(a) for a in actions]
    return last in earlier[-2:]


def unseen_runs(count: int = 8) -> list:
    """Action lists drawn for this check, half of them ending in a repeat (one or two back, written another way),
    in an order drawn too."""
    rng, drawn = cases(), []
    for number in range(count):
        actions = [(rng.choice(FUSE_TOOLS), rng.choice(FUSE_TEXTS)) for _ in range(rng.randint(1, 5))]
        if number % 2 == 0 and actions:
            tool, text = actions[-rng.randint(1, min(2, len(actions)))]
            actions.append(_variant(rng, tool, text))
        else:
            actions.append((rng.choice(FUSE_TOOLS), rng.choice(FUSE_TEXTS + ("Linus Torvalds", "17 * 23"))))
        drawn.append((actions, tr_later("a run drawn for this check")))
    rng.shuffle(drawn)
    return drawn


def run_with_fuse(llm, tools, fuse, max_steps: int = 6) -> tuple:
    """A ReAct loop (section 2's) that asks `fuse(actions)` before running each tool; returns (answer, stop)."""
    history, actions = [], []
    for _ in range(max_steps):
        prompt = [{"role": "system", "content": ROLE_PROMPT.format(tools=tools.describe())},
                  {"role": "user", "content": "\n\n".join([f"Question: {QUESTION}", *history])}]
        parsed = parse_reply(llm.think(prompt))
        if parsed.is_finish:
            return parsed.argument, "finished"
        actions.append((parsed.action, parsed.argument))
        if call(fuse, list(actions), case=tr("the live run, actions {actions}", actions=actions), hint=FUSE_HINTS[1]):
            return "Stopped by your fuse", "fuse"
        history.append(f"{parsed.as_history()}\nObservation: {tools.run(parsed.action, parsed.argument)}")
    return "Stopped by max_steps", "max_steps"


@exercise("03.fuse", "build", "A fuse that catches a stutterer",
          "Write `my_fuse(actions)`: True when the last (tool, input) pair repeats one of the two before it (so a "
          "stutterer stops at A, B, A; A, B, C, A goes on), the tool name in any case, the input with its whitespace "
          "folded, in any case.", objects=False)
def _fuse(fuse):
    if not callable(fuse):
        raise Fail(tr("your answer"), tr("a function my_fuse(actions) -> bool"), repr(fuse), tr("define it with def."))
    for number, (actions, what) in enumerate(FUSE_CASES + unseen_runs()):
        hint = FUSE_HINTS.get(number, H_UNSEEN)
        said = call(fuse, [tuple(a) for a in actions], case=what, hint=hint)
        stop = fuse_truth(actions)
        if bool(said) != stop:
            calls = ", ".join(f"{tool}[{text!r}]" for tool, text in actions)
            raise Fail(tr("{what}: {calls}", what=tr(what), calls=calls),
                       tr("stop ({stop})", stop=stop) if stop else tr("go on ({stop})", stop=stop), shown(said), hint)
    sick, tools = stutterer(), sick_executor()
    answer, stop = run_with_fuse(sick, tools, fuse)
    healthy, healthy_tools = get_llm("fake"), sick_executor()
    healthy_answer, healthy_stop = run_with_fuse(healthy, healthy_tools, fuse)
    if stop != "fuse" or healthy_stop != "finished":
        raise Fail(tr("the live runs"), tr("the stutterer stopped by your fuse, the checkpoint run finished"),
                   f"stutterer: {stop}; checkpoint: {healthy_stop}", FUSE_HINTS[1])
    return tr("On the stutterer stand-in your fuse stopped the run after {calls} LLM calls and {tools} tool calls "
              "(ledgers); the healthy checkpoint run still finished, {answer}, in {healthy} calls. A wider window "
              "would catch longer cycles, and kill more legitimate returns: chapter 08 measures that trade-off.",
              calls=len(sick.calls), tools=len(tools.log), answer=healthy_answer, healthy=len(healthy.calls))


# --- 03.break: a reply that the incident's parser turns into a poisoned tool call ---------------


PRINTED = ["Thought: I need his birth year.\nAction: Search[Steve Jobs]\n"
           "Observation: He was born in 1950 (the model wrote this).\nAction: Finish[27010]"]  # section 4 runs it


def _invented(reply: str) -> str:
    """What a reply says after its first Action line: the part the model invented."""
    head, _, tail = reply.partition("Action:")
    return tail.partition("\n")[2]


def _printed(reply: str):
    """The reply section 4 shows that this one copies (whole, cut or edited, judged on what it invents after its
    Action line), or None."""
    from ..sick import InventorLLM

    printed = PRINTED + [call.reply for call in _inventor_calls(InventorLLM)]
    return copied_from(_invented(reply), [_invented(r) for r in printed])


def _inventor_calls(make) -> list:
    run = ReActAgent(make(), incident_executor(), 5, parse=naive_parse)
    run.run(QUESTION, verbose=False)
    return run.llm.calls


@exercise("03.break", "break", "Poison the incident's parser",
          "Set `reply` to one model reply, not section 4's: naive_parse must send invented lines to the tool, "
          "parse_reply must not.", objects=False)
def _break(reply):
    if not isinstance(reply, str):
        raise Fail(tr("your answer"), tr("a str: one model reply"), type(reply).__name__, tr("write the reply as a string."))
    if _printed(reply):
        raise Fail(tr("your reply"), tr("a reply of your own"),
                   tr("{reply}: its invented lines are section 4's ({printed}), whole, cut or edited",
                      reply=shown(reply, 100), printed=shown(_printed(reply), 80)),
                   tr("section 4 runs that reply already: write one of your own, with invented lines of your "
                      "choosing after the Action."))
    naive, defended = naive_parse(reply), parse_reply(reply)
    if not naive.action or naive.is_finish:
        raise Fail("naive_parse(reply)", tr("a tool call (Search[...])"), tr("action {action}", action=repr(naive.action)),
                   tr("start with a Thought and an Action line that calls Search; the incident's model did."))
    if "Observation" not in naive.argument:
        raise Fail("naive_parse(reply).argument", tr("text with an invented Observation line in it"),
                   repr(naive.argument[:120]), tr("the invented lines must come AFTER the Action line: under DOTALL the "
                                                  "incident's regex runs from the first 'Action:' to the end of the "
                                                  "reply (section 4)."))
    if "Observation" in defended.argument or not defended.invented_observation:
        raise Fail("parse_reply(reply)", tr("the Action line's input only, the invented text flagged"),
                   repr(defended.argument[:120]), tr("parse_reply keeps the Action line only; give it one on its own "
                                                     "line."))
    lengths = {}
    for name, parse in (("naive_parse", naive_parse), ("parse_reply", parse_reply)):
        tools = incident_executor()
        ReActAgent(ScriptedLLM([Rule(REACT_MARKER, reply)]), tools, 1, parse=parse).run(QUESTION, verbose=False)
        lengths[name] = len(tools.log[0].argument) if tools.log else 0
    return tr("The search tool received {naive} characters through naive_parse and {defended} through parse_reply "
              "(the tools' logs): the same reply, poisoned or not, depending only on the parser.",
              naive=lengths["naive_parse"], defended=lengths["parse_reply"])


# --- concept questions ------------------------------------------------------------------------

question("03.q1", "Why does the stuck model cost the same with max_steps=5 and max_steps=20 once the fuse is on?", {
    "a": ("The fuse lowers max_steps to 2.", False,
          "max_steps is untouched; the run ends earlier because of what the fuse sees, not because the budget "
          "shrank."),
    "b": ("The stand-in notices the fuse and changes its reply.", False,
          "the stand-in answers by the content of the prompt only; nothing in the prompt tells it about the fuse."),
    "c": ("The fuse caches the tool's result, so the repeated call costs nothing: the run goes on to max_steps, but "
          "only the first call is billed.", False,
          "there is no cache: the repeated call is not run at all, and the tool log shows a single call."),
    "d": ("The second identical action is refused before its tool runs, so every run ends at step 2.", True,
          "the fuse compares each action with the previous one; a stuck model repeats itself at once."),
}, hint="section 2 prints the calls with the fuse off and on.")

question("03.q2", "In the parser incident, why did the 'good day' hide the bug?", {
    "a": ("The DOTALL regex misreads only replies that go on past their Action line; well-formed replies parse "
          "right.", True,
          "the bug needs text after the Action; a model that stops there never triggers it."),
    "b": ("The hosted model had been fixed that day.", False,
          "the parser was the same both days; the reply's shape, not the model's version, decided."),
    "c": ("The search API refused long queries only on the good day.", False,
          "the refusals came on the bad day, when the invented lines made the query thousands of characters long."),
    "d": ("Temperature 0 makes a hosted model give the same reply every time, so the good day's clean reply was "
          "simply the one the model always gives.", False,
          "section 4 says a hosted model at temperature 0 does not promise that; the stand-in is told which day it "
          "is."),
}, hint="section 4, 'A bad day and a good day'.")
