"""Worked solutions for chapter 16 (From agentkit to the frameworks, with traces). Open this after you have tried.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""

# 16.predict — the stuck stand-in asks for Search[Steve Jobs birth year] whatever it is shown.
# agentkit: the repeat fuse refuses the second identical action before its tool runs: (2, 1).
# LangGraph: create_agent has no repeat fuse; ModelCallLimitMiddleware(run_limit=5) ends the run
# after the fifth model call, and each of the five ran the search: (5, 5).
# smolagents: no repeat fuse either; after 5 steps (5 searches) it asks once more for an answer,
# without tools: (6, 5).
prediction = {"agentkit": (2, 1), "LangGraph": (5, 5), "smolagents": (6, 5)}


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
reply = "Steve Jobs was born in the fifties, so it is a lot of days."


SOLUTIONS = {"16.predict": prediction, "16.span": chat_attributes, "16.break": reply, "16.q1": "a", "16.q2": "a"}
