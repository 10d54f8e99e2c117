"""Worked solutions for chapter 08 (The runtime: guards that don't trust the model). Open this after you have tried.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""
import re

from agentkit.runtime import Runtime

# 08.predict — count with the formula of section 7: LLM calls = steps + checkpoints + fallback, and
# read each run's ladder at the defaults from section 3; then ask what each setting changes.
# pager, Runtime(jaccard=1.0, checkpoint_every=5): at the defaults the repeat check stops the
# pager; at 1.0 only an identical word set is a repeat, and every query names another page number,
# so it stays silent. What is left is drift, judged at the first checkpoint, after step 5: hint at
# 5, redirect at 6, stop at 7. 7 tool calls; 7 steps + 1 checkpoint + 1 fallback = 9 LLM calls.
# paraphrases, Runtime(stop=False): the ladder climbs to the redirect and stays there; the stuck
# stand-in does not listen, so the run still goes to max_steps=20: (20, 20). Words are not a stop.
# side topics, Runtime(checkpoint_every=6): every page is new and on-topic, so only drift can
# catch it, and drift is judged at a checkpoint. The first is due after step 6 (one extra call):
# hint at 6, redirect at 7, stop at 8 (the ladder is shared: step 8's signal happens to be a
# useless result), then the fallback. 8 tool calls; 8 steps + 1 checkpoint + 1 fallback = 10.
prediction = {
    "pager, Runtime(jaccard=1.0, checkpoint_every=5)": (9, 7),
    "paraphrases, Runtime(stop=False)": (20, 20),
    "side topics, Runtime(checkpoint_every=6)": (10, 8),
}


# 08.repeat — section 2's normalise and jaccard, with the threshold and the window as arguments.
# Word SETS, so order and repetition vanish; divide by the union, so a short query inside a long
# one is not a repeat; >= so that a similarity equal to the threshold counts; compare with each of
# the last `window` inputs (a stutterer repeats the one before the last), and no further back.
STOPWORDS = {"the", "at", "in", "of", "a", "for", "on", "was", "how", "much"}


def normalise(text):
    words = re.findall(r"\w+", text.lower().replace("'s", ""))
    return {w for w in words if w not in STOPWORDS}


def is_repeat(text, earlier, threshold=0.7, window=3):
    mine = normalise(text)
    for other in earlier[-window:]:
        theirs = normalise(other)
        union = mine | theirs
        if union and len(mine & theirs) / len(union) >= threshold:
            return True
    return False


# 08.useless — section 1's table, in the order the checks are cheapest. An error STARTS with
# "error:" (a page may mention the word); an empty result or a line saying nothing was found
# brings nothing, though it repeats the query's words. Then compare content words (section 2's
# normalise): a page sharing none with the question or an earlier useful result is off-topic,
# except a bare number (a calculator's answer); a page whose every word was seen already is old news.
NO_RESULT = re.compile(r"(no results?|no information|nothing found|not found)\b", re.IGNORECASE)


def is_useless(result, question, earlier):
    text = result.strip()
    if text.lower().startswith("error:"):
        return True
    mine = normalise(text)
    if not mine or NO_RESULT.match(text):
        return True
    seen = normalise(question).union(*(normalise(e) for e in earlier))
    if not re.fullmatch(r"[\d.,]+", text) and not mine & seen:
        return True
    return mine <= seen


# 08.break — section 5b prints every threshold of both designs, so the break must come from another
# knob. The second-signal design kills least on the held-out suite; make its other signal, drift, look
# more often: with a checkpoint every 2 steps (instead of 3), a search that must follow a trail (the
# harbour's rain is filed in a logbook, summed in a letter...) has not shrunk Missing after two steps,
# drift is flagged, and a query that repeats the earlier ones' words is the second signal that agrees.
# The tuning suite has no such trail: it passes. One held-out task is killed on its fourth step.
runtime = Runtime(checkpoint_every=2, second_signal=True)


SOLUTIONS = {"08.predict": prediction, "08.repeat": is_repeat, "08.useless": is_useless, "08.break": runtime,
             "08.q1": "c", "08.q2": "a"}
