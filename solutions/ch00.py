"""Worked solutions for chapter 00 (The stateless LLM). Open this after you have tried.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""
from agentkit import tokens

# 00.predict — reason from the loop, then from the printed numbers.
# Messages: the loop starts with one system message and appends two per turn (the user's turn and
# the reply it got). Call n is made after the n-th user message and before its reply, so it sends
# 1 + n + (n - 1) = 2n messages: 24 for call 12.
# Tokens of the last call: section 3 prints 37, 66, 95, ...: each call re-sends everything before
# it plus one more turn, so each prompt is 29 tokens longer than the last. Call 12: 37 + 11 * 29 = 356.
# The whole bill: twelve calls growing in equal steps cost (first + last) / 2 each on average:
# 12 * (37 + 356) / 2 = 2358. Twelve independent calls of 37 tokens would cost 444: the re-sent
# history is what makes the rest.
prediction = {"messages in the last call": 24, "prompt tokens of the last call": 356, "prompt tokens, all calls": 2358}


# 00.bill — a call sends everything before the reply it gets back. So every prompt the loop sent is a
# prefix of the final history that ends just before an assistant message; the reply itself is
# billed as completion tokens, and re-sent from the next call on. Count each prompt the way the chat
# API bills it (tokens.count_messages adds the 3 wrapper tokens per message, the role, and the 3
# tokens that prime the reply) and add them up: the early messages are paid once per later call.
def resent_tokens(history):
    prompts = [history[:i] for i, message in enumerate(history) if message["role"] == "assistant"]
    return sum(tokens.count_messages(prompt) for prompt in prompts)


# 00.break — the name rule reads one phrase, "my name is" followed by a capitalised word (section 1
# says it reads the last "my name is ..."). Any other way of telling a name, which every reader of
# English understands, slips past it: "I'm Ada", "Call me Ada", "My name is Ada" with a capital M,
# "my name is ada". The ledger's note shows the name rule did answer: it just did not find a name.
attempt = {"name": "Ada", "prompt": "Hi, I'm Ada. What is my name?"}


# 00.q1 — d. The model is stateless: the second call did not contain the first. Memory is the
# history we re-send (section 1 does, and the name comes back).
# 00.q2 — c. A counter hands out replies by position, so any extra or reordered call shifts every
# later answer without an error; a content-based stand-in gives the same text the same reply.
SOLUTIONS = {"00.predict": prediction, "00.bill": resent_tokens, "00.break": attempt, "00.q1": "d", "00.q2": "c"}
