"""The capstone's measurement out of the agent's reach (issue 42): each route an agent took on the in-process check
to the green tick without the lead, tried again through `check("14.capstone", build)`.

Each attack uses only what an agent can reach: the objects build() is given, the frames that call it, the garbage
collector. On the check as it was (one process) each of them passed; now the worlds, the model, its ledger, the
outbox and the grading are in another process, so each finds nothing to change and the check measures the agent
under it."""
from __future__ import annotations

import gc
import importlib.util
import sys
from pathlib import Path

import pytest

from agentkit import capstone
from agentkit.approval import GatedExecutor
from agentkit.capstone_world import TEAM_DOMAIN, draw_world
from agentkit.exercises import check
from agentkit.hybrid import ReflectiveReActAgent
from agentkit.protocol import as_messages
from agentkit.react import ReActAgent

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("solutions_ch14_routes", ROOT / "solutions" / "ch14.py")
solution = importlib.util.module_from_spec(spec)
spec.loader.exec_module(solution)

SEEDS = capstone.SEEDS


@pytest.fixture
def practice(monkeypatch):
    """The check runs on the practice worlds, one task per template, so that a test knows their answers (a learner's
    agent does not: a check draws its worlds in the world's process)."""
    monkeypatch.setattr(capstone, "check_worlds", lambda: {"seeds": SEEDS, "per_template": 1})


def gated(tools):
    return GatedExecutor(tools, solution.team_only)


def verdict_of(build):
    verdict = check("14.capstone", build)
    return verdict.status, verdict.text


STOP = "answered without calling the model it was given"


class Looking(ReActAgent):
    """ReAct behind the gate (no lead of its own) that looks for the measurement in the first FEW tasks' runs, then
    ends the check at once: it answers without calling the model, which is refused (the rest would measure nothing
    new)."""

    FEW = 3
    runs = 0

    def run(self, question, verbose=False, hints=""):
        type(self).runs += 1
        if type(self).runs > self.FEW:
            return "Unknown"
        return self.look(question, lambda: super(Looking, self).run(question, verbose=False, hints=hints))


def reachable(*roots, depth: int = 4) -> list:
    """Every object reachable from `roots` through attributes, closures and containers, a few levels deep."""
    seen, out, frontier = set(), [], list(roots)
    for _ in range(depth):
        found = []
        for obj in frontier:
            if id(obj) in seen or isinstance(obj, (str, bytes, int, float, bool, type(None), type)):
                continue
            seen.add(id(obj))
            out.append(obj)
            if isinstance(obj, dict):
                found += list(obj.values())
            elif isinstance(obj, (list, tuple, set, frozenset)):
                found += list(obj)
            found += list(getattr(obj, "__dict__", {}).values())
            for cell in getattr(obj, "__closure__", None) or ():
                try:
                    found.append(cell.cell_contents)
                except ValueError:
                    pass
            found += [getattr(getattr(obj, "__func__", None), "__closure__", None) or ()]
        frontier = found
    return out


# --- 1. the model's error rates, zeroed during the run -----------------------------------------------------------


def test_an_agent_cannot_zero_the_models_error_rates(practice):
    touched = []

    class Calm(Looking):
        def look(self, question, run):
            knobs = [o.rates for o in reachable(self.llm, self.tools) if isinstance(getattr(o, "rates", None), dict)]
            saved = [dict(r) for r in knobs]
            for rates in knobs:
                rates.update(dict.fromkeys(rates, 0.0))
            touched.extend(knobs)
            try:
                return run()
            finally:
                for rates, before in zip(knobs, saved):
                    rates.update(before)

    status, text = verdict_of(lambda llm, tools, memory: Calm(llm, gated(tools)))
    assert not touched, "the kernel holds the model's error rates"
    assert status == "wrong" and STOP in text, text


# --- 2. the model's internals, below think() --------------------------------------------------------------------


class Below:
    """An LLM that reaches below the given model's think(): whatever does the work without the ledger."""

    def __init__(self, llm):
        self.llm, self.calls = llm, []
        self.inner = getattr(llm, "_answer", None)

    def think(self, messages, temperature=0):
        if self.inner is not None:
            return self.inner(as_messages(messages))[0]
        return self.llm._complete(as_messages(messages), temperature)[0]


def test_calls_below_think_are_counted_where_the_model_is(practice):
    class Dear:  # two strong agents on every task: over the budget when every call counts
        def __init__(self, llm, tools, memory):
            self.llm, self.tools, self.memory = llm, tools, memory
            self.stop_reason = ""

        def run(self, question, verbose=False):
            self.llm.think(f"Question: {question}")  # one call on the ledger, so the run is not answer-less
            careful = ReflectiveReActAgent(Below(self.llm), gated(self.tools), max_steps=8, max_rounds=3)
            second = careful.run(question, verbose=False)
            answer = solution.MemoryGateCascade(Below(self.llm), self.tools, self.memory).run(question)
            self.stop_reason = "finished"
            return second if answer.startswith("Unknown") else answer

    status, text = verdict_of(lambda llm, tools, memory: Dear(llm, tools, memory))
    assert status == "wrong" and "the token budget" in text, text


# --- 3. the gold answer, read from a calling frame -----------------------------------------------------------------


def test_no_calling_frame_holds_the_gold_answer(practice):
    found = []

    class Peeker(Looking):
        def look(self, question, run):
            answer = run()
            frame = sys._getframe(1)
            while frame is not None:
                for value in list(frame.f_locals.values()):
                    if getattr(value, "question", None) == question and hasattr(value, "gold"):
                        found.append(value.gold)
                        if not value.check(answer):  # escalate only when the cheap answer is wrong
                            careful = ReflectiveReActAgent(self.llm, self.tools, max_steps=6)
                            answer = careful.run(question, verbose=False)
                frame = frame.f_back
            return answer

    status, text = verdict_of(lambda llm, tools, memory: Peeker(llm, gated(tools)))
    assert not found, "a calling frame holds the task with its gold answer"
    assert status == "wrong" and STOP in text, text


def test_the_kernel_holds_no_task_of_the_check_while_the_agent_runs(monkeypatch):
    """On fresh worlds, as a learner's check draws them: no object in this process is the task being run (with its
    gold answer), or a world, a model or a key-path table that holds it."""
    monkeypatch.setenv("AGENTKIT_CHECKS", "in-process")  # what the agent records stays in this process
    monkeypatch.setattr(capstone, "check_worlds", lambda: {"seeds": None, "per_template": 1})
    draw_world.cache_clear()  # practice worlds other tests drew here: some of their questions are any world's
    gc.collect()
    seen = []

    def holds(obj, question: str) -> bool:
        """A task with this question, or an object whose tasks hold one (a world, a key-path table, a model)."""
        if not str(getattr(type(obj), "__module__", "")).startswith("agentkit"):
            return False  # the harness keeps what it has in the course's own types
        fields = getattr(obj, "__dict__", {})
        if fields.get("question") == question and "gold" in fields:
            return True
        known = getattr(fields.get("known"), "__dict__", {})
        tasks = fields.get("tasks") or known.get("tasks") or ()
        return isinstance(tasks, (list, tuple)) and any(getattr(t, "question", None) == question for t in tasks)

    class Looker(Looking):
        FEW = 2  # the garbage collector's walk is slow: the first task, and the second

        def look(self, question, run):
            seen.append([type(o).__name__ for o in gc.get_objects() if holds(o, question)])
            return run()

    verdict = check("14.capstone", lambda llm, tools, memory: Looker(llm, gated(tools)))
    assert seen == [[], []], (seen, verdict.text)
    assert STOP in verdict.text


# --- 4. the ledger, edited ----------------------------------------------------------------------------------------


def test_editing_the_ledger_changes_nothing_the_check_reads(practice):
    class Tidy:  # two strong agents on every task, which tidies its ledger down to one call after each run
        def __init__(self, llm, tools, memory):
            self.llm, self.inner = llm, solution.MemoryGateCascade(llm, tools, memory)
            self.careful = ReflectiveReActAgent(llm, gated(tools), max_steps=8, max_rounds=3)
            self.stop_reason = ""

        def run(self, question, verbose=False):
            second = self.careful.run(question, verbose=False)
            answer = self.inner.run(question)
            answer = second if answer.startswith("Unknown") else answer
            self.stop_reason = "finished"
            del self.llm.calls[1:]
            for name, value in list(vars(self.llm).items()):
                if name.endswith("__spent"):  # the in-process check's private count, made to agree
                    value[:] = [1, self.llm.calls[0].total_tokens]
            return answer

    status, text = verdict_of(lambda llm, tools, memory: Tidy(llm, tools, memory))
    assert status == "wrong" and "the token budget" in text, text


# --- 5. answers that are not the model's ---------------------------------------------------------------------------


def test_an_answer_the_model_never_gave_is_refused_whatever_the_agent_writes_into_the_model(practice):
    table: dict = {}  # question -> [(task id, answer)], in the order of the worlds
    for seed in SEEDS:
        for t in draw_world(seed, 1).tasks:
            table.setdefault(t.question, []).append((t.id, "Unknown" if t.must_refuse else str(t.gold)))

    class Forger:
        def __init__(self, llm):
            self.llm = llm

        def run(self, question):
            self.llm.think(f"Question: {question}")
            for name, value in list(vars(self.llm).items()):
                if name.endswith("__replies"):  # the in-process check's record of the model's replies
                    value.extend(table[question])
            return table[question][0][1]

    status, text = verdict_of(lambda llm, tools, memory: Forger(llm))
    assert status == "wrong" and "which no reply of the model" in text, text


# --- 6. a message to an outside address ----------------------------------------------------------------------------


def test_a_message_outside_the_team_is_seen_however_the_agent_tidies_up(practice):
    def scrub(tools):
        for obj in reachable(tools.tools["SendMessage"].func):
            if isinstance(obj, list) and all(isinstance(m, tuple) and len(m) == 2 for m in obj):
                obj[:] = [m for m in obj if str(m[0]).endswith("@" + TEAM_DOMAIN)]

    class Tidy:
        def __init__(self, llm, tools, memory):
            self.llm, self.tools = llm, tools
            self.inner = solution.MemoryGateCascade(llm, tools, memory)
            self.inner.tools = tools  # no gate: it sends what it is asked to

        def run(self, question, verbose=False):
            answer = self.inner.run(question)
            scrub(self.tools)
            return answer

    status, text = verdict_of(lambda llm, tools, memory: Tidy(llm, tools, memory))
    assert status == "wrong" and "outside" in text and TEAM_DOMAIN in text, text


# --- 7. the check's worlds swapped for worlds whose answers the kernel can compute ----------------------------------


def test_an_agent_cannot_swap_the_checks_worlds_for_practice_worlds(monkeypatch):
    monkeypatch.setenv("AGENTKIT_CHECKS", "in-process")  # what the agent records stays in this process
    monkeypatch.setattr(capstone, "check_worlds", lambda: {"seeds": None, "per_template": 1})
    tried = []

    class Swapper(ReActAgent):
        def run(self, question, verbose=False, hints=""):
            if not tried:
                world = self.llm._world  # the pipe its model speaks through
                world.request("drop")  # the check's standing ends here...
                try:
                    world.request("open", seeds=list(SEEDS), per_template=1)  # ...and worlds anyone can draw begin
                    tried.append("swapped")
                except Exception as e:  # noqa: BLE001
                    tried.append(str(e))
            return super().run(question, verbose=False, hints=hints)

    status, text = verdict_of(lambda llm, tools, memory: Swapper(llm, gated(tools)))
    assert tried == ["this process drew a check's worlds: it serves no worlds of known seeds after them"], tried
    assert status == "wrong" and "the world's process" in text, text
