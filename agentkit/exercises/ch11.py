"""Chapter 11's exercises: predict what bad tool calls cost, build a schema check and a cassette lookup, send a
malformed call that JSON accepts, two questions. Everything runs on the stand-in, in process (no server)."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

from ..i18n import tr, tr_later
from ..modes import get_llm
from ..native import (
    NATIVE_FALLBACK_MARKER, NATIVE_MARKER, NativeReActAgent, call_problem, format_failures, tool_schemas,
)
from ..protocol import AssistantTurn, FunctionCall
from ..cassette import CassetteMiss, request_of
from ..recorder import Recorder
from ..scripted import ScriptedLLM
from ..scripts import course_script
from ..scripts.native import DISEASES, TASKS, sick_tool_caller
from ..scripts.native import call as stand_in_call
from ..scripts.react import CHECKPOINT_QUESTION
from ..text import json_lines
from ..tools import default_executor
from . import Fail, call, cases, exercise, question, reference
from .predictions import Prediction, prediction

# --- 11.predict: what a bad call costs, from the ledgers --------------------------------------

PREDICT_RUNS = {  # name -> (disease, recovers, repeat fuse, max_steps); section 4 prints none of these runs
    "arguments not JSON, recovers, max_steps=3": ("arguments not JSON", True, True, 3),
    "missing field, never learns, max_steps=4": ("missing field", False, True, 4),
    "three calls at once, never learns, max_steps=4": ("three calls at once", False, True, 4),
    "three calls at once, never learns, max_steps=4, repeat_fuse=False": ("three calls at once", False, False, 4),
}

WHY = {
    "arguments not JSON, recovers, max_steps=3": "the bad call runs no tool and costs one model call; told off, the "
                                                 "stand-in goes on with Search and Calculate, and the budget of 3 ends "
                                                 "the run before the Finish",
    "missing field, never learns, max_steps=4": "every reply is a bad call: each is fed back, none runs a tool, and "
                                                "max_steps=4 ends the run after 4 calls",
    "three calls at once, never learns, max_steps=4": "the first call of each reply runs and the others are answered "
                                                      "'not run'; the second reply asks for the same Search again and "
                                                      "the repeat fuse stops it before its tool runs",
    "three calls at once, never learns, max_steps=4, repeat_fuse=False": "with no fuse, the same Search runs at every "
                                                                         "step until max_steps: no format failure "
                                                                         "(each call is well formed), 4 tool runs",
}


def bad_call_costs() -> dict:
    """(LLM calls, format failures, tool runs) of each predicted run, counted from the ledgers."""
    costs = {}
    for name, (disease, recovers, fuse, max_steps) in PREDICT_RUNS.items():
        agent = NativeReActAgent(sick_tool_caller(disease, recovers), max_steps=max_steps, repeat_fuse=fuse)
        agent.run(CHECKPOINT_QUESTION, verbose=False)
        costs[name] = (len(agent.run_calls), sum(format_failures(agent.run_calls, "native")),
                       len(agent.run_tool_calls))
    return costs


prediction("11.predict", "What a bad tool call costs",
           "Set `prediction` to {run: (LLM calls, format failures, tool runs)} for the four runs, before running "
           "anything.",
           Prediction(truth=bad_call_costs, labels=("LLM calls", "format failures", "tool runs"), why=WHY,
                      pointer="section 4 lists what the loop does with each bad call (fed back, or run), and prints "
                              "the recovering runs: follow each run step by step, and mind the repeat fuse."))


# --- 11.schema: check one tool call against its schema -----------------------------------------


def _schema(name: str, field: str) -> dict:
    return {"type": "function", "function": {"name": name, "description": f"{name}, for the exercise",
                                             "parameters": {"type": "object",
                                                            "properties": {field: {"type": "string"}},
                                                            "required": [field], "additionalProperties": False}}}


CONVERT = [_schema("Convert", "amount"), _schema("Finish", "answer")]

H_VALID = tr_later("a call with a known name and exactly the schema's fields, each a string, is valid: return None.")
H_UNKNOWN = tr_later("the name must be one of the schemas' function names: the model can invent a tool.")
H_JSON = (tr_later("the arguments are the model's TEXT: json.loads raises ValueError on text that is not JSON. Catch it "
                   "and say so (section 3's 'arguments not JSON')."))
H_OBJECT = tr_later("JSON that is not an object (a list, a number, null) has no fields: check isinstance(arguments, "
                    "dict).")
H_REQUIRED = (tr_later("read the required fields from the schema's parameters ('required'), not a name you know: "
                       "another tool's field is not 'input'."))
H_STRING = tr_later("each field's value must have the schema's type: 'string' means isinstance(value, str).")
H_EXTRA = (tr_later("additionalProperties: false means a field the schema lacks is an error too (section 4's list: 'a "
                    "field the schema lacks')."))
H_MESSAGE = tr_later("a bad call needs a message saying what is wrong: the loop feeds it back to the model.")

SCHEMA_CASES = [  # (tool name, arguments text, schemas, what, hint): schema_truth decides, after yours
    ("Search", '{"input": "Ada Lovelace"}', None, tr_later("a good Search"), H_VALID),
    ("Finish", '{"answer": "1815"}', None, tr_later("a good Finish"), H_VALID),
    ("Convert", '{"amount": "12 EUR"}', CONVERT, tr_later("a good call to a tool whose field is 'amount'"), H_REQUIRED),
    ("Browse", '{"input": "Ada Lovelace"}', None, tr_later("a tool the schemas do not have"), H_UNKNOWN),
    ("Calculate", "{'input': '2 + 2'}", None, tr_later("single quotes: not JSON"), H_JSON),
    ("Search", "", None, tr_later("empty arguments"), H_JSON),
    ("Search", '["Ada Lovelace"]', None, tr_later("a JSON list, not an object"), H_OBJECT),
    ("Finish", "null", None, tr_later("JSON null"), H_OBJECT),
    ("Search", '{"name": "Ada Lovelace"}', None, tr_later("the field under another name"), H_REQUIRED),
    ("Convert", '{"input": "12 EUR"}', CONVERT, tr_later("Convert called with Search's field"), H_REQUIRED),
    ("Calculate", '{"input": 4}', None, tr_later("a number where the schema wants a string"), H_STRING),
    ("Finish", '{"answer": {"year": 1815}}', None, tr_later("an object where the schema wants a string"), H_STRING),
    ("Search", '{"input": "Ada Lovelace", "limit": "3"}', None, tr_later("a field the schema lacks"), H_EXTRA),
]


@reference
def schema_truth(name: str, arguments: str, schemas: list) -> bool:
    """Is the call valid against the schemas (agentkit.native's call_problem decides)?"""
    return not call_problem(FunctionCall(id="check", name=name, arguments=arguments), schemas)[2]


H_UNSEEN = (tr_later("a call drawn for this check, against schemas drawn for it: the name must be one of theirs, the "
                     "arguments a JSON object, with every required field, no field the schema lacks, each of its type; "
                     "read all of that from the schema itself."))
NAMES = ("Convert", "Translate", "Lookup", "Weather", "Search", "Finish", "Calculate", "Rate")
FIELDS = ("amount", "text", "city", "query", "input", "answer", "expression", "word")


def unseen_call() -> tuple:
    """(name, arguments, schemas) drawn for this check: two or three tools with their own field names, and a call
    that is right or wrong in one way."""
    rng = cases()
    tools = dict(zip(rng.sample(NAMES, rng.randint(2, 3)), rng.sample(FIELDS, 3)))
    schemas = [_schema(name, field) for name, field in tools.items()]
    name = rng.choice(list(tools))
    field = tools[name]
    arguments = {field: rng.choice(["Oslo", "12 EUR", "Ada Lovelace", "17 * 23"])}
    slip = rng.choice([None, None, "name", "json", "object", "missing", "type", "extra"])
    if slip == "name":
        name = rng.choice([n for n in NAMES if n not in tools])
    elif slip == "missing":
        arguments = {rng.choice([f for f in FIELDS if f != field]): arguments[field]}
    elif slip == "type":
        arguments[field] = rng.choice([4, 2.5, None, True, ["Oslo"], {"v": 1}])
    elif slip == "extra":
        arguments[rng.choice([f for f in FIELDS if f != field])] = "3"
    text = json.dumps(arguments)
    if slip == "json":
        text = rng.choice([text.replace('"', "'"), text[:-1], "", f"{field}: Oslo"])
    elif slip == "object":
        text = json.dumps(rng.choice([[arguments[field]], arguments[field], None, 3]))
    return name, text, schemas


def _stand_in_calls() -> list:
    """Every tool call in the ledgers of the sick stand-ins (each sends its bad call, then recovers)."""
    calls = []
    for disease in DISEASES:
        agent = NativeReActAgent(sick_tool_caller(disease), max_steps=5)
        agent.run(CHECKPOINT_QUESTION, verbose=False)
        calls += [c for record in agent.run_calls for c in record.tool_calls]
    return calls


@exercise("11.schema", "build", "Check a tool call against its schema",
          "Write `validate_call(name, arguments, schemas)`: None when the call is valid, else a message saying "
          "what is wrong; agentkit.native's call_problem and schema_problem are refused.",
          forbid=("agentkit.native:call_problem", "agentkit.native:schema_problem"), objects=False)
def _schema_check(validate_call):
    if not callable(validate_call):
        raise Fail(tr("your answer"), tr("a function validate_call(name, arguments, schemas) -> None or a message"),
                   repr(validate_call), tr("define it with def."))
    course = tool_schemas(default_executor())
    drawn = [(*unseen_call(), tr_later("a call drawn for this check"), H_UNSEEN) for _ in range(8)]
    for name, arguments, schemas, what, hint in SCHEMA_CASES + drawn:
        schemas = schemas or course
        case = tr("{what}: {call} against {schemas}", what=tr(what), call=f"{name}({arguments})",
                  schemas=[s["function"]["name"] for s in schemas])
        said = call(validate_call, name, arguments, [json.loads(json.dumps(s)) for s in schemas], case=case, hint=hint)
        valid = schema_truth(name, arguments, schemas)
        if valid and said is not None:
            raise Fail(case, tr("None (a valid call)"), repr(said), hint)
        if not valid and (not isinstance(said, str) or not said.strip()):
            raise Fail(case, tr("a message saying what is wrong"), repr(said), H_MESSAGE if said is not None
                       else tr("{hint} (None means 'valid': if your function returned nothing, did it forget "
                               "`return`?)", hint=tr(hint)))
    calls = _stand_in_calls()
    for c in calls:
        case = tr("the stand-in's call {call}", call=f"{c.name}({c.arguments})")
        said = call(validate_call, c.name, c.arguments, course, case=case, hint=H_JSON)
        truth = call_problem(c, course)[2]
        if bool(truth) != (said is not None):
            raise Fail(case, tr("a problem: {problem}", problem=truth) if truth else tr("None (a valid call)"),
                       repr(said), H_VALID if not truth else H_MESSAGE)
    bad = sum(bool(call_problem(c, course)[2]) for c in calls)
    return tr("Your check agrees with agentkit.native on all {all} calls ({drawn} drawn for this check) and on the "
              "{calls} tool calls in the ledgers of the seven sick stand-ins, {bad} of them bad. The API gave each "
              "call its shape; what is inside is the model's, and your check is what reads it.",
              all=len(SCHEMA_CASES) + len(drawn), drawn=len(drawn), calls=len(calls), bad=bad)


# --- 11.replay: find a recorded reply by the content of the request ---------------------------

H_CONTENT = (tr_later("match by the CONTENT of the request: compare the whole request (messages, tools, tool_choice, "
                      "temperature) for equality, not its position on the cassette (section 7)."))
H_WHOLE = (tr_later("compare the WHOLE request: the same messages with other tools, or another temperature, is another "
                    "request, whose recorded answer may differ."))
H_MISS = tr_later("a request that is not on the cassette has no answer: return None (ReplayLLM raises CassetteMiss).")
H_FIRST = tr_later("when the same request was recorded twice, the first recording wins (as ReplayLLM's index keeps it).")
H_ORDER = (tr_later("key order inside a dict does not change its content: compare the dicts with ==, or json.dumps with "
                    "sort_keys=True."))


def _request(question: str, tools=None, temperature: float = 0, reversed_keys: bool = False) -> dict:
    messages = [{"role": "system", "content": "You are a tool-calling agent."}, {"role": "user", "content": question}]
    if reversed_keys:
        messages = [{"content": m["content"], "role": m["role"]} for m in messages]
    request = request_of(messages, tools, "required" if tools else None, temperature)
    return dict(reversed(list(request.items()))) if reversed_keys else request


def _entry(request: dict, reply: str) -> dict:
    return {"request": request, "reply": reply, "tool_calls": [], "usage": {}, "latency_s": 0.0, "model": "stand-in"}


SEARCH_ONLY = [_schema("Search", "input")]
CASSETTE = [
    _entry(_request("Question: What is 17 * 23?"), "first: 391"),
    _entry(_request("Question: Who wrote Git?"), "Linus Torvalds"),
    _entry(_request("Question: Who wrote Git?", tools=SEARCH_ONLY), "tools: Search[Git]"),
    _entry(_request("Question: Who wrote Git?", temperature=0.7), "warm: Linus"),
    _entry(_request("Question: What is 17 * 23?"), "second: 400"),
]
REPLAY_CASES = [  # (request, what, hint): replay_truth finds the reply, after your answer
    (_request("Question: Who wrote Git?"), tr_later("the second request on the cassette, asked first"), H_CONTENT),
    (_request("Question: Who wrote Git?", tools=SEARCH_ONLY), tr_later("the same messages, with tools"), H_WHOLE),
    (_request("Question: Who wrote Git?", temperature=0.7), tr_later("the same messages at temperature 0.7"), H_WHOLE),
    (_request("Question: Who wrote Python?"), tr_later("a question nobody recorded"), H_MISS),
    (_request("Question: What is 17 * 23?"), tr_later("a request recorded twice"), H_FIRST),
    (_request("Question: Who wrote Git?", reversed_keys=True), tr_later("the recorded request, with its keys in another order"),
     H_ORDER),
]


@reference
def replay_truth(entries: list, request: dict):
    """The reply of the first entry whose request equals `request`, or None."""
    return next((e["reply"] for e in entries if e["request"] == request), None)


QUESTIONS = ("Who wrote Git?", "What is 17 * 23?", "Who designed the Analytical Engine?", "Where is Oslo?",
             "When was Ada Lovelace born?", "How old was Turing?")


def unseen_cassette() -> tuple:
    """(entries, request) drawn for this check: requests that differ only in tools or temperature, a request
    recorded twice, keys in another order, or a request never recorded."""
    rng = cases()
    variants = [(q, tools, t) for q in rng.sample(QUESTIONS, 3) for tools in (None, SEARCH_ONLY) for t in (0, 0.7)]
    recorded = rng.sample(variants, rng.randint(2, 6))
    entries = [_entry(_request(f"Question: {q}", tools=tools, temperature=t), f"reply {n}")
               for n, (q, tools, t) in enumerate(recorded)]
    if rng.random() < 0.4:
        again = rng.randrange(len(recorded))
        entries.insert(rng.randint(again + 1, len(entries)), _entry(entries[again]["request"], "a later recording"))
    if rng.random() < 0.25:
        q, tools, t = rng.choice([v for v in variants if v not in recorded])
        return entries, _request(f"Question: {q}", tools=tools, temperature=t)
    q, tools, t = recorded[rng.randrange(len(recorded))]
    return entries, _request(f"Question: {q}", tools=tools, temperature=t, reversed_keys=rng.random() < 0.3)


class LearnersReplay:
    """A replaying LLM whose lookup is the learner's function; it keeps no ledger of its own."""

    def __init__(self, entries: list, lookup) -> None:
        self.entries, self.lookup, self.calls = entries, lookup, []

    def act(self, messages, tools, temperature: float = 0, tool_choice=None) -> AssistantTurn:
        request = request_of(messages, tools, tool_choice, temperature)
        entry = call(self.lookup, self.entries, request, case=tr("the live replay of a recorded run"), hint=H_CONTENT)
        if entry is None:
            raise CassetteMiss("not on the cassette")
        if not isinstance(entry, dict) or "request" not in entry:
            raise Fail(tr("the live replay of a recorded run"), tr("an entry of the cassette (a dict with 'request')"),
                       repr(entry)[:120], tr("return the entry itself, as it is in the list."))
        self.calls.append(entry)
        return AssistantTurn(entry.get("reply") or "", [FunctionCall(**c) for c in entry.get("tool_calls") or []])


@exercise("11.replay", "build", "Find a recorded reply",
          "Write `find_entry(entries, request)`: the first cassette entry whose request equals this request, or None; "
          "agentkit.replay's own lookup (ReplayLLM, cassette.canonical) is refused.",
          forbid=("agentkit.replay:ReplayLLM._answer", "agentkit.cassette:canonical"), objects=False)
def _replay(find_entry):
    if not callable(find_entry):
        raise Fail(tr("your answer"), tr("a function find_entry(entries, request) -> entry or None"),
                   repr(find_entry), tr("define it with def."))
    drawn = [unseen_cassette() for _ in range(4)]
    cases_ = [(CASSETTE, request, what, hint) for request, what, hint in REPLAY_CASES]
    cases_ += [(entries, request, tr_later("a cassette drawn for this check"), H_CONTENT) for entries, request in drawn]
    for cassette, request, what, hint in cases_:
        question_text = next(m["content"] for m in request["messages"] if m["role"] == "user")
        tools = "Search" if request["tools"] else None
        where = tr("{question}, tools {tools}, temperature {temperature}", question=repr(question_text), tools=tools,
                   temperature=request["temperature"])
        if cassette is not CASSETTE:
            where = tr("{where}, on a cassette of {n} entries", where=where, n=len(cassette))
        case = tr("{what}: {where}", what=tr(what), where=where)
        entry = call(find_entry, [json.loads(json.dumps(e)) for e in cassette], request, case=case, hint=hint)
        reply = replay_truth(cassette, request)
        got = entry.get("reply") if isinstance(entry, dict) else entry
        if got != reply:
            if entry is None:
                hint = tr("{hint} (None means a miss: if your function returned nothing, did it forget `return`?)",
                          hint=tr(hint))
            raise Fail(case, tr("the entry whose reply is {reply}", reply=repr(reply)) if reply else
                       tr("None (a miss)"),
                       f"{got!r}" if isinstance(entry, dict) or entry is None else repr(entry)[:120], hint)
    with tempfile.TemporaryDirectory() as folder:
        cassette = Path(folder) / "checkpoint.jsonl"
        live = NativeReActAgent(Recorder(get_llm("fake"), cassette), max_steps=4)
        live.run(TASKS[1].question, verbose=False)
        entries = [json.loads(line) for _, line in json_lines(cassette)]  # U+2028 in a reply is not a line end
    replay = LearnersReplay(entries, find_entry)
    again = NativeReActAgent(replay, max_steps=4)
    again.run(TASKS[1].question, verbose=False)
    if again.answer != live.answer or len(replay.calls) != len(entries):
        raise Fail(tr("the replay of a recorded run"),
                   tr("answer {answer} in {n} replayed calls", answer=repr(live.answer), n=len(entries)),
                   tr("answer {answer} in {n}", answer=repr(again.answer), n=len(replay.calls)), H_CONTENT)
    try:
        NativeReActAgent(LearnersReplay(entries, find_entry), max_steps=4).run(TASKS[2].question, verbose=False)
        missed = False
    except CassetteMiss:
        missed = True
    if not missed:
        raise Fail(tr("a run on a question the cassette never saw"), tr("a miss (None) at the first request"),
                   tr("a recorded reply"), H_MISS)
    return tr("Your lookup replayed a recorded native run ({calls} calls, answer {answer}) with no model at all, and "
              "missed at once on a question the cassette never saw. By content, not by order: the same agent on the "
              "same question asks the same requests, in any order, as often as it likes.", calls=len(entries),
              answer=repr(again.answer))


# --- 11.break: a call that JSON accepts and the schema refuses ---------------------------------

SHOWN = [json.loads(DISEASES[name].tool_calls[0].arguments) for name in ("missing field", "a list, not a string")]


def sends_once(arguments: str):
    """The course stand-in, except that its first native reply on the checkpoint question is Search(arguments)."""
    llm = ScriptedLLM(course_script())
    bad = AssistantTurn("I look him up.", [stand_in_call("Search", arguments)])

    def first_time(prompt: str) -> bool:
        return (NATIVE_MARKER in prompt and NATIVE_FALLBACK_MARKER not in prompt
                and f"Question: {CHECKPOINT_QUESTION}" in prompt and "error: " not in prompt)

    llm.add(first_time, bad, name="your call")
    return llm


@exercise("11.break", "break", "A call that JSON accepts",
          "Set `arguments` to the arguments text of a Search call that json.loads accepts and the schema refuses "
          "(not one section 3 shows).", objects=False)
def _break(arguments):
    if not isinstance(arguments, str):
        raise Fail(tr("your answer"), tr("a str: the arguments text the model sends"), type(arguments).__name__,
                   tr("write the arguments as a string, e.g. '{\"input\": ...}'."))
    try:
        decoded = json.loads(arguments)
    except ValueError as error:
        raise Fail("json.loads(arguments)", tr("JSON that decodes"), f"ValueError: {error}",
                   tr("text that is not JSON is section 3's 'arguments not JSON': make one that json.loads accepts, "
                      "and that the schema still refuses.")) from None
    schemas = tool_schemas(default_executor())
    problem = call_problem(FunctionCall("call_1", "Search", arguments), schemas)[2]
    if not problem:
        raise Fail(tr("the schema check (agentkit.native)"), tr("a problem"),
                   tr("{call} is a valid call", call=f"Search({arguments})"),
                   tr("the schema wants an object with one field, input, a string, and nothing else: break one of "
                      "those."))
    if decoded in SHOWN:
        raise Fail(tr("your call"), tr("a kind of bad call section 3 does not show"), f"Search({arguments}): {problem}",
                   tr("section 3 already shows a missing field and a list: try a number, an extra field, or JSON that "
                      "is not an object."))
    try:
        trusted = decoded["input"]
        tiny = tr("The tiny loop of section 2 would have run Search with {value} ({kind})", value=repr(trusted),
                  kind=type(trusted).__name__)
    except Exception as error:  # noqa: BLE001 - what the undefended loop would have raised
        tiny = tr("The tiny loop of section 2 would have crashed: {error}", error=f"{type(error).__name__}: {error}")
    agent = NativeReActAgent(sends_once(arguments), max_steps=5)
    answer = agent.run(CHECKPOINT_QUESTION, verbose=False)
    failures = sum(format_failures(agent.run_calls, "native"))
    return tr("json.loads accepts {arguments}, and the schema says: {problem} {tiny}. NativeReActAgent fed the problem "
              "back instead and the run went on: LLM calls {calls}, format failures {failures}, tool runs {runs} "
              "(ledgers), answer {answer}. JSON is the shape; the schema is the contract.", arguments=arguments,
              problem=problem, tiny=tiny, calls=len(agent.run_calls), failures=failures,
              runs=len(agent.run_tool_calls), answer=answer)


# --- concept questions ------------------------------------------------------------------------

question("11.q1", "With native tool calling, what does the API guarantee, and what must the loop still check?", {
    "a": ("That the arguments match the schema: the schema travels with the request, and the API refuses to hand "
          "back a call whose arguments do not fit it, so the loop can trust them.", False,
          "the schema tells the model what to send; section 3's stand-in sends arguments that are not JSON, and "
          "nothing in the API stops it."),
    "b": ("The shape: calls with an id, a name and an arguments text. Whether the name is a tool, the text is JSON "
          "and the fields are right, the loop must check.", True,
          "section 3: every bad call there arrived in a well-shaped reply."),
    "c": ("That the model calls a tool when tool_choice is 'required'.", False,
          "section 9: SmolLM2 wrote prose until the reply cap under 'required', because its template has no place "
          "for tools."),
    "d": ("Nothing: the loop still needs a regex to find the action in the reply text.", False,
          "the name and the arguments come as separate fields; section 2's loop has no regex at all."),
}, hint="sections 2 and 3: what the tiny loop trusted, and what broke it.")

question("11.q2", "A replayed run sends a request that differs from every recorded one by a single character. What "
         "does ReplayLLM do?", {
    "a": ("It answers with the closest recorded reply.", False,
          "a near match is not the same request: its reply may not fit, so the replay refuses and shows the diff."),
    "b": ("It raises CassetteMiss, naming the cassette and showing the closest recorded request and the difference.",
          True, "it answers by the content of the request; a changed request has no recorded answer, and a guess "
          "would make the replay lie."),
    "c": ("It sends the request to the real model and records the answer.", False,
          "ReplayLLM never touches the network; recording is Recorder's job, on a live run."),
    "d": ("It answers with the next recording, in the order they were made, so a replayed run gets back exactly the "
          "replies of the recorded run, call by call.", False,
          "a cassette is looked up by content, not by order: the same request gets the same answer however often, "
          "and in whatever order, it is asked."),
}, hint="section 7, the cell that changes 2024 to 2030.")
