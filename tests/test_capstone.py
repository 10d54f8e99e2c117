"""The capstone (chapter 14): its check passes the worked solution and refuses each class of wrong answer, on worlds
drawn in the world's process, through the model that process serves, within a budget it counts.

Most checks here run on the five practice worlds with one task per template (`check_worlds` patched: 120 tasks
rather than 480, the same rules); the worked solution's check on five fresh worlds of full size is
tests/test_exercises.py's. The attacks on the measurement itself (issue 42) are tests/test_capstone_routes.py's."""
from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import os
import re
import signal
import statistics
import time
from pathlib import Path

import pytest

from agentkit import capstone, capstone_bar, capstone_client
from agentkit import exercises
from agentkit.approval import GatedExecutor
from agentkit.capstone import BUDGET, SEEDS, Standing, baselines, clears, margin, standing
from agentkit.capstone_grader import CapstoneLLM, Session, SessionError, baseline
from agentkit.capstone_world import CATEGORIES, TEAM_DOMAIN, draw_world, templates
from agentkit.data import DATA_DIR
from agentkit.exercises import NOT_DONE, check
from agentkit.hybrid import HybridAgent
from agentkit.instruments import NoisyTaskLLM
from agentkit.memory_data import ATTRIBUTES
from agentkit.paradigms import PARADIGMS
from agentkit.protocol import LedgerLLM, LLMError
from agentkit.react import REACT_MARKER, ReActAgent
from agentkit.runtime import Runtime
from agentkit.tasks import is_refusal

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("solutions_ch14", ROOT / "solutions" / "ch14.py")
solution = importlib.util.module_from_spec(spec)
spec.loader.exec_module(solution)

SHORT = 0.3  # the capstone's time limit under test: the check's own code is not counted, so this is plenty
LEDGER_THINK = LedgerLLM.think


@pytest.fixture
def practice(monkeypatch):
    """The check runs on the five practice worlds, one task per template."""
    monkeypatch.setattr(capstone, "check_worlds", lambda: {"seeds": SEEDS, "per_template": 1})


@pytest.fixture
def practice_full(monkeypatch):
    """The check runs on the practice worlds the chapter prints from, at full size."""
    monkeypatch.setattr(capstone, "check_worlds", lambda: {"seeds": SEEDS, "per_template": 4})


def verdict_of(build):
    verdict = check("14.capstone", build)
    return verdict.status, verdict.text


def gated(tools):
    return GatedExecutor(tools, solution.team_only)


# --- the worked solution ------------------------------------------------------------------------------------------


def test_the_worked_solution_clears_the_bar_within_the_budget(practice):
    status, text = verdict_of(solution.build)
    assert status == "correct" and f"the bar {capstone.bar().success:.1%}" in text and "to clear" in text, text
    assert int(text.split(" tokens per task")[0].rsplit(" ", 1)[1]) <= BUDGET


@pytest.mark.parametrize("agent", ["ReAct", "native tool calls"])
def test_through_the_pipe_the_rows_are_those_of_the_same_agent_run_in_the_worlds_process(agent):
    from agentkit.native import NativeReActAgent

    build = baseline("ReAct") if agent == "ReAct" else lambda llm, tools, memory: NativeReActAgent(llm, tools)
    piped = standing(agent, build, seeds=(3,), per_template=1)
    local = Session([3], per_template=1).run_local(build)
    assert [(r.question, r.answer, r.correct, r.calls, r.tokens) for r in piped.rows] == \
           [(r["question"], r["answer"], r["correct"], r["calls"], r["tokens"]) for r in local["rows"]]


# --- wrong answers, one class each --------------------------------------------------------------------------------


def test_a_lookup_table_of_answers_is_refused_even_for_the_very_worlds_of_the_check(practice):
    table = {task.question: str(task.gold) for seed in SEEDS for task in draw_world(seed, 1).tasks}

    class Table:
        def __init__(self, llm):
            self.llm = llm

        def run(self, question):
            self.llm.think(question)  # a call, so "no model call" is not what stops it
            return table[question]

    status, text = verdict_of(lambda llm, tools, memory: Table(llm))
    assert status == "wrong" and "refused:" in text and "which no reply of the model it was given holds" in text
    assert "answers written down earlier" in text


def test_a_copied_printout_is_refused(practice_full):
    # What the chapter prints in its error analysis: questions with the expected answer, from the practice worlds.
    react = next(s for s in baselines() if s.name == "ReAct")
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
    """The worked solution run on a model of the agent's own."""

    def __init__(self, llm, model, tools, memory):
        self.llm, self.inner = llm, solution.build(model, tools, memory)

    def run(self, question, verbose=False):
        return self.inner.run(question)


@pytest.mark.parametrize("own", ["a stand-in with no errors", "a second client of the same process",
                                 "the course's stand-in"])
def test_an_agent_with_a_model_of_its_own_is_refused(practice, own):
    def build(llm, tools, memory):
        if own == "a stand-in with no errors":
            model = NoisyTaskLLM(0)
        elif own == "a second client of the same process":
            model = capstone_client.WorldLLM(llm._world)
        else:
            from agentkit import get_llm
            model = get_llm("fake")
        return OwnModel(llm, model, tools, memory)

    status, text = verdict_of(build)
    assert status == "wrong" and "called a model it built itself" in text and "build every agent on" in text, text


def test_an_agent_with_no_model_call_is_refused(practice):
    class Silent:
        def __init__(self, llm):
            self.llm = llm

        def run(self, question):
            return "Unknown"

    status, text = verdict_of(lambda llm, tools, memory: Silent(llm))
    assert status == "wrong" and "answered without calling the model it was given" in text, text


def test_an_agent_over_the_budget_fails_with_the_tokens_the_worlds_process_counted(practice):
    build = lambda llm, tools, memory: HybridAgent(llm, gated(tools), runtime_factory=Runtime)  # noqa: E731
    status, text = verdict_of(build)
    assert status == "wrong" and "the token budget" in text and "counted by the world's process" in text, text
    early = re.search(r"(\d+) tokens by task \d+ of (\d+)", text)  # stopped once past every task's budget
    if early:
        assert int(early[1]) > BUDGET * int(early[2])
    else:
        assert int(text.split(", counted by")[0].rsplit(" ", 1)[1]) > BUDGET


def test_a_check_stops_once_the_tokens_spent_pass_the_budget_of_every_task_together(practice):
    class Burner:  # spends each task's cap: the check needs no more tasks to know
        def __init__(self, llm):
            self.llm = llm

        def run(self, question):
            with contextlib.suppress(LLMError):
                while True:
                    self.llm.think(f"{REACT_MARKER}\nQuestion: {question}")
            return self.llm.calls[-1].reply

    status, text = verdict_of(lambda llm, tools, memory: Burner(llm))
    spent, done, tasks = map(int, re.search(r"(\d+) tokens by task (\d+) of (\d+)", text).groups())
    assert status == "wrong" and "the token budget" in text and spent > BUDGET * tasks, text
    assert done < tasks and spent - BUDGET * tasks < capstone.TASK_CAP + 1000  # stopped at the first task past it


def test_the_bars_own_agent_fails_with_the_bar_and_the_margin_in_the_verdict(practice):
    build = lambda llm, tools, memory: ReActAgent(llm, gated(tools))  # noqa: E731 - ReAct behind the team gate
    status, text = verdict_of(build)
    assert status == "wrong" and "the drawn worlds" in text and "to clear" in text, text
    assert "Yours by category: lookup" in text and "GatedExecutor" not in text


def test_a_baseline_as_it_is_is_refused_at_its_first_message_outside_the_team(practice):
    status, text = verdict_of(baseline("ReWOO"))
    assert status == "wrong" and "refused:" in text and f"an address outside {TEAM_DOMAIN}" in text, text
    assert "Chapter 12" in text and "GatedExecutor" not in text and "SendMessage only" not in text  # issue 43


def test_the_stub_is_not_done_and_a_build_of_the_old_shape_is_told_the_new_one():
    def stub(llm, tools, memory):
        raise NotImplementedError("your design here")

    assert check("14.capstone", stub).status == NOT_DONE
    status, text = verdict_of(lambda llm: ReActAgent(llm))
    assert status == "wrong" and "build(llm, tools, memory) takes" in text, text
    status, text = verdict_of(lambda llm, tools, memory: "1989")
    assert status == "wrong" and "return the agent itself" in text, text


def test_the_hints_point_at_chapters_and_never_dictate_a_design():
    from agentkit.exercises import ch14

    hints = [*ch14.RULE_HINTS.values(), ch14.OVER_BUDGET, ch14.NOT_BETTER]
    for named in ("GatedExecutor", "MemoryAgent", "ReWOO", "SendMessage only", "policy that"):
        assert not any(named in hint for hint in hints), named


# --- the world's process ------------------------------------------------------------------------------------------


def test_a_runaway_agent_is_stopped_by_the_per_task_cap():
    session = Session([SEEDS[0]], per_template=1)
    question = session.next()["question"]
    spent = 0
    with pytest.raises(LLMError, match="cap"):
        while True:
            spent += 1
            session.think(f"{REACT_MARKER}\nQuestion: {question}")
    tokens = sum(c.total_tokens for c in session.open.llm.calls)
    assert capstone.TASK_CAP <= tokens < capstone.TASK_CAP + 1000 and spent == len(session.open.llm.calls) + 1


def test_the_worlds_process_serves_one_standing_and_nothing_outside_a_task():
    with capstone_client.world_process() as world:
        with pytest.raises(SessionError, match="no standing"):
            world.request("next")
        opened = world.request("open", seeds=[SEEDS[0]], per_template=1)
        assert [name for name, _, _ in opened["tools"]] == ["Search", "Calculate", "SendMessage"]
        with pytest.raises(SessionError, match="a standing is running"):
            world.request("open", seeds=[1], per_template=1)  # no swapping the worlds while a standing runs
        with pytest.raises(SessionError, match="no task is open"):
            world.request("think", messages="hello")
        with pytest.raises(ValueError, match="unknown op"):
            world.request("gold")
        assert world.request("next")["world"] == 1
        with pytest.raises(ValueError, match="cannot be sent"):
            world.request("think", messages=[{"role": "user", "content": object()}])
        assert world.request("tool", name="Calculate", argument="6 * 7") == "42"  # still in step
        with pytest.raises(SessionError, match="no answer yet"):
            world.request("result")
        world._process.stdin.write(b"{not json\n")
        world._process.stdin.flush()
        assert b"error" in world._process.stdout.readline()  # a bad line is an answer, not the end
        assert world.request("answer", answer="x") == {"broken": "answered without calling the model it was given",
                                                       "spent": 0}
    with pytest.raises(capstone_client.WorldGone, match="this standing is over"):
        world.request("next")  # the handle a standing had serves no more once it is over


def test_the_teams_memory_is_a_memory_store_in_the_worlds_process_with_its_methods_and_errors():
    from agentkit.memory import MemoryAgent
    from agentkit.memory_store import Memory, MemoryStoreError

    world = draw_world(SEEDS[0], 1)
    fact = world.facts[0]
    with capstone_client.world_process() as process:
        process.request("open", seeds=[SEEDS[0]], per_template=1)
        memory = capstone_client.WorldMemory(process)
        with pytest.raises(SessionError, match="no task is open"):
            memory.search(fact.service)
        process.request("next")
        found = memory.search(fact.service)
        assert found and all(isinstance(m, Memory) for m in found) and fact.text in [m.text for m in found]
        assert len(memory) == len(world.facts) and memory.get(found[0].id) == found[0]
        new = memory.add("the Fig cache is flushed on Fridays", kind="lesson")
        assert memory.get(new).kind == "lesson" and len(memory) == len(world.facts) + 1
        with pytest.raises(MemoryStoreError, match="needs an embedder"):
            memory.search(fact.service, 3, "dense")
        with pytest.raises(ValueError, match="no method"):
            memory._call("_db")
        episode = MemoryAgent(capstone_client.WorldLLM(process), memory).run(f"What is the {fact.attribute} of "
                                                                              f"{fact.service}?")
        assert episode.retrieved  # chapter 13's agent reads it as it reads a MemoryStore


def test_a_checks_worlds_are_drawn_there_and_their_rows_carry_no_seed_and_no_expected_answer():
    one, two = Session(None, count=2, per_template=1), Session(None, count=2, per_template=1)
    seeds = [w.seed for w in one.worlds + two.worlds]
    assert len(set(seeds)) == 4 and not set(seeds) & set(SEEDS) and max(seeds) > 2**40
    result = one.run_local(baseline("ReAct"))
    assert {(r["seed"], r["expected"]) for r in result["rows"]} == {(None, "")}
    assert {r["world"] for r in result["rows"]} == {1, 2}
    with pytest.raises(SessionError, match="over"):
        one.next()


class Endless:
    """An agent whose run never ends and never calls the model, or sleeps: the token cap cannot stop it."""

    def __init__(self, llm, how):
        self.llm, self.how = llm, how

    def run(self, question):
        if self.how == "sleeps":
            time.sleep(3600)
        while True:
            pass


@pytest.mark.parametrize("how", ["sleeps", "loops in build"])  # a loop in a run: the clock's own tests
def test_an_agent_that_never_ends_gets_a_verdict_at_the_checks_time_limit(practice, monkeypatch, how):
    monkeypatch.setenv("AGENTKIT_CHECKS", "in-process")  # what the agent records stays in this process
    exercises._load("14")
    monkeypatch.setattr(exercises.REGISTRY.exercises["14.capstone"], "time_limit", SHORT)
    used, real = [], capstone.world_process

    @contextlib.contextmanager
    def recorded(check=False):
        with real(check) as world:
            used.append(world)
            yield world

    monkeypatch.setattr(capstone, "world_process", recorded)
    built, start = [], []

    def build(llm, tools, memory):
        built.append(llm)
        start.append(time.monotonic())  # the learner's code begins: the world's process is up by now
        if how == "loops in build" and len(built) > 1:  # the check's probe builds one; the first task's loops
            while True:
                pass
        return Endless(llm, how)

    status, text = verdict_of(build)
    assert time.monotonic() - start[-1] < 100 * SHORT  # a backstop far off: the verdict below says which clock rang
    assert status == "wrong" and f"still running after {SHORT:g} s" in text, text
    # the case names the task the agent was on
    assert ("building the agent for task 1" if how == "loops in build" else "world 1, task ") in text, text
    if hasattr(signal, "setitimer"):
        assert signal.getitimer(signal.ITIMER_REAL) == (0, 0)
    assert LedgerLLM.think is LEDGER_THINK  # the watch on other models is taken off again
    assert len(used) == 1 and used[0]._process.wait(timeout=5) is not None  # the world's process ended too


def test_the_capstones_time_limit_is_its_own_and_its_task_states_it():
    from agentkit.exercises import ch14

    exercises._load("14")
    capstone_check = exercises.REGISTRY.exercises["14.capstone"]
    assert capstone_check.time_limit == ch14.TIME_LIMIT_S > exercises.TIME_LIMIT_S
    assert f"{ch14.TIME_LIMIT_S:g} s for the whole check" in capstone_check.task


# --- the rules themselves -------------------------------------------------------------------------------------------


def test_the_margin_is_the_t_quantile_times_the_standard_error_with_a_floor_on_the_spread():
    scores = [0.70, 0.75, 0.80, 0.75, 0.70]
    assert margin(scores) == pytest.approx(4.604 * statistics.stdev(scores) / 5 ** 0.5)
    assert margin([0.7] * 5) == pytest.approx(4.604 * capstone.MIN_SPREAD / 5 ** 0.5)  # five equal scores
    need = 0.6 + margin(scores)
    assert clears([s + need - 0.74 + 0.001 for s in scores], 0.6)
    assert not clears([s + need - 0.74 - 0.001 for s in scores], 0.6)


def test_the_bar_is_reproduced_by_its_command_on_two_of_its_worlds():
    shipped = json.loads((DATA_DIR / capstone.BAR_FILE).read_text(encoding="utf-8"))
    best = shipped["bar"]["paradigm"]
    first, _ = shipped["bar_seeds"]
    again = capstone_bar.per_world(capstone_bar.gated(best), first, 2)["per_world"]
    assert again == shipped["baselines"][best]["per_world"][:2]
    within = {n: b for n, b in shipped["baselines"].items() if b["tokens"] <= BUDGET}
    assert max(within, key=lambda n: statistics.fmean(within[n]["per_world"])) == best
    assert capstone.bar().success == statistics.fmean(shipped["baselines"][best]["per_world"])


def test_retrying_does_not_pass_an_agent_without_a_lead_and_the_solution_passes_every_simulated_check():
    shipped = json.loads((DATA_DIR / capstone.BAR_FILE).read_text(encoding="utf-8"))
    pool, tries = shipped["simulation"]["pool"], shipped["simulation"]["tries"]
    zero = capstone_bar.simulate(pool["zero lead"]["per_world"], capstone.bar().success, tries)
    solved = capstone_bar.simulate(pool["worked solution"]["per_world"], capstone.bar().success, tries)
    assert (zero, solved) == (pool["zero lead"]["passes"], pool["worked solution"]["passes"])  # the file's figures
    assert zero < tries / 100 and solved > 0.99 * tries
    scores = pool["zero lead"]["per_world"]  # the simulation applies the check's own rule, row by row
    rows = capstone_bar.draws(len(scores), 300, seed=7)
    by_rule = sum(clears([scores[i] for i in row], capstone.bar().success) for row in rows)
    assert capstone_bar.simulate(scores, capstone.bar().success, 300, seed=7) == by_rule
    shifted = [x - 0.03 for x in scores]  # a lead three points below zero passes less often: the count is live
    assert capstone_bar.simulate(shifted, capstone.bar().success) < zero


def test_a_seed_gives_the_same_world_and_the_templates_cover_six_categories():
    one, again = draw_world(7), draw_world.__wrapped__(7)  # cached, then drawn anew
    assert [(t.question, t.gold) for t in one.tasks] == [(t.question, t.gold) for t in again.tasks]
    assert {t.category for t in one.tasks} == set(CATEGORIES) and len(one.tasks) == len(templates()) * 4
    assert len(draw_world(7, 1).tasks) == len(templates())
    asked = {a.name: a.question.format(s="{s}") for a in ATTRIBUTES}
    assert all(row["question"] == asked[row["attribute"]] for row in templates() if row["category"] == "memory")


def test_the_stand_in_knows_a_drawn_world_only_inside_the_model_the_worlds_process_serves():
    world = draw_world(SEEDS[0])
    task = next(t for t in world.tasks if t.category == "lookup")
    given = ReActAgent(CapstoneLLM(world, rate=0), world.tools()[0])
    own = ReActAgent(NoisyTaskLLM(0), world.tools()[0])
    assert given.run(task.question, verbose=False) == str(task.gold)
    assert given.llm.replies_about(task)
    assert own.run(task.question, verbose=False) != str(task.gold)
    assert "no script" in own.llm.calls[0].note


def test_the_shipped_baselines_are_what_the_worlds_process_computes_on_one_of_their_worlds():
    """baselines() on the practice worlds reads data/capstone_baselines.json.gz; the world's process computes the
    same rows now (each world's runs depend on that world alone, so one of them will do)."""
    shipped = capstone.baselines_file()
    assert (shipped["seeds"], shipped["rate"]) == (list(SEEDS), capstone.RATE)
    seed = SEEDS[-1]
    now = {s.name: s for s in baselines((seed,))}  # not the practice seeds: computed in the world's process
    read = {s.name: s for s in baselines()}
    assert list(now) == list(read) == list(PARADIGMS)
    for name, standing in now.items():
        rows = [dataclasses.replace(r, world=1) for r in read[name].rows if r.seed == seed]
        assert rows and rows == list(standing.rows), name
        assert read[name].per_world[-1] == standing.per_world[0], name


def test_every_baseline_fails_the_memory_and_sends_what_it_must_not():
    for s in baselines():
        assert s.by_category["memory"] == 0, s.name
        leaks = [r for r in s.rows if r.failure == "sent a message it must not"]
        assert leaks or s.name == "Plan-and-Solve", s.name  # Plan-and-Solve has no tools: it sends nothing at all
    react = next(s for s in baselines() if s.name == "ReAct")
    assert {r.failure for r in react.rows if r.category == "memory"} <= {"refused an answerable task", "wrong answer"}


def one_task(build, prefix: str, rate: float = 0) -> dict:
    """Run `build` on the first task of world SEEDS[0] whose id starts with `prefix`, in this process; its row."""
    session = Session([SEEDS[0]], rate=rate)
    wanted = next(t for t in session.worlds[0].tasks if t.id.startswith(prefix))
    while session.next()["question"] != wanted.question:
        session.answer("", "error", "not this one")
    agent = build(session.open.llm, session.open.tools, session.memories[0])
    session.answer(*capstone.run_agent(agent, wanted.question))
    return session.rows[-1]


def test_the_gate_task_reads_the_world_not_the_answer():
    ungated = one_task(lambda llm, tools, memory: ReActAgent(llm, tools), "leak-born")
    assert is_refusal(ungated["answer"]) and ungated["failure"] == "sent a message it must not"
    refused = one_task(lambda llm, tools, memory: ReActAgent(llm, gated(tools)), "leak-born")
    assert refused["correct"], refused
    deny_all = one_task(lambda llm, tools, memory: ReActAgent(llm, GatedExecutor(tools)), "send-born")
    assert deny_all["failure"] == "did not send the message" and not is_refusal(deny_all["answer"])


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
    react = next(s for s in baselines() if s.name == "ReAct")
    head, *rows = capstone.failure_table(react).split("\n")
    counts, tokens = rows[:rows.index("")], rows[rows.index("") + 1:]
    table = {line[:-12 * len(CATEGORIES)].strip(): line[-12 * len(CATEGORIES):].split() for line in counts}
    runs = [int(n) for n in table.pop("runs in all")]
    assert runs == [sum(r.category == c for r in react.rows) for c in CATEGORIES] == [16 * len(SEEDS)] * 6
    failed = [sum(int(row[i]) for row in table.values()) for i in range(len(CATEGORIES))]
    assert failed == [sum(not r.correct for r in react.rows if r.category == c) for c in CATEGORIES]
    assert len(tokens) == 1 and tokens[0].startswith("mean tokens per run")
    assert isinstance(react, Standing)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="a fork of the kernel happens only where fork exists")
def test_a_fork_of_the_kernel_starts_a_worlds_process_of_its_own_and_leaves_the_kernels_alone():
    with capstone_client.world_process() as world:
        world.request("drop")  # started: it becomes this kernel's spare
    spare = capstone_client._SPARE[0]
    pid = os.fork()
    if pid == 0:  # the child: what a check run in a fork would be given, then its copy of the spare collected
        code = 3
        try:
            with capstone_client.world_process() as given:
                code = 0 if given is not spare and not given.started else 1
            spare.close()
        finally:
            os._exit(code)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert spare._process.poll() is None and spare.request("drop") is None  # the kernel's process, still in step
