"""Chapter 01's exercises: predict a registry's log, build the power guard, slip a payload past a blocklist, two questions."""
from __future__ import annotations

import ast
import math
import operator

from ..i18n import tr, tr_later
from ..tools import default_executor, is_error
from . import Fail, call, cases, exercise, question, reference, shown
from .predictions import Prediction, prediction

# --- 01.predict: what the registry's log holds ----------------------------------------------------


def _weather(city: str) -> str:
    raise ConnectionError("weather service unreachable")


REQUESTS = [  # what a model asks for, in order
    ("Search", "Ada Lovelace"),
    ("search", "the capital of Atlantis"),
    ("CALCULATE", "(2024 - 1955) * 365"),
    ("Calculate", "2 ** 10000"),
    ("Translate", "bonjour"),
    ("Weather", "Paris"),
    ("Calculate", "1 / 0"),
    ("Search", "   "),
]
LOG_KEYS = ("entries in tools.log", "ok", "error observations")


def run_requests():
    """The requests through a fresh default registry plus a Weather tool that raises; returns the registry."""
    tools = default_executor()
    tools.register("Weather", _weather, "current weather in a city")
    for name, argument in REQUESTS:
        tools.run(name, argument)
    return tools


def log_counts(tools) -> dict:
    ok = sum(c.ok for c in tools.log)
    return dict(zip(LOG_KEYS, (len(tools.log), ok, len(tools.log) - ok)))


LOG_HINTS = {
    "fewer entries": tr_later("every call is logged, the unknown tool and the crashing one too: section 6's table has "
                              "one line per request, whatever happened."),
    "more entries": tr_later("one request, one log entry: a failure is logged once, as its error observation."),
    "fewer ok": tr_later("ok is False only for an observation that starts with 'error:'. A Search miss is an answer "
                         "(section 5), and tool names match without regard to case (section 6)."),
    "more ok": tr_later("a crashing tool, an unknown name, a refused power and an empty query all come back as 'error:' "
                        "observations (sections 4 to 6): a miss is an answer, an empty query is not."),
    "sum": tr_later("every entry is either ok or an error observation: the two numbers add up to the entries."),
}


def _truth() -> dict:
    return log_counts(run_requests())


def _hint(key: str, guess: tuple, actual: tuple, prediction: dict) -> str:
    try:
        entries, ok, errors = (float(prediction[k]) for k in LOG_KEYS)
    except (TypeError, ValueError):
        entries, ok, errors = 0, 0, 0
    if key != LOG_KEYS[0] and ok + errors != entries:
        return LOG_HINTS["sum"]
    if key == LOG_KEYS[0]:
        return LOG_HINTS["fewer entries" if guess[0] < actual[0] else "more entries"]
    return LOG_HINTS["fewer ok" if (key == LOG_KEYS[1]) == (guess[0] < actual[0]) else "more ok"]


def _done(truth: dict) -> str:
    tools = run_requests()
    table = "; ".join(f"{c.tool}[{c.argument.strip() or ' '}] {'ok' if c.ok else 'error'}" for c in tools.log)
    return tr("Call by call: {table}. Nothing raised into the caller.", table=table)


prediction("01.predict", "What the registry's log holds",
           "Set `prediction` to the three counts for the eight requests, before running anything.",
           Prediction(truth=_truth, labels=("",), hint=_hint, done=_done, source="tools.log",
                      case=lambda key: tr("{key}, {n} requests", key=key, n=len(REQUESTS)),
                      pointer="go through the eight requests one by one, as the registry does (sections 4 to 6).",
                      why={LOG_KEYS[0]: "one request, one log entry, whatever happened",
                           LOG_KEYS[1]: "a Search hit, a Search miss (an answer) and the calculation are ok; "
                                        "names match without regard to case",
                           LOG_KEYS[2]: "the refused power, the unknown tool, the crashing tool, the division by "
                                        "zero and the empty query come back as 'error:' observations"}))


# --- 01.guard: bound a power before computing it --------------------------------------------------


class ComputedPower(Exception):
    """Raised when a guard computes the very power it was asked to judge."""


def _refuse_power(self, *args):
    raise ComputedPower(tr("your guard computed a power of {number}: a power tower would never come back",
                           number=repr(self)))


class _Int(int):
    """An int that refuses to be raised to a power, or to raise another number: the check never computes."""
    __pow__ = __rpow__ = _refuse_power


class _Float(float):
    __pow__ = __rpow__ = _refuse_power


def _tracked(x):
    return _Float(x) if isinstance(x, float) else _Int(x)


GUARD_CASES = [  # (base, exponent, what the case is): the check decides each with power_truth, after your answer
    (2, 10, tr_later("a small power")),
    (10, 99, tr_later("a 100-digit number, inside the limit")),
    (10, 101, tr_later("just over the limit")),
    (10, 100, tr_later("exactly 1e100: 'at most' includes it")),
    (2, 332, tr_later("2 ** 332, just below 1e100")),
    (2, 333, tr_later("2 ** 333, just above 1e100")),
    (7, 300, tr_later("small numbers, a large result")),
    (9, 9**9, tr_later("9 ** (9 ** 9), section 3's power tower")),
    (-10, 101, tr_later("a negative base: the size is the same as for 10")),
    (-3, 3, tr_later("a small power of a negative base")),
    (-100, 50, tr_later("exactly 1e100 again, from a negative base")),
    (0, 500, tr_later("zero to a large power is zero")),
    (1.5, 10000, tr_later("a float base far over the limit")),
    (0.5, 1000, tr_later("a fraction to a large power shrinks")),
    (0.5, -1000, tr_later("a fraction to a large negative power grows")),
]


@reference
def power_truth(base, exponent) -> bool:
    """|base ** exponent| <= 1e100, decided from the number of digits, exactly where that is close to 100."""
    if base == 0:
        return exponent >= 0
    size = exponent * math.log10(abs(base))
    if abs(size - 100) > 1e-6 or not all(float(x).is_integer() for x in (base, exponent)):
        return size <= 100
    return abs(int(base)) ** int(exponent) <= 10 ** 100  # a few digits from the limit: whole numbers decide exactly


COMPUTE_HINT = (tr_later("decide before computing: the result has about exponent * log10(|base|) digits, so compare "
                         "that with 100 and never compute the power itself (section 3)."))
H_AT_MOST = (tr_later("the task says at most 1e100: a result of exactly 1e100 is allowed, so compare with <=, not <; "
                      "exponent * log10(|base|) is exactly 100.0 here."))
H_NEAR = tr_later("close to the limit only the comparison decides: exponent * log10(|base|) against 100, with <=.")
GUARD_HINTS = {
    0: tr_later("a small power is fine: refuse only what would pass 1e100."),
    1: tr_later("10 ** 99 stays below 1e100: allow up to 100 digits."),
    2: tr_later("10 ** 101 is over 1e100: compare exponent * log10(|base|) with 100."),
    3: H_AT_MOST, 4: H_NEAR, 5: H_NEAR,
    6: tr_later("7 ** 300 has about 300 * log10(7), over 250 digits."),
    7: tr_later("9 ** (9 ** 9) has hundreds of millions of digits (section 3 counts them)."),
    8: tr_later("log10 of a negative number is undefined: the size of (-10) ** 101 is that of 10 ** 101, so use "
                "abs(base)."),
    9: tr_later("(-3) ** 3 is -27: use abs(base), and allow a small result whatever its sign."),
    10: tr_later("(-100) ** 50 is exactly 1e100: use abs(base), and <=, since the task says at most 1e100."),
    11: tr_later("log10(0) is undefined, and 0 to any positive power is 0: allow base 0 before taking the logarithm."),
    12: tr_later("1.5 ** 10000 is about 1e1760: floats overflow too. Compare exponent * log10(|base|) with 100."),
    13: tr_later("0.5 ** 1000 is tiny: keep the signs, exponent * log10(|base|) is negative here, so allow it."),
    14: tr_later("0.5 ** -1000 is 2 ** 1000, about 1e301: keep the signs, exponent * log10(0.5) is +301 here."),
}
H_UNSEEN = (tr_later("a power drawn for this check: its result has about exponent * log10(|base|) digits; allow it when "
                     "that is at most 100, whatever the base's sign, and with a fraction's negative exponent too."))


def unseen_powers(count: int = 6) -> list:
    """Powers drawn for this check, whole numbers a few digits from the limit, half of them allowed, in an order
    drawn too (counting calls tells nothing)."""
    rng, drawn, allowed = cases(), [], 0
    while len(drawn) < count:
        base = rng.choice([-1, 1]) * rng.randint(2, 999)
        exponent = max(1, round(rng.uniform(60, 140) / math.log10(abs(base))))
        fits = exponent * math.log10(abs(base)) <= 100
        if abs(exponent * math.log10(abs(base)) - 100) > 0.01 and (allowed if fits else len(drawn) - allowed) < count // 2:
            drawn.append((base, exponent, tr_later("a power drawn for this check")))
            allowed += fits
    rng.shuffle(drawn)
    return drawn
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def power_text(base, exponent) -> str:
    return f"({base}) ** {exponent}" if base < 0 else f"{base} ** {exponent}"


def _ask_guard(guard, base, exponent, case, hint):
    try:
        return call(guard, _tracked(base), _tracked(exponent), case=case, hint=hint)
    except Fail as f:
        if f.got.startswith("ComputedPower"):
            raise Fail(f.case, tr("a decision made without computing the power"),
                       tr("your guard computed {power} to judge it", power=power_text(base, exponent)),
                       COMPUTE_HINT) from None
        if f.got.startswith("OverflowError"):
            raise Fail(f.case, tr("a decision made without computing the power"), f.got, COMPUTE_HINT) from None
        raise


def guarded_calculator(guard):
    """Section 3's tiny calculator with ** added, asking `guard(base, exponent)` before every power."""
    def evaluate(node):
        if isinstance(node, ast.Expression):
            return evaluate(node.body)
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -evaluate(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            base, exponent = evaluate(node.left), evaluate(node.right)
            if not _ask_guard(guard, base, exponent, f"the calculator, {power_text(base, exponent)}", COMPUTE_HINT):
                raise ValueError(f"{power_text(base, exponent)} is too large (your guard)")
            return base ** exponent
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](evaluate(node.left), evaluate(node.right))
        raise ValueError(f"{type(node).__name__} is not allowed")

    def calculate(expression: str) -> str:
        try:
            return str(evaluate(ast.parse(expression, mode="eval")))
        except Exception as e:  # a tool answers with text, it never raises into the agent loop
            return f"error: {e}"
    return calculate


LIVE = ["9**9**9", "2**10", "(2024 - 1955) * 365", "(-10)**101", "0.5**-1000"]


@exercise("01.guard", "build", "Bound a power before computing it",
          "Write `power_allowed(base, exponent)`: True when |base ** exponent| stays at most 1e100, without computing "
          "it, and without calling agentkit's calculator (tools._power or tools.calculator: the check refuses that).",
          forbid=("agentkit.tools:_power", "agentkit.tools:calculator"), objects=False)
def _guard(power_allowed):
    if not callable(power_allowed):
        raise Fail(tr("your answer"), tr("a function power_allowed(base, exponent) -> bool"), repr(power_allowed),
                   tr("define it with def."))
    for number, (base, exponent, what) in enumerate(GUARD_CASES + unseen_powers()):
        case = tr("{what}: {power}", what=tr(what), power=power_text(base, exponent))
        said = _ask_guard(power_allowed, base, exponent, case, GUARD_HINTS.get(number, H_UNSEEN))
        allowed = power_truth(base, exponent)
        if said is None:
            raise Fail(case, tr("True or False"), "None", tr("your function returned nothing: did it forget `return`?"))
        if bool(said) != allowed:
            raise Fail(case, tr("allow (True)") if allowed else tr("refuse (False)"),
                       shown(said), GUARD_HINTS.get(number, H_UNSEEN))
    tools = default_executor()
    tools.register("Calculate", guarded_calculator(power_allowed), "arithmetic with + - * / **")
    for text in LIVE:
        tools.run("Calculate", text)
    crashed = [c for c in tools.log if "Fail" in c.output]  # the guard raised inside the tool: the registry caught it
    if crashed:
        raise Fail(tr("the calculator with your guard, {expression}", expression=crashed[0].argument), tr("an answer or a refusal"),
                   crashed[0].output, COMPUTE_HINT)
    if not is_error(tools.log[0].output) or tools.log[1].output != "1024":
        raise Fail(tr("the calculator with your guard"), tr("9**9**9 refused, 2**10 = 1024"),
                   f"{tools.log[0].output!r}, {tools.log[1].output!r}", COMPUTE_HINT)
    answers = "; ".join(f"{c.argument} -> {c.output}" for c in tools.log)
    return tr("Your guard passed {cases} cases without computing a single power, and in a calculator behind a "
              "registry: {answers}. agentkit's calculator adds the same estimate, and a bound on every intermediate "
              "result.", cases=len(GUARD_CASES) + 6, answers=answers)


# --- 01.break: a payload that a blocklist lets through --------------------------------------------

BLOCKLIST = ("import", "__", "open", "exec", "eval", "system", "os.")


PRINTED = [  # section 4's table of hostile inputs that call something: the notebook shows them already
    "__import__('os').system('id')", "().__class__.__bases__[0].__subclasses__()", "open('secrets.txt').read()",
    "(lambda: 1)()", "[i for i in range(10**9)]",
    "__import__('pathlib').Path(__import__('os').environ['COURSE_SANDBOX_DIR'], 'marker.txt')"
    ".write_text('code from the model ran here') * 0 + (2024 - 1955) * 365",
]


def _tree(text: str):
    try:
        return ast.dump(ast.parse(text, mode="eval"))
    except (SyntaxError, ValueError, RecursionError):
        return None


def blocklist_allows(text: str) -> bool:
    """The string filter section 2 warns about: refuse text that contains a dangerous-looking word."""
    return not any(word in text for word in BLOCKLIST)


# What the blocklist's words stand for: a call of one of these, where eval would run it, reaches a module, a
# file, a dunder attribute, code, or the program's own variables without writing a blocked word.
REACHING = {
    "getattr": tr_later("an attribute by a name built at run time (a dunder, spelled in pieces)"),
    "setattr": tr_later("an attribute set by a name built at run time"), "delattr": tr_later("an attribute deleted by name"),
    "vars": tr_later("every variable of the program (an API key read into one included)"),
    "globals": tr_later("every global variable of the program"), "locals": tr_later("the caller's variables"),
    "compile": tr_later("code compiled from text"), "breakpoint": tr_later("a debugger with the whole process in reach"),
    "__import__": tr_later("a module"), "open": tr_later("a file"), "exec": tr_later("code from text"), "eval": tr_later("code from text"),
    "input": tr_later("the terminal"), "help": tr_later("the help system's pager"),
}


DUNDER = tr_later("a dunder attribute")


def _reached(tree) -> tuple:
    """([(name, what it reaches)], [names]) of the calls eval would run: the reaching ones, and all. A lambda that
    is never called, or a generator nothing consumes, runs nothing. Names are read as Python reads them (NFKC:
    a full-width `ｏｐｅｎ` is open)."""
    reaching, ran = [], []

    def walk(node, runs: bool, consumed: bool = False) -> None:
        if isinstance(node, ast.Call):
            callee = node.func
            name = callee.id if isinstance(callee, ast.Name) else callee.attr if isinstance(callee, ast.Attribute) else ""
            if runs:
                ran.append(name or type(callee).__name__)
                if name in REACHING or name.startswith("__"):
                    reaching.append((name, REACHING.get(name, DUNDER)))
            walk(callee.body if isinstance(callee, ast.Lambda) else callee, runs)  # (lambda: ...)(): the body runs
            for argument in [*node.args, *(k.value for k in node.keywords)]:
                walk(argument, runs, consumed=True)  # a generator handed to a call is consumed by it
            return
        if isinstance(node, ast.Lambda) or (isinstance(node, ast.GeneratorExp) and not consumed):
            first = node.generators[0].iter if isinstance(node, ast.GeneratorExp) else None
            for child in ast.walk(node):
                if child is first:
                    walk(child, runs)  # a generator's first iterable is evaluated where it is written
            for child in ast.iter_child_nodes(node):
                if child is not first:
                    walk(child, False)
            return
        if isinstance(node, ast.Attribute) and runs and node.attr.startswith("__"):
            reaching.append((node.attr, DUNDER))
        for child in ast.iter_child_nodes(node):
            walk(child, runs)

    walk(tree, True)
    return reaching, ran


@exercise("01.break", "break", "Slip past a blocklist",
          "Set `my_payload` to an expression with no blocked word in it that eval would run and that still reaches "
          "what the words stand for: a module, a file, a dunder, code from text, or the program's variables (not "
          "one of section 4's table).", objects=False)
def _break(payload):
    if not isinstance(payload, str):
        raise Fail(tr("your answer"), tr("a str: the text a model would write"), type(payload).__name__,
                   tr("write the payload as a string."))
    caught = [word for word in BLOCKLIST if word in payload]
    if caught:
        raise Fail(tr("the blocklist"), tr("text the filter lets through"), tr("it contains {word}", word=repr(caught[0])),
                   tr("the filter only knows these words; Python has many other ways to reach the same "
                      "things (section 2): find one without them."))
    try:
        tree = ast.parse(payload, mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        raise Fail("ast.parse(payload, mode='eval')", tr("a Python expression eval would accept"), repr(payload[:80]),
                   tr("eval runs one expression, not statements: no 'import', no assignment, one line of "
                      "Python.")) from None
    nodes = {type(node).__name__ for node in ast.walk(tree)
             if not isinstance(node, (ast.Expression, ast.expr_context))}  # Load/Store: not part of the story
    reached, ran = _reached(tree)
    if not reached:
        names = sorted(set(ran))
        calls = (tr("eval would call {names}, which reach nothing the blocklist stands for", names=", ".join(names))
                 if len(names) > 1 else
                 tr("eval would call {names}, which reaches nothing the blocklist stands for", names=", ".join(names))
                 if ran else
                 tr("eval would call nothing (a lambda never called, a generator never read, or no call at all)"))
        raise Fail(tr("what eval would reach with it"), tr("a call that reaches a module, a file, a dunder attribute, "
                      "code from text or the program's variables"), f"{calls} ({', '.join(sorted(nodes))})",
                   tr("a harmless call (print, len) slips nothing past the filter, and a lambda that is never called "
                      "runs nothing: make eval reach what the blocked words stand for, by a name the list does not "
                      "hold (section 2: Python has many spellings for the same thing)."))
    if tree is not None and ast.dump(tree) in {_tree(text) for text in PRINTED}:
        raise Fail(tr("your payload"), tr("a payload of your own"), repr(payload[:80]),
                   tr("section 4 prints that one already, in its table of hostile inputs: find another way to make "
                      "eval call something, one the table does not show."))
    tools = default_executor()
    answer = tools.run("Calculate", payload)
    entry = tools.log[-1]
    name, what = reached[0]
    return tr("The blocklist let it through, and eval would have called {name}, which reaches {what}. The safe "
              "calculator never ran it: {answer}, logged with ok={ok}. Filtering text cannot make eval safe; parsing "
              "and interpreting only what you allow does.", name=name, what=tr(what), answer=repr(answer), ok=entry.ok)


# --- concept questions ------------------------------------------------------------------------------

question("01.q1", "Section 3's tiny_eval checks type(node.value) as well as the node types. Why is checking node "
         "types not enough?", {
    "a": ("True + True and 'a' * 3 use only allowed nodes (Constant, BinOp); only the value's type says they are not "
          "arithmetic.", True,
          "and type(), not isinstance(): True is an int in Python."),
    "b": ("ast.parse cannot tell numbers from strings: both become Constant nodes, so without the type check a "
          "string would reach the arithmetic and raise a TypeError there.", False,
          "it can: a Constant node carries its value, 'a' or 3; the question is whether we look at it."),
    "c": ("Checking types makes the calculator faster.", False,
          "it adds a check; what it buys is refusing strings and booleans, not speed."),
    "d": ("It bounds the size of powers.", False,
          "sizes are a separate bound, decided from exponent * log10(|base|) before computing (section 3)."),
}, hint="section 3, the sentence before tiny_eval.")

question("01.q2", "A tool raises ConnectionError. Why does the registry return 'error: tool Weather failed: ...' "
         "instead of letting it raise?", {
    "a": ("So that the log stays short.", False,
          "the failed call is logged either way; the registry logs every call, good or bad."),
    "b": ("The model cannot be told about failures: an error in a prompt confuses it, so the registry rewrites the "
          "failure as a neutral observation the model will not notice.", False,
          "it can, and should: the error observation is exactly that message, in the next prompt."),
    "c": ("Python cannot catch ConnectionError.", False,
          "it can: the registry catches every Exception and writes what it was into the observation."),
    "d": ("An exception would end the run; an error observation is text the model can act on: retry, try another "
          "tool, or say what it cannot find.", True,
          "the loop pastes it back as an Observation, and the log marks the call ok=False."),
}, hint="section 6, the sentence before TinyRegistry.")
