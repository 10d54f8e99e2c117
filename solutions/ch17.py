"""Worked solutions for chapter 17 (Context engineering). Open this after you have tried.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""
from agentkit import tokens

# 17.predict — relay-20 is 17 stations: Dispatch, 17 Searches, Calculate, Finish = 20 steps, one call each.
# Full history: 20 calls; step 1 (the slip) is in the history of every later call: 19.
# Sliding window, k=4: the run still takes 20 calls (at the end it asks the desk again, is refused, and
# finishes "unknown" where the others Calculate and Finish); call n sends steps n-4 to n-1, so step 1 is
# sent by calls 2, 3, 4 and 5: 4.
# Masking, keep=2: 20 calls; step 1's Observation is raw while it is one of the last two steps: calls 2
# and 3: 2. (Its Thought, which restates the tariff, is never masked.)
# Sub-agents, 10 stations each: the lead's 5 calls (Dispatch, Walk, Walk, Calculate, Finish), the first
# walker's 11 (10 Searches, Finish), the second's 8 (7 Searches, Finish): 24. Only the lead's calls 2-5
# carry the slip: 4.
prediction = {"full history": (20, 19), "sliding window, k=4": (20, 4), "masking, keep=2": (20, 2),
              "sub-agents, 10 stations each": (24, 4)}


# 17.mask — every step but the last two keeps its Thought and Action and loses its Observation to a
# placeholder that says how big it was; the last two go as they are (as_history()).
def my_masking(assemble, trace, question):
    keep = 2
    parts = []
    for number, step in enumerate(trace, 1):
        if number > len(trace) - keep:
            parts.append(step.as_history())
        else:
            size = tokens.count_tokens(step.observation)
            parts.append(f"Thought: {step.thought}\nAction: {step.action}[{step.argument}]\n"
                         f"Observation: [step {number}'s result, {size} tokens, not shown]")
    return assemble(parts)


# 17.break — start from the stand-in's own summariser and drop its tariff line. The summary keeps where
# the run stands (the furthest station's sentence), so the walk goes on; it replaces the steps that held
# the slip, so no later prompt holds the tariff. At the last station the lead asks the desk again, is
# refused (it prints a slip once), and answers "unknown".
def summarise(text):
    from agentkit.scripts.relay import summary_reply

    return "\n".join(line for line in summary_reply(text).splitlines() if "tariff" not in line)


# 17.q1 — a: the tariff survived in a Thought, which masking keeps and the window drops.
# 17.q2 — d: a window changes its prompts right after the question; full history only appends.
# 17.q3 — a: the knob is an assumption; it measures structures under it, not a model.
SOLUTIONS = {"17.predict": prediction, "17.mask": my_masking, "17.break": summarise,
             "17.q1": "a", "17.q2": "d", "17.q3": "a"}
