"""An off-script model for the loopback server: plausible replies that follow no course script.

`reply(body)` answers an OpenAI-style request body the way a mediocre hosted model might:
it reads only the FORMAT the prompt asks for (ReAct lines, a JSON plan, a review verdict,
a lesson object, a code block, native tool calls), never which chapter or task it is, and
answers in that shape with wrong or partial content often enough that every notebook meets
what a key-holder meets: ReAct steps with plausible tools and arguments, invented
Observations, wrong Finish answers, plans with another number of steps (sometimes not JSON),
reviews that pass or not (sometimes without a verdict), lessons that are sometimes malformed.

Deterministic: every choice comes from a generator seeded with the request's content, so the
same request gets the same reply on every machine and in any order.

    make course-real   # tools/run_course.py --mode real-loopback serves this with agentkit.loopback
"""
from __future__ import annotations

import hashlib
import json
import random
import re

WORDS = ("population", "capital", "river", "year", "author", "height", "founder", "distance", "price", "record")
ANSWERS = ("42", "1912", "Paris", "about 3 million", "the Danube", "unknown", "7", "Marie Curie", "1,250 km", "no")


def _text(messages) -> str:
    return "\n\n".join(str(m.get("content") or "") for m in messages if isinstance(m, dict))


def _seeded(body: dict) -> random.Random:
    content = json.dumps([body.get("messages"), body.get("prompt"), body.get("tools")], sort_keys=True, default=str)
    return random.Random(hashlib.sha256(content.encode()).hexdigest())


def _question(text: str) -> str:
    found = re.findall(r"(?im)^\s*(?:question|task)\s*:\s*(.+)$", text)
    return found[-1].strip() if found else text.strip().splitlines()[-1][:120] if text.strip() else "the task"


def _topic(rng: random.Random, question: str) -> str:
    """A few content words of the question, as a model would put them in a search."""
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z'-]{3,}", question)
             if w.lower() not in {"what", "which", "when", "where", "does", "with", "that", "this", "from", "have"}]
    if not words:
        return rng.choice(WORDS)
    start = rng.randrange(len(words))
    return " ".join(words[start:start + rng.randint(1, 3)])


def react_reply(rng: random.Random, text: str) -> str:
    tools = [t for t in re.findall(r"(?m)^\s*[-*]\s*([A-Za-z_][A-Za-z0-9_]*)\[", text) if t.lower() != "finish"]
    tools = tools or ["Search"]
    question = _question(text)
    seen = len(re.findall(r"(?m)^Observation:", text))
    finish = rng.random() < 0.2 + 0.2 * seen or "Tools are now switched off" in text
    roll = rng.random()
    if finish:
        answer = rng.choice(ANSWERS) if roll < 0.8 else f"{_topic(rng, question)} is {rng.choice(ANSWERS)}"
        return f"Thought: I think I have enough to answer.\nAction: Finish[{answer}]"
    tool, argument = rng.choice(tools), _topic(rng, question)
    if roll < 0.15:  # the classic failure: the model writes the Observation itself
        return (f"Thought: I need the {rng.choice(WORDS)}.\nAction: {tool}[{argument}]\n"
                f"Observation: {argument} is {rng.choice(ANSWERS)}.\nThought: so the answer is clear.")
    if roll < 0.25:  # no Action line at all
        return f"I believe the answer involves {argument}, but I would need to check {rng.choice(WORDS)}."
    if roll < 0.35:  # a tool the prompt never offered
        return f"Thought: Let me look this up online.\nAction: WebBrowser[{argument}]"
    return f"Thought: I should find the {rng.choice(WORDS)} of {argument}.\nAction: {tool}[{argument}]"


def plan_reply(rng: random.Random, text: str) -> str:
    question = _question(text)
    steps = [f"Find the {rng.choice(WORDS)} of {_topic(rng, question)}" for _ in range(rng.randint(1, 6))]
    steps.append("Combine the results into the answer")
    roll = rng.random()
    if roll < 0.15:  # a numbered list, not JSON
        return "Here is my plan:\n" + "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1))
    if roll < 0.45:
        return f"```json\n{json.dumps(steps, indent=2)}\n```"
    return json.dumps(steps)


def review_reply(rng: random.Random, text: str) -> str:
    notes = rng.sample(["The function handles the main case.", "An empty input is not handled.",
                        "The loop could stop earlier.", "Negative numbers are not checked.",
                        "Variable names are clear.", "The complexity is fine for small inputs."], 2)
    roll = rng.random()
    verdict = "VERDICT: PASS" if roll < 0.45 else "VERDICT: REVISE" if roll < 0.85 else "Overall this looks acceptable."
    return "\n".join(f"- {n}" for n in notes) + "\n" + verdict


def code_reply(rng: random.Random, text: str) -> str:
    names = re.findall(r"`([a-z_][a-z0-9_]*)\(", text) or re.findall(r"\bdef ([a-z_][a-z0-9_]*)\(", text)
    name = names[0] if names else "solve"
    body = rng.choice([
        "    if n < 2:\n        return False\n    for d in range(2, n):\n        if n % d == 0:\n            return False\n    return True",
        "    result = []\n    for i in range(2, n + 1):\n        if all(i % d for d in range(2, i)):\n            result.append(i)\n    return result",
        "    return n",
    ])
    return f"Here is the code:\n```python\ndef {name}(n):\n{body}\n```"


def lesson_reply(rng: random.Random, text: str) -> str:
    keys = re.findall(r'"([a-z_]+)"\s*:', text) or ["lesson"]
    lesson = {key: f"{rng.choice(['Check', 'Verify', 'Avoid', 'Prefer'])} the {rng.choice(WORDS)} before answering."
              for key in dict.fromkeys(keys)}
    roll = rng.random()
    if roll < 0.2:  # cut off mid-object, as a token limit does
        return json.dumps(lesson)[: rng.randint(10, 40)]
    if roll < 0.3:  # a key missing
        lesson.pop(next(iter(lesson)))
    if roll < 0.5:
        return f"Sure! Here is the lesson:\n```json\n{json.dumps(lesson, indent=1)}\n```"
    return json.dumps(lesson)


def tool_call_reply(rng: random.Random, body: dict) -> dict | str:
    messages = body.get("messages") or []
    results = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "tool")
    question = _question(_text(messages))
    if rng.random() < 0.25 + 0.3 * results:
        return f"The answer is {rng.choice(ANSWERS)}."
    spec = rng.choice(body["tools"]).get("function", {})
    properties = (spec.get("parameters") or {}).get("properties") or {}
    arguments = {name: (3 if schema.get("type") in ("integer", "number") else _topic(rng, question))
                 for name, schema in properties.items()}
    return {"content": None, "tool_calls": [{"type": "function",
                                            "function": {"name": spec.get("name", "search"),
                                                         "arguments": json.dumps(arguments)}}]}


def reply(body: dict):
    """The replier for `agentkit.loopback.serve`: a str (assistant text) or a tool-call message."""
    rng = _seeded(body)
    if "prompt" in body:
        return f" {rng.choice(ANSWERS)}. I am not sure about the {rng.choice(WORDS)}."
    if body.get("tools"):
        return tool_call_reply(rng, body)
    messages = body.get("messages") or []
    text = _text(messages)
    # Like a model, it follows the instructions: the system prompt, else the first message.
    system = [m for m in messages if isinstance(m, dict) and m.get("role") == "system"]
    asked = _text(system or messages[:1])
    if "Action:" in asked and "Finish[" in asked:
        return react_reply(rng, text)
    if "VERDICT" in asked:
        return review_reply(rng, text)
    if "JSON list" in asked:
        return plan_reply(rng, text)
    if "JSON object" in asked:
        return lesson_reply(rng, text)
    if "```python" in asked or "Python code" in asked:
        return code_reply(rng, text)
    if rng.random() < 0.3:
        return "I'm not sure I understand the question. Could you clarify?"
    return f"The result is {rng.choice(ANSWERS)}."
