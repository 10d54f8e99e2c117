"""Worked solutions for chapter 16 (From agentkit to the frameworks, with traces). Open this after you have tried.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""

# 16.predict — the stuck stand-in asks for Search[Steve Jobs birth year] whatever it is shown.
# agentkit: the repeat fuse refuses the second identical action before its tool runs: 2 LLM
# calls, 1 tool call. finish_fallback=True asks once more, with tools off, after any stop that is
# not a Finish, the fuse's stop too: (3, 1), whatever max_steps is.
# LangGraph: create_agent has no repeat fuse; ModelCallLimitMiddleware(run_limit=7) ends the run
# after the seventh model call, and each of the seven ran the search: (7, 7).
# smolagents: no repeat fuse either; after 7 steps (7 searches) it asks once more for an answer,
# without tools: (8, 7).
prediction = {"agentkit, max_steps=7, finish_fallback=True": (3, 1), "LangGraph, max_steps=7": (7, 7),
              "smolagents, max_steps=7": (8, 7)}


# 16.span — six attributes, named as the conventions of version 1.41.0 name them. The token
# counts are gen_ai.usage.input_tokens and output_tokens (older versions said prompt_tokens and
# completion_tokens), and the provider is gen_ai.provider.name (older: gen_ai.system).
def chat_attributes(record, provider):
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": record.model or "unknown",
        "gen_ai.request.temperature": float(record.temperature),
        "gen_ai.usage.input_tokens": record.prompt_tokens,
        "gen_ai.usage.output_tokens": record.completion_tokens,
    }


# 16.break — any first reply with no action: create_agent reads a reply without a tool call as
# the answer and ends the run; agentkit's loop answers it with the format reminder and goes on.
# Section 4's format breaker already sends one such chat: this one is another.
reply = "Let me think about how to count days before I look anything up."


# 16.q1 — d: smolagents' own system prompt comes before ours on every call; through the course's adapter
# LangGraph sends ours only (its messages written back into our text protocol, no tool schema sent).
# 16.q2 — a: a text-protocol action has no id to record; a native tool call does.
SOLUTIONS = {"16.predict": prediction, "16.span": chat_attributes, "16.break": reply, "16.q1": "d", "16.q2": "a"}
