"""Worked solutions for chapter 03 (When ReAct loops). Open this after you have tried.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""

# 03.predict — reason from the loop, not from memory.
# Fuse off: nothing but max_steps ends the stuck run, and every step is one LLM call plus one
# tool call, so max_steps=8 costs (8, 8). Fuse on: step 1 runs its search; step 2 asks for the
# very same search, and the fuse refuses it *before* the tool runs: (2, 1), whatever max_steps is.
# The fallback adds one LLM call with tools switched off: (3, 1).
prediction = {"fuse off": (8, 8), "fuse on": (2, 1), "fuse on + fallback": (3, 1)}


# 03.fuse — chapter 03's fuse looks back one action; a stutterer (A, B, A) repeats the action
# two back, so look at the last two. Normalise the way tiny_react does, or "Steve Jobs" and
# "steve  JOBS" count as different searches. Looking further back than two starts to kill runs
# that legitimately return to an earlier query after trying others.
def my_fuse(actions):
    def key(action):
        tool, text = action
        return tool.lower(), " ".join(text.split()).casefold()

    *earlier, last = [key(a) for a in actions]
    return key(actions[-1]) in earlier[-2:] if earlier else False


# 03.break — the incident's regex runs under DOTALL from the first "Action:" to the end of the
# reply, so every line the model invents after its Action becomes part of the tool input.
# parse_reply reads the Action line only and flags the invented Observation.
reply = ("Thought: I need his birth year.\n"
         "Action: Search[Steve Jobs]\n"
         "Observation: Steve Jobs was born in 1950.\n"
         "Thought: So the answer follows.\n"
         "Action: Finish[27010]")


SOLUTIONS = {"03.predict": prediction, "03.fuse": my_fuse, "03.break": reply, "03.q1": "b", "03.q2": "a"}
