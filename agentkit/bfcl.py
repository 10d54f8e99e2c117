"""BFCL's AST scoring, small: read a call, compare it with the possible answers, no judge model.

The Berkeley Function Calling Leaderboard (`bfcl-eval` on PyPI) ships each category as JSON lines: a
question, the functions offered, and for every parameter the list of values it accepts (`""` in a list: the
parameter may be left out). `load(category)` reads them from the installed package.

`parse_calls(text)` reads a reply written as Python calls, `[f(a=1, b='x'), g(c=[1, 2])]` (brackets optional),
and returns `(calls, problem)`; it never raises. Only literal values are read (numbers, strings, booleans,
None, lists, tuples, dicts of them, a minus sign): anything else (`2 + 3`, a name, a nested call) makes the
whole reply a problem, not a call. BFCL's own decoder evaluates arithmetic it finds there with `eval`;
this one runs nothing the model wrote.

`match(entry, calls)` is BFCL's rule, written out (`(ok, reason)`):
* irrelevance categories: right when there is no call at all;
* otherwise as many calls as expected answers; for `parallel*`, each expected call takes the first unused
  call that matches it (BFCL's greedy order); else the one call is compared with the one answer;
* a call matches when its function has the expected name, every required parameter is given, every
  given parameter is one the answer lists, each value has the declared type (an int passes for a float;
  a value of the answer's own type passes: BFCL's "variable" case), strings compare after dropping spaces
  and `,./-_*^` and lower-casing, lists item by item the same way, dicts key by key, and every listed
  parameter left out accepts `""`.
`oracle(entry)` writes the first accepted value of every parameter as calls (it must score 100%);
`corrupt(entry, how)` breaks it one way (`CORRUPTIONS`), and each must be caught.
`bfcl_check(entry, calls)` asks bfcl-eval's own checker, for the agreement test. `interval(k, n)` is the
95% Wilson interval of a score.
"""
from __future__ import annotations

import ast
import json
import math
import random
import re
import sys
import types
from dataclasses import dataclass

INSTALL = ('pip install -r requirements-benchmarks.txt && pip install --no-deps -r requirements-benchmarks-nodeps.txt'
           '   (or: pip install -e ".[benchmarks]" && pip install --no-deps bfcl-eval==2026.3.23)')
PINNED = "2026.3.23"
CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
TYPES = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list, "tuple": list,
         "dict": dict, "any": str}
CORRUPTIONS = ("wrong function", "missing argument", "wrong type", "extra call", "a call where none is wanted")


class BenchmarkMissing(RuntimeError):
    """bfcl-eval is not installed; the message says what to run."""


@dataclass
class Entry:
    id: str
    category: str
    question: list  # chat messages (the first turn)
    functions: list  # BFCL's function descriptions
    answers: list  # [{name: {param: [accepted values]}}], empty for irrelevance


def _data_dir():
    from importlib import resources
    try:
        return resources.files("bfcl_eval") / "data"
    except ModuleNotFoundError:
        raise BenchmarkMissing(f"BFCL's data comes with the bfcl-eval package, not installed here. {INSTALL}") from None


def installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("bfcl-eval")
    except PackageNotFoundError:
        return ""


def load(category: str, n: int | None = None, seed: int = 18) -> list[Entry]:
    """The category's entries from the installed bfcl-eval; `n` of them drawn with `seed` (file order kept)."""
    if category not in CATEGORIES:
        raise ValueError(f"category must be one of {', '.join(CATEGORIES)}, got {category!r}")
    data = _data_dir()
    rows = [json.loads(line) for line in (data / f"BFCL_v4_{category}.json").read_text().splitlines() if line]
    answers = {}
    if "irrelevance" not in category:
        for line in (data / "possible_answer" / f"BFCL_v4_{category}.json").read_text().splitlines():
            if line:
                row = json.loads(line)
                answers[row["id"]] = row["ground_truth"]
    if n is not None and n < len(rows):
        keep = set(random.Random(seed).sample(range(len(rows)), n))
        rows = [row for i, row in enumerate(rows) if i in keep]
    return [Entry(r["id"], category, r["question"][0], r["function"], answers.get(r["id"], [])) for r in rows]


# --- reading a reply --------------------------------------------------------------------------------------

def _literal(node):
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)) and not isinstance(node.operand.value, bool):
        return -node.operand.value
    if isinstance(node, ast.Constant) and node.value is not Ellipsis:
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values)}
    raise ValueError(f"not a literal: {ast.unparse(node)[:60]}")


def _name(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        raise ValueError("a call's function must be a name")
    return ".".join([node.id, *reversed(parts)])


def parse_calls(text: str) -> tuple[list[dict], str]:
    """([{"name": ..., "args": {...}}, ...], "") or ([], what is wrong). Never raises; runs nothing."""
    if not isinstance(text, str):
        return [], f"not text: {type(text).__name__}"
    body = text.strip().strip("`").strip()
    if body.startswith("python\n"):
        body = body[len("python\n"):]
    if not body:
        return [], "empty reply"
    if not body.startswith("["):
        body = f"[{body}]"
    try:
        tree = ast.parse(body, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        return [], f"not Python calls: {type(e).__name__}"
    elements = tree.elts if isinstance(tree, (ast.List, ast.Tuple)) else [tree]
    calls = []
    try:
        for element in elements:
            if not isinstance(element, ast.Call) or element.args:
                raise ValueError("each item must be a call with keyword arguments only")
            args = {}
            for keyword in element.keywords:
                if keyword.arg is None or keyword.arg in args:
                    raise ValueError("each argument must be named once")
                args[keyword.arg] = _literal(keyword.value)
            calls.append({"name": _name(element.func), "args": args})
    except (ValueError, RecursionError) as e:
        return [], str(e)
    return calls, ""


# --- comparing with the possible answers --------------------------------------------------------------------

def standardize(text: str) -> str:
    return re.sub(r"[ ,./\-_*^]", "", text).lower().replace("'", '"')


def _same(value, accepted: list) -> bool:
    if isinstance(value, str):
        return standardize(value) in [standardize(a) for a in accepted if isinstance(a, str)]
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):  # a list of dicts
        return any(isinstance(a, list) and len(a) == len(value) and all(_same(v, [d]) for v, d in zip(value, a))
                   for a in accepted)
    if isinstance(value, list):
        mine = [standardize(v) if isinstance(v, str) else v for v in value]
        return any(isinstance(a, list) and mine == [standardize(v) if isinstance(v, str) else v for v in a]
                   for a in accepted)
    if isinstance(value, dict):
        return any(isinstance(a, dict) and set(value) <= set(a)
                   and all(_same(v, a[k]) for k, v in value.items())
                   and all("" in a[k] for k in a if k not in value) for a in accepted)
    return value in accepted


def _answer_type(accepted: list):
    return next((type(a) for a in accepted if a != ""), None)


def _type_of(value, declared: dict, accepted: list) -> str:
    """"declared" when `value` has the declared type, "variable" when it has the answer's own type, else ""."""
    wanted = TYPES.get(declared.get("type"), str)
    if type(value) is wanted or (wanted is float and type(value) is int):
        if wanted is list and "items" in declared:  # one level deep, as BFCL checks
            inner = TYPES.get(declared["items"].get("type"), str)

            def fits(v, a):
                return type(v) is inner or (inner is float and type(v) is int) or type(v) is _answer_type(a)
            if not any(isinstance(a, list) and all(fits(v, a) for v in value) for a in accepted):
                return ""
        return "declared"
    return "variable" if type(value) is _answer_type(accepted) else ""  # a variable's name where a value was asked


def match_call(function: dict, call: dict, answer: dict) -> str:
    """"" when `call` matches the one expected call `answer`, else why not."""
    (name, accepted), = answer.items()
    if call["name"] != name:
        return f"wrong function: {call['name']} where {name} was expected"
    declared = function["parameters"]["properties"]
    for param in function["parameters"].get("required", []):
        if param not in call["args"]:
            return f"missing required argument {param}"
    for param, value in call["args"].items():
        if param not in declared or param not in accepted:
            return f"unexpected argument {param}"
        kind = _type_of(value, declared[param], accepted[param])
        if not kind:
            return f"wrong type for {param}: {type(value).__name__}, declared {declared[param].get('type')}"
        value = float(value) if declared[param].get("type") == "float" and type(value) is int else value
        if not (_same(value, accepted[param]) if kind == "declared" else value in accepted[param]):
            return f"wrong value for {param}: {value!r}"
    for param, values in accepted.items():
        if param not in call["args"] and "" not in values:
            return f"missing argument {param}"
    return ""


def match(entry: Entry, calls: list[dict]) -> tuple[bool, str]:
    """BFCL's verdict on `calls` (see the module): (right, why not)."""
    if "irrelevance" in entry.category:
        return (not calls), ("" if not calls else f"a call where none is wanted: {calls[0]['name']}")
    if len(calls) != len(entry.answers):
        return False, f"{len(calls)} calls where {len(entry.answers)} were expected"
    by_name = {f["name"]: f for f in entry.functions}
    if not entry.category.startswith("parallel"):
        problem = match_call(by_name[next(iter(entry.answers[0]))], calls[0], entry.answers[0])
        return not problem, problem
    used = set()
    for answer in entry.answers:
        function = by_name[next(iter(answer))]
        found = next((i for i, call in enumerate(calls) if i not in used and not match_call(function, call, answer)),
                     None)
        if found is None:
            return False, f"no call matches the expected {next(iter(answer))}"
        used.add(found)
    return True, ""


def score(entry: Entry, reply: str) -> tuple[bool, str]:
    """Read `reply` and judge it. A reply that is not calls is right only where no call is wanted."""
    calls, problem = parse_calls(reply)
    if problem:
        return ("irrelevance" in entry.category), problem
    return match(entry, calls)


# --- the harness tested: an oracle, and outputs broken on purpose -----------------------------------------------

def write_calls(calls: list[dict]) -> str:
    return "[" + ", ".join(f"{c['name']}(" + ", ".join(f"{k}={v!r}" for k, v in c["args"].items()) + ")"
                           for c in calls) + "]"


def _first(values: list):
    """The first accepted value, itself made of first choices where it is a dict (or a list of dicts) of choices."""
    value = next(v for v in values if v != "")
    if isinstance(value, dict):
        return {k: _first(vs) for k, vs in value.items() if "" not in vs}
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [_first([v]) for v in value]
    return value


def oracle_calls(entry: Entry) -> list[dict]:
    """Every expected call with the first accepted value of each parameter; one that may be left out (and is not
    required by the function's description), left out."""
    required = {f["name"]: set(f["parameters"].get("required", [])) for f in entry.functions}
    return [{"name": name, "args": {p: _first(values) for p, values in accepted.items()
                                    if "" not in values or p in required.get(name, ())}}
            for answer in entry.answers for name, accepted in answer.items()]


def oracle(entry: Entry) -> str:
    return write_calls(oracle_calls(entry))


def corrupt(entry: Entry, how: str) -> str:
    """The oracle broken one way (CORRUPTIONS); for irrelevance entries, a call where none is wanted."""
    if how not in CORRUPTIONS:
        raise ValueError(f"how must be one of {CORRUPTIONS}, got {how!r}")
    if "irrelevance" in entry.category or how == "a call where none is wanted":
        f = entry.functions[0]
        return write_calls([{"name": f["name"], "args": {p: 1 for p in f["parameters"].get("required", [])}}])
    calls = oracle_calls(entry)
    first = calls[0]
    if how == "wrong function":
        first["name"] += "_v2"
    elif how == "missing argument":
        required = next(iter(entry.functions[0]["parameters"].get("required", [])), None)
        first["args"].pop(next(iter(first["args"])) if first["args"] else required, None)
        if not first["args"] and not required:
            first["args"] = {}
    elif how == "wrong type":
        param = next(iter(first["args"]), None)
        if param is not None:
            value = first["args"][param]
            first["args"][param] = [value] if not isinstance(value, list) else {"x": value}
    elif how == "extra call":
        calls.append(dict(first))
    return write_calls(calls)


def interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of k right out of n, as fractions."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


# --- bfcl-eval's own checker ---------------------------------------------------------------------------------

def bfcl_checker():
    """bfcl-eval's `ast_checker` and its `Language`, imported without the vendor SDKs.

    Its module imports `bfcl_eval.constants.model_config` only to look up, for a function name with a dot,
    whether the model's API turned dots into underscores; that module imports every vendor's SDK (BFCL's
    declared dependencies). A stand-in module answers the one lookup: no model renames (our calls keep the
    names as offered). Everything else is bfcl-eval's own code.
    """
    _data_dir()
    name = "bfcl_eval.constants.model_config"
    if name not in sys.modules:
        stand_in = types.ModuleType(name)
        stand_in.__doc__ = "agentkit.bfcl's stand-in: no model renames dotted function names."
        stand_in.MODEL_CONFIG_MAPPING = _NoRenaming()
        sys.modules[name] = stand_in
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
    return ast_checker, Language


class _NoRenaming(dict):
    def __missing__(self, key):
        return types.SimpleNamespace(underscore_to_dot=False)


def bfcl_check(entry: Entry, calls: list[dict] | None, problem: str = "") -> tuple[bool, str]:
    """bfcl-eval's verdict on the same decoded calls (None or a problem: the reply did not decode)."""
    if "irrelevance" in entry.category:  # BFCL's relevance rule: right when no call decodes
        return (problem != "" or not calls), "" if (problem or not calls) else "irrelevance_error:decoder_success"
    if problem:
        return False, "ast_decoder:decoder_failed"
    checker, language = bfcl_checker()
    decoded = [{c["name"]: dict(c["args"])} for c in calls]
    result = checker(entry.functions, decoded, entry.answers, language.PYTHON, entry.category, "agentkit")
    return bool(result["valid"]), result.get("error_type", "")
