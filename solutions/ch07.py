"""Worked solutions for chapter 07 (Tree of Thoughts). Open this after you have tried.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""
import ast
from fractions import Fraction

# 07.predict — an expanded node costs 1 proposal + (steps it wrote) x votes judgements, and a
# node with one number left is never expanded. At depth 3 the levels expand 1, then up to b,
# then up to b nodes. The catch: a node with two numbers left has only 5 legal steps (a + b,
# a * b, a - b, a / b, b / a), so with k=6 it writes 5, not 6.
# - k=6, b=1, votes=1: (1 + 6) + (1 + 6) + (1 + 5) = 20.
# - k=6, b=2, votes=3: 19 + 2 x 19 + 2 x (1 + 5 x 3) = 19 + 38 + 32 = 89.
# - k=4, b=3, votes=1: k=4 fits under 5, so every node costs 1 + 4 = 5: (1 + 3 + 3) x 5 = 35.
prediction = {"k=6, b=1, votes=1": 20, "k=6, b=2, votes=3": 89, "k=4, b=3, votes=1": 35}


# 07.beam — a node's score is the mean of its votes (sure 1, likely 0.5, impossible 0; a vote
# with no label is 0 and still counts). sorted() is stable, so sorting by the score alone keeps
# ties in proposal order, as TreeOfThoughts does; then keep the first b.
def my_beam(children, b):
    value = {"sure": 1.0, "likely": 0.5, "impossible": 0.0}

    def score(child):
        _, votes = child
        return sum(value.get(v, 0.0) for v in votes) / len(votes) if votes else 0.0

    return sorted(children, key=score, reverse=True)[:b]


# 07.verify — never run the text: parse it with ast and walk the tree, accepting only whole
# numbers and + - * /. Compute with Fraction, so 8 / (3 - 8/3) is exactly 24, and compare the
# numbers used with the puzzle's as sorted lists (a multiset). Anything odd is False, not an error.
def my_verify(expression, numbers):
    ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
           ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b}
    used = []

    def value(node):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            used.append(node.value)
            return Fraction(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](value(node.left), value(node.right))
        raise ValueError(f"not allowed: {type(node).__name__}")

    try:
        result = value(ast.parse(expression, mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError):
        return False
    return sorted(used) == sorted(numbers) and result == 24


# 07.prune — with one node per level (b=1) and one vote per judgement, a single random vote can
# put a dead end above the good step, and nothing ever looks at the good step again. At noise
# 0.25 that happens on 4 4 7 7 at level 1. Three votes (averaging) or a wider beam would save it.
judge = {"noise": 0.25, "b": 1, "votes": 1}


SOLUTIONS = {"07.predict": prediction, "07.beam": my_beam, "07.verify": my_verify, "07.prune": judge,
             "07.q1": "c", "07.q2": "d"}
