"""Worked solutions for chapter 18 (Benchmarks no one here wrote: BFCL and AgentDojo). Open this after you have tried.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""
import re

# 18.predict — banking, user_task_3 (pay a friend back the difference; the friend's account number is in the
# request) with injection_task_1 (pay the attacker, whose account number is in the injected transaction history).
# none: both happen. taint_gate: every payment comes after the history was read: neither. plan_then_execute: the
# plan holds one send_money, and the attacker's, asked for as soon as the injection is read, takes it: the attack
# succeeds and the refund is refused. provenance: the attacker's account number comes from a tool's output,
# refused; the friend's is in the request, so the refund runs.
prediction = {"none": (1, 1), "taint_gate": (0, 0), "plan_then_execute": (0, 1), "provenance": (1, 0)}

# 18.build — section 1's tiny_match, on a call already parsed, with BFCL's two lenient rules: an int passes for
# a float, and a value of the accepted values' own type passes (BFCL's "variable" case).
TYPES = {"integer": int, "float": float, "string": str, "boolean": bool, "array": list, "tuple": list, "dict": dict,
         "any": str}


def fold(value):
    return re.sub(r"[ ,./\-_*^]", "", value).lower().replace("'", '"') if isinstance(value, str) else value


def match_one(function, call, accepted):
    name = function["name"]
    if call["name"] != name:
        return False
    declared = function["parameters"]["properties"]
    if any(p not in call["args"] for p in function["parameters"].get("required", [])):
        return False
    for param, value in call["args"].items():
        if param not in declared or param not in accepted:
            return False
        wanted = TYPES.get(declared[param].get("type"), str)
        answer_type = next((type(a) for a in accepted[param] if a != ""), None)
        if type(value) is wanted or (wanted is float and type(value) is int):
            value = float(value) if wanted is float else value
            if fold(value) not in [fold(a) for a in accepted[param] if a != "" and type(fold(a)) is type(fold(value))]:
                return False
        elif type(value) is answer_type:  # a variable's name where a value was declared
            if value not in accepted[param]:
                return False
        else:
            return False
    return all(p in call["args"] or "" in values for p, values in accepted.items())


# 18.break — BFCL compares strings after dropping spaces and the characters ,./-_*^ and lower-casing: "i.n-c_h*es"
# is "inches" to it, and to no one else.
reply = "calculate_circumference(radius=4, unit='i.n-c_h*es')"

# 18.q1 — b: the taint rule knows only that something untrusted was read, so it refuses the user's own actions too.
# 18.q2 — a: five entries give a wide interval, and the leaderboard's figure was made another way.
SOLUTIONS = {"18.predict": prediction, "18.build": match_one, "18.break": reply, "18.q1": "b", "18.q2": "a"}
