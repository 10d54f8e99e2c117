"""Worked solutions for chapter 11 (Real models and tool calling). Open this after you have tried.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""
import json

# 11.predict — a bad call is fed back, not run: it costs one model call and no tool run.
# arguments not JSON, recovers, max_steps=3: the bad call (1 format failure), then Search and
# Calculate; the third call is the last the budget allows, so the Finish never comes: (3, 1, 2).
# missing field, never learns: every one of the 4 replies is a bad call; none runs a tool, and
# max_steps=4 ends the run: (4, 4, 0).
# three calls at once, never learns: each call is well formed (no format failure). The first
# call of a reply runs, the other two are answered "not run". The second reply asks for the same
# Search again, and the repeat fuse refuses it before its tool runs: (2, 0, 1).
# The same with repeat_fuse=False: the Search runs at every step until max_steps: (4, 0, 4).
prediction = {
    "arguments not JSON, recovers, max_steps=3": (3, 1, 2),
    "missing field, never learns, max_steps=4": (4, 4, 0),
    "three calls at once, never learns, max_steps=4": (2, 0, 1),
    "three calls at once, never learns, max_steps=4, repeat_fuse=False": (4, 0, 4),
}


# 11.schema — check in the order the model can go wrong: the name, then the text (is it JSON?),
# then what the JSON is (an object?), then the fields, read from the schema itself: every
# required one present, none the schema lacks (additionalProperties: false), each of its type.
def validate_call(name, arguments, schemas):
    functions = {s["function"]["name"]: s["function"] for s in schemas}
    if name not in functions:
        return f"unknown tool {name!r}; known: {', '.join(functions)}"
    try:
        decoded = json.loads(arguments)
    except ValueError as error:
        return f"the arguments of {name} are not JSON ({error})"
    if not isinstance(decoded, dict):
        return f"the arguments must be a JSON object, got {type(decoded).__name__}"
    parameters = functions[name]["parameters"]
    properties = parameters.get("properties", {})
    for field in parameters.get("required", []):
        if field not in decoded:
            return f"the required field {field!r} is missing"
    for field, value in decoded.items():
        if field not in properties:
            return f"the field {field!r} is not in the schema"
        if properties[field].get("type") == "string" and not isinstance(value, str):
            return f"the field {field!r} must be a string, got {type(value).__name__}"
    return None


# 11.replay — a cassette answers by the content of the request: the whole request (messages,
# tools, tool_choice, temperature) must be equal, whatever its position on the cassette or the
# order of keys in its dicts (== on dicts ignores key order). The first recording wins; a
# request nobody recorded has no answer.
def find_entry(entries, request):
    for entry in entries:
        if entry["request"] == request:
            return entry
    return None


# 11.break — JSON is only the shape. An object with a field the schema lacks decodes fine, and
# the schema (additionalProperties: false) refuses it. The tiny loop of section 2 would not even
# notice: it reads "input" and runs Search. NativeReActAgent feeds the problem back, and the
# stand-in sends a good call next. (A number where a string belongs, or JSON that is not an
# object, works too.)
arguments = '{"input": "Steve Jobs", "max_results": 3}'


SOLUTIONS = {"11.predict": prediction, "11.schema": validate_call, "11.replay": find_entry, "11.break": arguments,
             "11.q1": "b", "11.q2": "b"}
