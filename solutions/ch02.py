"""Worked solutions for chapter 02 (ReAct). Open this after you have tried.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""
import re

# 02.predict — the savings run makes 20 calls: 19 Calculates, then Finish (section 4 prints it).
# An Observation is written after the call whose reply asked for the tool, so call 1 carries none,
# call 2 carries one, ..., call n carries n - 1: every earlier result, re-sent.
# The first observation travels with calls 2 to 20: 19 times.
# All observations over the run: 0 + 1 + ... + 19 = 19 * 20 / 2 = 190, for only 19 tool results.
# That sum of a growing series is why the total of prompt tokens grows about quadratically.
prediction = {"times the first observation is sent": 19, "observations sent, whole run": 190}


# 02.parse — find the FIRST "Action:" label, in any case, followed by a tool name and "[". Then walk
# the characters after the "[" counting brackets: the input ends at the "]" that brings the count
# back to zero. This keeps inner brackets ("Python lists [1, 2, 3]"), where a lazy (.*?) stops at
# the first "]", and stops before words that follow on the line, where a greedy (.*) runs to the
# last "]". Stopping at the end of the line keeps invented lines out of the input, and taking the
# first action ignores the Finish the model wrote after an Observation it invented.
ACTION = re.compile(r"action\s*:\s*(\w+)\s*\[", re.IGNORECASE)


def my_parse(reply):
    match = ACTION.search(reply)
    if match is None:
        return None, None  # no action: the loop sends a format reminder, nothing raises
    depth, start = 1, match.end()
    for end in range(start, len(reply)):
        char = reply[end]
        if char == "\n":
            break
        depth += (char == "[") - (char == "]")
        if depth == 0:
            return match.group(1), reply[start:end].strip()
    return match.group(1), reply[start:end].strip()  # never closed: the rest of the line


# 02.break — count the steps each run needs, the Finish included: the checkpoint needs Search,
# Calculate, Finish = 3 steps, so the largest budget that still cuts it short is 2 (3 finishes).
# The savings run needs 19 Calculates and then Finish = 20 steps, so 19 cuts it short: all 19
# balances are computed, the last one sits in the last observation, and no answer comes back.
budgets = {"checkpoint": 2, "savings": 19}


# 02.q1 — c. Each prompt carries the whole history, one step longer each time: linear prompts,
# quadratic sum. The role prompt (b) is a constant part: alone it gives a straight line.
# 02.q2 — b. The problem goes back as an Observation and the step counts: the run stays bounded.
SOLUTIONS = {"02.predict": prediction, "02.parse": my_parse, "02.break": budgets, "02.q1": "c", "02.q2": "b"}
