"""Worked solutions for chapter 03 (When ReAct loops). Open this after you have tried.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""

# 03.predict — reason from the loop and the traces the chapter prints, not from memory.
# The wanderer searches something new at every step, so the repeat fuse (same call twice in a row)
# never fires: max_steps=8 stops it, one LLM call and one tool call per step: (8, 8).
# The stuck model with the fuse off runs to max_steps the same way, 8 and 8; the fallback then adds
# one LLM call with tools switched off: (9, 8).
# The format breaker's trace (section 3): prose (no action: a format reminder, no tool), Search,
# Calculate, Finish. With max_steps=2 it gets as far as the Search; the fallback adds one LLM call: (3, 1).
prediction = {"wanderer, fuse on, max_steps=8": (8, 8), "stuck, fuse off, max_steps=8, fallback": (9, 8),
              "format breaker, max_steps=2, fallback": (3, 1)}


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
         "Observation: The founder of Apple came into the world in 1961.\n"
         "Thought: So the answer follows.\n"
         "Action: Finish[22996]")


SOLUTIONS = {"03.predict": prediction, "03.fuse": my_fuse, "03.break": reply, "03.q1": "d", "03.q2": "a"}
