"""Worked solutions for chapter 01 (Tools). Open this after you have tried.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""
import math

# 01.predict — go through the eight requests one by one, as the registry does.
#   Search[Ada Lovelace]             an entry: ok
#   search[the capital of Atlantis]  a miss is an answer ("No information about ..."): ok; names ignore case
#   CALCULATE[(2024 - 1955) * 365]   names ignore case: 25185, ok
#   Calculate[2 ** 10000]            refused before computing: error
#   Translate[bonjour]               unknown tool: error, with the list of known tools; still logged
#   Weather[Paris]                   the tool raises: the registry catches it, error
#   Calculate[1 / 0]                 division by zero: error
#   Search[   ]                      an empty query is an error, unlike a miss
# Every request leaves exactly one log entry, whatever happened: 8 entries, 3 ok, 5 errors.
prediction = {"entries in tools.log": 8, "ok": 3, "error observations": 5}


# 01.guard — never compute the power to find out whether it is too big. The number of digits of
# |base ** exponent| is about exponent * log10(|base|), so compare that with 100. Three details:
# abs(base), because log10 of a negative number is undefined and the sign does not change the size;
# base 0 first, because log10(0) is undefined and 0 ** n is 0; and keep the exponent's sign, because
# a fraction to a negative power grows (0.5 ** -1000 is 2 ** 1000).
def power_allowed(base, exponent):
    if base == 0:
        return True
    return exponent * math.log10(abs(base)) <= 100


# 01.break — the blocklist looks for words; eval runs Python, and Python reaches the same places by
# many spellings. `vars()` contains none of the blocked words, parses as one expression, and under
# eval calls a built-in that hands over every variable of the notebook, an API key read into one
# included. The safe calculator never runs it: it sees a Call node, which is not arithmetic.
payload = "vars()"


# 01.q1 — a. True + True and 'a' * 3 are Constant and BinOp nodes, all allowed; only the value's
# type (checked with type(), since True is an int) tells them from arithmetic.
# 01.q2 — d. An exception would end the run; an error observation is text the model can act on.
SOLUTIONS = {"01.predict": prediction, "01.guard": power_allowed, "01.break": payload, "01.q1": "a", "01.q2": "d"}
