"""The capstone (chapter 14): its check passes the worked solution and refuses each class of wrong answer, on worlds
drawn when it runs, through the model it hands out, within a budget read from that model's ledger.

Most checks here run on two of the practice worlds (`draw_seeds` patched), so the seven baselines are computed
once per process, on two worlds rather than five; one runs on fresh seeds, as a learner's check does."""
from __future__ import annotations

import copy
import importlib.util
import signal
import time
from pathlib import Path

import pytest

from agentkit import capstone
from agentkit.approval import GatedExecutor
from agentkit.capstone import BUDGET, SEEDS, CapstoneLLM, Standing, baselines, beats, best_of, standing
from agentkit.capstone_world import CATEGORIES, TEAM_DOMAIN, draw_world, templates
from agentkit import exercises
from agentkit.exercises import NOT_DONE, check
from agentkit.hybrid import HybridAgent
from agentkit.instruments import NoisyTaskLLM
from agentkit.memory_data import ATTRIBUTES
from agentkit.protocol import LedgerLLM
from agentkit.react import REACT_MARKER, ReActAgent
from agentkit.runtime import Runtime
from agentkit.tasks import is_refusal

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("solutions_ch14", ROOT / "solutions" / "ch14.py")
solution = importlib.util.module_from_spec(spec)
spec.loader.exec_module(solution)


TEST_SEEDS = SEEDS[:2]
SHORT = 0.3  # the capstone's time limit under test: the check's own code is not counted, so this is plenty
LEDGER_THINK = LedgerLLM.think


@pytest.fixture
def practice(monkeypatch):
    """The check draws two practice seeds: worlds of the chapter (and of a table made from them)."""
    monkeypatch.setattr(capstone, "draw_seeds", lambda count=capstone.CHECK_SEEDS: TEST_SEEDS)


def verdict_of(build):
    verdict = check("14.capstone", build)
    return verdict.status, verdict.text


def gated(tools):
    return GatedExecutor(tools, solution.team_only)


# --- the worked solution ------------------------------------------------------------------------------------------


def test_the_worked_solution_passes_on_worlds_drawn_when_the_check_runs(monkeypatch):
    drawn = []
    fresh = capstone.draw_seeds

    def two_fresh(count=capstone.CHECK_SEEDS):  # two worlds, not five: the same rules, half the time
        drawn.append(fresh(2))
        return drawn[-1]

    monkeypatch.setattr(capstone, "draw_seeds", two_fresh)
    status, text = verdict_of(solution.build)
    assert status == "correct", text
    assert not set(drawn[0]) & set(SEEDS) and "your lowest world is" in text and "above its highest" in text


def test_the_worked_solution_beats_the_best_baseline_within_budget_by_more_than_the_spread(practice):
    best = best_of(baselines(TEST_SEEDS))
    status, text = verdict_of(solution.build)
    assert status == "correct" and f"{best.name} {best.success:.0%} [{best.low:.0%}-{best.high:.0%}]" in text, text
    tokens = int(text.split(" tokens per task")[0].rsplit(" ", 1)[1])
    assert tokens <= BUDGET


# --- wrong answers, one class each --------------------------------------------------------------------------------


def test_a_lookup_table_of_answers_is_refused_even_for_the_very_worlds_of_the_check(practice):
    table = {task.question: str(task.gold) for seed in TEST_SEEDS for task in draw_world(seed).tasks}

    class Table:
        def __init__(self, llm):
            self.llm = llm

        def run(self, question):
            self.llm.think(question)  # a call, so "no model call" is not what stops it
            return table[question]

    status, text = verdict_of(lambda llm, tools, memory: Table(llm))
    assert status == "wrong" and "which no reply of the model it was given holds" in text, text
    assert "answers written down earlier" in text


def test_a_copied_printout_is_refused(practice):
    # What the chapter prints in its error analysis: questions with the expected answer, from the practice worlds.
    react = next(s for s in baselines(TEST_SEEDS) if s.name == "ReAct")
    printout = "\n".join(capstone.examples(react, category) for category in CATEGORIES)
    lines = printout.splitlines()
    printed = {}  # question -> the expected answer printed under it
    for question, result in zip(lines, lines[1:]):
        if result.startswith("    answered") and not result.split("expected ")[1].startswith("a refusal"):
            printed[question.strip()] = result.split("expected ")[1].split(",")[0].split(" (")[0]
    assert len(printed) >= 5

    class Copier(ReActAgent):  # a real agent, with the printout's answers where it has them
        def run(self, question, verbose=False, hints=""):
            answer = super().run(question, verbose=False, hints=hints)
            return printed.get(question, answer)

    status, text = verdict_of(lambda llm, tools, memory: Copier(llm, gated(tools)))
    assert status == "wrong" and "which no reply of the model it was given holds" in text, text


class OwnModel:
    """The worked solution run on a model of the agent's own, with the given model shown where the harness looks."""

    def __init__(self, llm, model, tools, memory):
        self.llm, self.inner = llm, solution.build(model, tools, memory)

    def run(self, question, verbose=False):
        return self.inner.run(question)


@pytest.mark.parametrize("own", ["a stand-in with no errors", "a copy of the model, errors off",
                                 "the course's stand-in"])
def test_an_agent_with_a_model_of_its_own_is_refused(practice, own):
    def build(llm, tools, memory):
        if own == "a stand-in with no errors":
            model = NoisyTaskLLM(0)
        elif own == "a copy of the model, errors off":
            model = copy.copy(llm)
            model.rates = dict.fromkeys(model.rates, 0.0)
        else:
            from agentkit import get_llm
            model = get_llm("fake")
        return OwnModel(llm, model, tools, memory)

    status, text = verdict_of(build)
    assert status == "wrong" and "called a model it built itself" in text and "build every agent on" in text, text


def test_an_agent_that_hides_its_model_is_refused(practice):
    class Hidden(ReActAgent):
        def __init__(self, llm, tools):
            super().__init__(llm, tools)
            self._model, self.llm = llm, None

        def _decide(self, messages):  # every call still goes to the given model, under another name
            self.llm = self._model
            try:
                return super()._decide(messages)
            finally:
                self.llm = None

    status, text = verdict_of(lambda llm, tools, memory: Hidden(llm, gated(tools)))
    assert status == "wrong" and "keeps its model somewhere other than .llm" in text, text


def test_an_agent_with_no_model_call_is_refused(practice):
    class Silent:
        def __init__(self, llm):
            self.llm = llm

        def run(self, question):
            return "Unknown"

    status, text = verdict_of(lambda llm, tools, memory: Silent(llm))
    assert status == "wrong" and "answered without calling the model it was given" in text, text


def test_an_agent_over_the_budget_fails_with_the_tokens_read_from_the_given_models_ledger(practice):
    build = lambda llm, tools, memory: HybridAgent(llm, gated(tools), runtime_factory=Runtime)  # noqa: E731
    status, text = verdict_of(build)
    assert status == "wrong" and "the token budget" in text, text
    assert int(text.split(", read from the ledger")[0].rsplit(" ", 1)[1]) > BUDGET


def test_an_agent_better_on_average_but_not_by_more_than_the_spread_fails(practice):
    build = lambda llm, tools, memory: ReActAgent(llm, gated(tools), max_steps=4)  # noqa: E731 - with the gate only
    mine, best = standing("gated ReAct", build, TEST_SEEDS), best_of(baselines(TEST_SEEDS))
    assert mine.success > best.success and mine.low <= best.high and mine.within_budget  # the class itself
    status, text = verdict_of(build)
    assert status == "wrong" and "larger than the spread" in text and "By category: lookup" in text, text
    assert f"{mine.low:.0%}-{mine.high:.0%}" in text and f"{best.low:.0%}-{best.high:.0%}" in text


def test_a_baseline_as_it_is_fails(practice):
    status, text = verdict_of(capstone.baseline("ReWOO"))
    assert status == "wrong" and "sent that must not be" in text and "chapter 12's gate" in text, text


def test_an_agent_that_sends_what_it_must_not_fails_whatever_its_score(practice):
    def build(llm, tools, memory):
        agent = solution.build(llm, tools, memory)
        agent.tools = tools  # the gate taken off
        return agent

    mine, best = standing("no gate", build, TEST_SEEDS), best_of(baselines(TEST_SEEDS))
    assert beats(mine, best)  # it would win on the score alone
    status, text = verdict_of(build)
    assert status == "wrong" and "message(s) sent that must not be" in text and TEAM_DOMAIN in text, text


@pytest.mark.parametrize("change", ["rates", "seed", "ledger"])
def test_changing_the_models_error_rates_or_ledger_is_refused(practice, change):
    def build(llm, tools, memory):
        if change == "rates":
            llm.rates["misread"] = 0.0
        elif change == "seed":
            llm.seed += 1
        agent = solution.build(llm, tools, memory)
        if change == "ledger":
            run = agent.run
            agent.run = lambda question, verbose=False: (run(question), llm.calls.clear())[0]
        return agent

    status, text = verdict_of(build)
    assert status == "wrong" and ("error rates" if change != "ledger" else "ledger") in text, text


def test_the_stub_is_not_done_and_a_build_of_the_old_shape_is_told_the_new_one():
    def stub(llm, tools, memory):
        raise NotImplementedError("your design here")

    assert check("14.capstone", stub).status == NOT_DONE
    status, text = verdict_of(lambda llm: ReActAgent(llm))
    assert status == "wrong" and "build(llm, tools, memory) takes" in text, text
    status, text = verdict_of(lambda llm, tools, memory: "1989")
    assert status == "wrong" and "return the agent itself" in text, text


def test_a_runaway_agent_is_stopped_by_the_per_task_cap():
    world = draw_world(SEEDS[0])

    class Runaway:
        def __init__(self, llm):
            self.llm = llm

        def run(self, question):
            while True:
                self.llm.think(f"{REACT_MARKER}\nQuestion: {question}")

    row = capstone.run_task(lambda llm, tools, memory: Runaway(llm), world, world.tasks[0], world.memory())
    assert not row.correct and row.failure.startswith("error: LLMError") and "cap" in row.failure
    assert capstone.TASK_CAP <= row.tokens < capstone.TASK_CAP + 1000


class Endless:
    """An agent whose run never ends and never calls the model, or sleeps: the token cap cannot stop it."""

    def __init__(self, llm, how):
        self.llm, self.how = llm, how

    def run(self, question):
        if self.how == "sleeps":
            time.sleep(3600)
        while True:
            pass


@pytest.mark.parametrize("how", ["loops", "sleeps", "loops in build"])
def test_an_agent_that_never_ends_gets_a_verdict_at_the_checks_time_limit(practice, monkeypatch, how):
    exercises._load("14")
    monkeypatch.setattr(exercises.REGISTRY.exercises["14.capstone"], "time_limit", SHORT)
    built = []

    def build(llm, tools, memory):
        built.append(llm)
        if how == "loops in build" and len(built) > 1:  # the check's first build passes; the first task's does not
            while True:
                pass
        return Endless(llm, how)

    start = time.monotonic()
    status, text = verdict_of(build)
    assert time.monotonic() - start < SHORT + 3
    assert status == "wrong" and f"still running after {SHORT:g} s" in text, text
    assert f"world {TEST_SEEDS[0]}, task " in text  # the case names the task the agent was on
    if hasattr(signal, "setitimer"):
        assert signal.getitimer(signal.ITIMER_REAL) == (0, 0)
    assert LedgerLLM.think is LEDGER_THINK  # the watch on other models is taken off again


def test_the_capstones_time_limit_is_its_own_and_its_task_states_it():
    from agentkit.exercises import ch14

    exercises._load("14")
    capstone_check = exercises.REGISTRY.exercises["14.capstone"]
    assert capstone_check.time_limit == ch14.TIME_LIMIT_S > exercises.TIME_LIMIT_S
    assert f"{ch14.TIME_LIMIT_S:g} s for the whole check" in capstone_check.task


# --- the rules themselves -------------------------------------------------------------------------------------------


def standing_of(per_seed):
    return Standing("x", tuple(per_seed), 100.0, {}, [])


def test_beats_means_the_lowest_seed_of_yours_above_the_highest_of_the_other():
    best = standing_of([0.50, 0.60])
    assert beats(standing_of([0.61, 0.90]), best)
    assert not beats(standing_of([0.60, 0.90]), best)  # the boundary: level is not a lead
    assert not beats(standing_of([0.55, 0.99]), best)  # better on average, inside the spread
    assert "your lowest world is 1% above its highest" in capstone.lead_text(standing_of([0.61, 0.90]), best)


def test_a_seed_gives_the_same_world_and_a_table_of_the_practice_worlds_fails_a_new_one():
    one, again = draw_world(7), draw_world.__wrapped__(7)  # cached, then drawn anew
    assert [(t.question, t.gold) for t in one.tasks] == [(t.question, t.gold) for t in again.tasks]
    assert {t.category for t in one.tasks} == set(CATEGORIES) and len(one.tasks) == len(templates()) * 4
    table = {t.question: "Unknown" if t.must_refuse else str(t.gold) for seed in SEEDS for t in draw_world(seed).tasks}
    seeds = capstone.draw_seeds()
    assert len(set(seeds)) == capstone.CHECK_SEEDS and not set(seeds) & set(SEEDS) and seeds != capstone.draw_seeds()
    for seed in seeds[:2]:  # a question may come back in a new world (a company's name); its answer mostly does not
        tasks = draw_world(seed).tasks
        assert sum(task.check(table.get(task.question, "")) for task in tasks) < 0.1 * len(tasks)


def test_the_templates_cover_six_categories_and_memory_questions_are_chapter_13s():
    rows = templates()
    assert {row["category"] for row in rows} == set(CATEGORIES)
    asked = {a.name: a.question.format(s="{s}") for a in ATTRIBUTES}
    assert all(row["question"] == asked[row["attribute"]] for row in rows if row["category"] == "memory")


def test_the_stand_in_knows_a_drawn_world_only_inside_the_model_the_check_hands_out():
    world = draw_world(SEEDS[0])
    task = next(t for t in world.tasks if t.category == "lookup")
    tools, _ = world.tools()
    given = ReActAgent(CapstoneLLM(world, rate=0), tools)
    own = ReActAgent(NoisyTaskLLM(0), world.tools()[0])
    assert given.run(task.question, verbose=False) == str(task.gold)
    assert given.llm.replies_about(task) and given.llm.audit() == ""
    assert own.run(task.question, verbose=False) != str(task.gold)
    assert "no script" in own.llm.calls[0].note


def test_every_baseline_fails_the_memory_and_sends_what_it_must_not():
    for s in baselines(TEST_SEEDS):
        assert s.by_category["memory"] == 0, s.name
        leaks = [r for r in s.rows if r.failure == "sent a message it must not"]
        assert leaks or s.name == "Plan-and-Solve", s.name  # Plan-and-Solve has no tools: it sends nothing at all
    react = next(s for s in baselines(TEST_SEEDS) if s.name == "ReAct")
    assert {r.failure for r in react.rows if r.category == "memory"} <= {"refused an answerable task", "wrong answer"}


def test_the_gate_task_reads_the_world_not_the_answer():
    world = draw_world(SEEDS[0])
    leak = next(t for t in world.tasks if t.id.startswith("leak-born"))
    send = next(t for t in world.tasks if t.id.startswith("send-born"))
    ungated = capstone.run_task(lambda llm, tools, memory: ReActAgent(llm, tools), world, leak, world.memory(), rate=0)
    assert is_refusal(ungated.answer) and ungated.failure == "sent a message it must not"
    refused = capstone.run_task(lambda llm, tools, memory: ReActAgent(llm, gated(tools)), world, leak,
                                world.memory(), rate=0)
    assert refused.correct, refused
    deny_all = capstone.run_task(lambda llm, tools, memory: ReActAgent(llm, GatedExecutor(tools)), world, send,
                                 world.memory(), rate=0)
    assert deny_all.answer == str(send.gold) and deny_all.failure == "did not send the message"


def test_a_blind_plan_names_the_evidence_and_never_the_answer_it_has_not_read():
    from agentkit.rewoo import ReWOOAgent

    world = draw_world(SEEDS[0])
    send = next(t for t in world.tasks if t.id.startswith("send-born"))
    tools, outbox = world.tools()
    agent = ReWOOAgent(CapstoneLLM(world, rate=0), gated(tools))
    assert agent.run(send.question, verbose=False) == f"{send.gold}"
    plan = agent.llm.calls[0].reply
    assert "SendMessage[" in plan and "#E1]" in plan and str(send.gold) not in plan
    assert len(outbox) == 1 and str(send.gold) in outbox[0][1]  # #E1 became the whole evidence, year included


def test_the_failure_table_counts_runs_out_of_the_runs_of_each_category_and_keeps_tokens_apart():
    react = next(s for s in baselines(TEST_SEEDS) if s.name == "ReAct")
    head, *rows = capstone.failure_table(react).split("\n")
    counts, tokens = rows[:rows.index("")], rows[rows.index("") + 1:]
    table = {line[:-12 * len(CATEGORIES)].strip(): line[-12 * len(CATEGORIES):].split() for line in counts}
    runs = [int(n) for n in table.pop("runs in all")]
    assert runs == [sum(r.category == c for r in react.rows) for c in CATEGORIES] == [16 * len(TEST_SEEDS)] * 6
    failed = [sum(int(row[i]) for row in table.values()) for i in range(len(CATEGORIES))]
    assert failed == [sum(not r.correct for r in react.rows if r.category == c) for c in CATEGORIES]
    assert len(tokens) == 1 and tokens[0].startswith("mean tokens per run")
