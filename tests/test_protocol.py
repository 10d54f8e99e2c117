"""Any object with think(messages, temperature=0) -> str is an LLM: every agent in the package runs with one.

The agents are found, not listed: every class in agentkit/*.py with a `run` method whose constructor
takes `llm`. An agent added later is covered by a generic run; the ones below run their chapter's task.
"""
import importlib
import inspect
import pkgutil

import pytest

import agentkit
from agentkit.lessons import LessonStore
from agentkit.modes import get_llm
from agentkit.native import NativeReActAgent
from agentkit.plan import PlanAndExecuteAgent, PlanAndSolveAgent, inject_failure
from agentkit.react import ReActAgent
from agentkit.reflection import ReflectionAgent
from agentkit.reflexion import ReflexionAgent
from agentkit.scripts.plan import APPLES_QUESTION, YEARS_QUESTION
from agentkit.scripts.react import CHECKPOINT_QUESTION, SAVINGS_QUESTION
from agentkit.scripts.reflexion import TURING_QUESTION
from agentkit.tools import default_executor


class ThinkOnly:
    """The protocol and nothing else: no `.calls`. The stand-in it asks keeps its ledger to itself."""

    def __init__(self):
        self._model = get_llm(mode="fake")

    def think(self, messages, temperature=0):
        return self._model.think(messages, temperature=temperature)


def discovered_agents() -> dict:
    agents = {}
    for module_info in pkgutil.iter_modules(agentkit.__path__):
        if module_info.ispkg or module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"agentkit.{module_info.name}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if (cls.__module__ == module.__name__ and callable(getattr(cls, "run", None))
                    and "llm" in inspect.signature(cls).parameters):
                agents[name] = cls
    return agents


AGENTS = discovered_agents()


# Each recipe runs one agent on its chapter's task and returns what a learner would compare.
def react(llm, tmp_path):
    agent = ReActAgent(llm)
    return agent.run(SAVINGS_QUESTION, verbose=False), agent.stop_reason, len(agent.trace)


def plan_and_solve(llm, tmp_path):
    agent = PlanAndSolveAgent(llm)
    return agent.run(APPLES_QUESTION, verbose=False), agent.plan


def plan_and_execute(llm, tmp_path):
    tools = default_executor()
    inject_failure(tools, "Search", "Alan Turing", failures=2)  # retries and a replan: every path runs
    agent = PlanAndExecuteAgent(llm, tools)
    answer = agent.run(YEARS_QUESTION, verbose=False)
    return answer, agent.replans, [(a.step_number, a.attempt, bool(a.failure)) for a in agent.attempts]


def reflection(llm, tmp_path):
    agent = ReflectionAgent(llm=llm)
    return agent.run("Write a Python function find_primes(n) that returns the list of all primes up to and "
                     "including n.", verbose=False), agent.passed, agent.memory.rounds()


def reflexion(llm, tmp_path):
    with LessonStore(tmp_path / "lessons.sqlite3") as store:
        result = ReflexionAgent(llm, store=store).run(TURING_QUESTION, "41", verbose=True)
        return [(t.answer, t.success, t.shown, t.used) for t in result.trials], len(store)


def native(llm, tmp_path):
    # Native tool calls need act() besides think(): the bare object lends its stand-in's, and still keeps no ledger.
    if not hasattr(llm, "act"):
        llm.act = llm._model.act
    agent = NativeReActAgent(llm)
    return agent.run(CHECKPOINT_QUESTION, verbose=False), agent.stop_reason, len(agent.trace)


def pausable(llm, tmp_path):
    from agentkit.approval import GatedExecutor, deny_side_effects
    from agentkit.pausable import PausableAgent
    from agentkit.scripts.world import STANDUP_QUESTION
    from agentkit.world import World, world_executor

    world = World(tmp_path, {"plan": "Ship on Friday."})
    try:
        agent = PausableAgent(llm, GatedExecutor(world_executor(world), deny_side_effects, world.dry_run))
        status = agent.start(STANDUP_QUESTION)
        return status, agent.answer, [(d.tool, d.verdict) for d in agent.tools.ledger], world.notes()
    finally:
        world.close()


def memory(llm, tmp_path):
    from agentkit.memory import MemoryAgent
    from agentkit.memory_data import session_memories, session_tasks
    from agentkit.memory_store import MemoryStore

    store = MemoryStore()
    store.add_many(session_memories(10))
    agent = MemoryAgent(llm, store, method="keyword", k=5)
    episodes = [agent.run(task.question, task.check) for task in session_tasks(10)[:3]]
    return [(e.answer, e.success, e.cited) for e in episodes]


def member(llm, tmp_path):
    from agentkit.members import MemberAgent, member_question, member_tools

    agent = MemberAgent("worker", llm, member_tools(("Search", "Calculate")))
    question = member_question("How many years older is Steve Wozniak than Linus Torvalds?", "Search for Steve Wozniak.")
    return agent.run(question, verbose=False), agent.stop_reason, len(agent.trace)


def orchestrator(llm, tmp_path):
    from agentkit.teams import OrchestratorWorkers

    team = OrchestratorWorkers(llm)
    answer = team.run("How many years older is Steve Wozniak than Linus Torvalds?")
    return answer, team.sequential_calls, [(r.assignment, r.calls) for r in team.member_runs]


RECIPES = {"ReActAgent": react, "MemberAgent": member, "OrchestratorWorkers": orchestrator, "PausableAgent": pausable, "MemoryAgent": memory, "NativeReActAgent": native, "PlanAndSolveAgent": plan_and_solve, "PlanAndExecuteAgent": plan_and_execute,
           "ReflectionAgent": reflection, "ReflexionAgent": reflexion}


def generic(cls):
    """For an agent without a recipe: construct it with `llm` alone and run it on a question."""
    def run(llm, tmp_path):
        try:
            agent = cls(llm=llm)
            params = [p for p in inspect.signature(agent.run).parameters.values()
                      if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            if len(params) != 1:
                pytest.fail(f"{cls.__name__}.run needs {len(params)} arguments: add a recipe to RECIPES")
            kwargs = {"verbose": False} if "verbose" in inspect.signature(agent.run).parameters else {}
            answer = agent.run(APPLES_QUESTION, **kwargs)
        except Exception as e:  # the same failure with and without a ledger is fine; a different one is not
            return type(e).__name__
        return answer if isinstance(answer, (str, int, float, list, tuple, dict, type(None))) else type(answer).__name__
    return run


def test_discovery_finds_every_agent_with_a_recipe():
    assert set(RECIPES) <= set(AGENTS), "an agent was renamed or lost its llm parameter"


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_every_agent_runs_the_same_with_an_llm_that_keeps_no_ledger(name, tmp_path, capsys):
    recipe = RECIPES.get(name) or generic(AGENTS[name])
    (tmp_path / "ledger").mkdir()
    (tmp_path / "bare").mkdir()
    with_ledger = recipe(get_llm(mode="fake"), tmp_path / "ledger")
    bare = ThinkOnly()
    assert recipe(bare, tmp_path / "bare") == with_ledger
    assert bare._model.calls, "the agent never asked the LLM, so this proves nothing"


def test_without_a_ledger_the_ledger_views_are_empty_or_say_so(tmp_path, capsys):
    agent = ReActAgent(ThinkOnly())
    agent.run(SAVINGS_QUESTION, verbose=False)
    assert agent.run_calls == []
    executor = PlanAndExecuteAgent(ThinkOnly())
    executor.run(YEARS_QUESTION, verbose=False)
    assert [a.llm_calls for a in executor.attempts] == [0] * len(executor.attempts)
    capsys.readouterr()
    with LessonStore(tmp_path / "lessons.sqlite3") as store:
        result = ReflexionAgent(ThinkOnly(), store=store).run(TURING_QUESTION, "41")
    assert all(trial.calls == [] and trial.prompt == "" for trial in result.trials)
    printed = capsys.readouterr().out
    assert "LLM calls: not recorded" in printed and "LLM calls: 0" not in printed
