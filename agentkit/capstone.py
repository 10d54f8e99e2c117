"""The capstone: your agent, on worlds drawn when it is checked, through the model it is given, under a budget.

The rules, which the check (exercise 14.capstone) applies and this module implements:

* **Two processes.** The worlds, their gold answers, the model (with its error rates), its ledger, the tools'
  backends, the team's memory and the grading live in the world's process (agentkit.capstone_server, grading
  in agentkit.capstone_grader); your kernel starts it at its first standing, keeps it idle between standings and
  reaches it only through a pipe (agentkit.capstone_client). Your kernel never holds a check's gold answer, an
  error rate or the model itself.
* **Tasks**: per seed, `draw_world(seed)` (agentkit.capstone_world) invents people, companies and a team's
  memories, and fills every template of data/capstone_tasks.jsonl from them (six categories). A check's CHECK_WORLDS
  seeds are drawn in the world's process (64 bits each) and never leave it; SEEDS are the practice seeds, which
  anyone can draw here.
* **The agent**: `build(llm, tools, memory)` returns an object with `.run(question)`. It is built afresh for each
  task with a fresh model `llm` (the stand-in at RATE errors per reply on each of chapter 09's knobs, knowing this
  world's tasks: `WorldLLM`, with its own `.calls`), fresh `tools` (Search, Calculate, and SendMessage, whose effect
  is "send") and the team's long-term memory (a MemoryStore's methods, one store per world).
* **Budget**: the mean, over tasks, of prompt plus completion tokens of every call the world's process served: at
  most BUDGET. The copy of the ledger in your kernel is yours to read or edit; the count is not. One task may spend
  at most TASK_CAP; past it the model refuses every call (a loop that never stops ends there). A check stops as
  soon as the tokens spent are more than the budget of all its tasks together.
* **Time**: the check runs every build and every run inside its clock (`clock`, the check's learner_code): a loop
  that never calls the model, or a sleep, ends as a verdict when the check's time limit is spent, and the world's
  process is ended with it.
* **A run counts** when it finished, its answer passes the task's checker, the answer is the model's (it is in a
  reply the model gave about this task), and the world is as the task needs (one message with the answer to the
  team address asked for; nothing sent otherwise).
* **Refused at once** (`Refused`, with `strict=True`), whatever the score: an agent that sends a message to an
  address outside TEAM_DOMAIN, makes no model call on a task, returns a right answer that no reply of the model
  holds, or calls another model (a LedgerLLM other than the one given: this one rule is watched in your kernel).
* **Beats the bar**: the bar is the best of the course's seven paradigms within the budget, each run behind a gate
  that lets a message go only to TEAM_DOMAIN (a baseline that sends what it must not would be refused), measured
  once over many worlds (data/capstone_bar.json, `python -m agentkit.capstone_bar`). Your mean over the check's
  worlds must be above it by more than `margin`: MARGIN_T standard errors of your mean, from the spread of your
  own worlds (at least MIN_SPREAD). An agent no better than the bar passes fewer than 1 try in 100 (simulated
  from measured worlds: 26 checks of 10,000 for the bar's own agent, in the bar's file), so checking again and
  again does not pass it.
* Out of reach of this design: the check's own code in your kernel (it relays the process's rows into a verdict)
  can be rewritten by code written to do so, and the world's process runs as your user, so a debugger attached to
  it reads everything; the boundary keeps the measurement out of your Python objects, not out of your machine.
"""
from __future__ import annotations

import contextlib
import functools
import gzip
import json
import math
import statistics
from dataclasses import dataclass, fields
from typing import Callable, Optional

from .capstone_client import WorldLLM, WorldMemory, WorldProcess, world_process, world_tools
from .capstone_grader import BUDGET, CHECK_WORLDS, RATE, TASK_CAP, run_agent  # noqa: F401 - the rules' figures
from .capstone_world import CATEGORIES, PER_TEMPLATE, TEAM_DOMAIN  # noqa: F401
from .data import DATA_DIR
from .protocol import LedgerLLM
from .text import shorten

SEEDS = (0, 1, 2, 3, 4)  # practice seeds: the chapter's figures; a check draws its own
# Student's t at 0.995 by degrees of freedom (worlds - 1): a zero lead clears it by chance in 1 try of 200.
T_995 = {1: 63.657, 2: 9.925, 3: 5.841, 4: 4.604, 5: 4.032, 6: 3.707, 7: 3.499, 8: 3.355, 9: 3.250}
MARGIN_T = T_995[CHECK_WORLDS - 1]
MIN_SPREAD = 0.02  # the smallest spread of world scores the margin assumes: five equal scores prove no lead
BAR_FILE = "capstone_bar.json"
BASELINES_FILE = "capstone_baselines.json.gz"  # the seven baselines on SEEDS at RATE: python -m agentkit.capstone_bar --baselines


class Refused(Exception):
    """The agent broke a rule that no score can make up for; the message says which, on which task."""


class OverBudget(Exception):
    """The tokens spent so far are more than the budget of every task of the standing: no run can bring them back."""

    def __init__(self, spent: int, done: int, tasks: int) -> None:
        super().__init__(f"{spent} tokens by task {done} of {tasks}, more than all {tasks} may spend ({BUDGET} a task)")
        self.spent, self.done, self.tasks = spent, done, tasks


@dataclass
class Row:
    """One task of one world, as the world's process graded it (`expected` is empty for a check's worlds)."""

    world: int
    seed: Optional[int]
    task_id: str
    category: str
    question: str
    answer: str
    correct: bool
    calls: int
    tokens: int
    failure: str = ""  # why it is wrong ("" when right)
    expected: str = ""  # what a right run gives, in words


@dataclass
class Standing:
    """One agent over the worlds: success per world, mean tokens per task, success by category, and its rows."""

    name: str
    per_world: tuple
    tokens: float
    by_category: dict
    rows: list

    @property
    def success(self) -> float:
        return statistics.fmean(self.per_world)

    @property
    def low(self) -> float:
        return min(self.per_world)

    @property
    def high(self) -> float:
        return max(self.per_world)

    @property
    def within_budget(self) -> bool:
        return self.tokens <= BUDGET

    def line(self) -> str:
        over = "" if self.within_budget else "  over budget"
        return (f"{self.name:<22} {self.success:5.0%}  [{self.low:.0%}-{self.high:.0%}]  "
                f"{self.tokens:6.0f} tokens/task{over}")


def _standing(name: str, result: dict) -> Standing:
    names = {f.name for f in fields(Row)}
    rows = [Row(**{k: v for k, v in row.items() if k in names}) for row in result["rows"]]
    return Standing(name, tuple(result["per_world"]), result["tokens"], result["by_category"], rows)


@contextlib.contextmanager
def _watching_models(given):
    """Record the type of every other model (any LedgerLLM) called while the block runs."""
    others: list[str] = []
    think, act = LedgerLLM.think, LedgerLLM.act

    def watched(method):
        @functools.wraps(method)
        def call(self, *args, **kwargs):
            if self is not given:
                others.append(type(self).__name__)
            return method(self, *args, **kwargs)
        return call

    LedgerLLM.think, LedgerLLM.act = watched(think), watched(act)
    try:
        yield others
    finally:
        LedgerLLM.think, LedgerLLM.act = think, act


def _no_clock(case: str):
    return contextlib.nullcontext()


def _run_task(world: WorldProcess, number: int, build: Callable, clock: Callable) -> tuple[dict, dict]:
    """Build the agent for task `number`, open the task, run the agent on it in this kernel and send its answer:
    the task, and the process's word on it (the rule broken, the tokens spent so far). The model serves only while
    a task is open: a build that calls it is refused."""
    llm = WorldLLM(world)
    agent, answer, stop, error = None, "", "error", ""
    with _watching_models(llm) as others:
        given = (llm, world_tools(world), WorldMemory(world))
        try:
            with clock(f"building the agent for task {number}"):
                agent = build(*given)
        except (Exception, SystemExit) as e:  # noqa: BLE001 - the agent's fault is a row, not a crash
            error = f"{type(e).__name__}: {e}"[:500]
        task = world.request("next")
        if not error:
            try:
                with clock(f"world {task['world']}, task {task['question']!r}"):
                    answer, stop = run_agent(agent, task["question"])
            except (Exception, SystemExit) as e:  # noqa: BLE001
                answer, stop, error = "", "error", f"{type(e).__name__}: {e}"[:500]
    return task, world.request("answer", answer=answer, stop=stop, error=error, others=others)


def standing(name: str, build: Callable, seeds=SEEDS, rate: float = RATE, strict: bool = False,
             clock: Callable = _no_clock, first: Optional[Callable] = None,
             per_template: int = PER_TEMPLATE) -> Standing:
    """Score `build` on the worlds of `seeds` (None: CHECK_WORLDS worlds drawn in the world's process), one fresh
    model and tools per task, one memory per world. `strict` raises Refused at the first rule broken, and OverBudget
    once the tokens spent are more than every task's budget together; `clock(case)`
    is a context manager around the learner's code; `first(build)`, if given, is called on `build` before the
    world's process starts (a check's probe: its verdict ends the standing at no cost)."""
    if first is not None:
        first(build)
    with world_process(check=seeds is None) as world:
        opened = world.request("open", seeds=None if seeds is None else list(seeds), count=CHECK_WORLDS, rate=rate,
                               per_template=per_template)
        for number in range(1, opened["tasks"] + 1):
            task, said = _run_task(world, number, build, clock)
            if said["broken"] and strict:
                raise Refused(f"on world {task['world']}, task {task['question']!r}, your agent {said['broken']}.")
            if said["spent"] > BUDGET * opened["tasks"] and strict:
                raise OverBudget(said["spent"], number, opened["tasks"])
        return _standing(name, world.request("result"))


def check_worlds() -> dict:
    """The worlds a check runs on: CHECK_WORLDS drawn in the world's process (their seeds never come here)."""
    return {"seeds": None, "per_template": PER_TEMPLATE}


@functools.lru_cache(maxsize=1)
def baselines_file() -> dict:
    """data/capstone_baselines.json.gz: what the world's process answers to `baselines` on SEEDS at RATE."""
    return json.loads(gzip.decompress((DATA_DIR / BASELINES_FILE).read_bytes()))


@functools.lru_cache(maxsize=4)
def _baselines(seeds: tuple, rate: float) -> tuple:
    shipped = baselines_file()
    if [list(seeds), rate, PER_TEMPLATE] == [shipped["seeds"], shipped["rate"], shipped["per_template"]]:
        found = shipped["standings"]  # 3,360 tasks, 10,597 model calls: about 4 s, run once, when it was written
    else:
        with world_process() as world:  # the course's own agents run there, with no pipe between them and the model
            found = world.request("baselines", seeds=list(seeds), rate=rate)
    return tuple(_standing(name, result) for name, result in found.items())


def baselines(seeds=SEEDS, rate: float = RATE) -> list[Standing]:
    """The course's seven paradigms as they are (no gate, no memory), on practice worlds: on SEEDS at RATE as the
    world's process computed them (data/capstone_baselines.json.gz), others computed now (once per process)."""
    return list(_baselines(tuple(seeds), rate))


def best_of(standings: list[Standing]) -> Standing:
    """The highest success within the budget (the cheaper one on a tie)."""
    return min((s for s in standings if s.within_budget), key=lambda s: (-s.success, s.tokens))


# --- the bar, and the margin over it ------------------------------------------------------------------


@dataclass(frozen=True)
class Bar:
    """The baseline to beat, measured once over many worlds (data/capstone_bar.json)."""

    name: str
    success: float
    worlds: int
    tokens: float


@functools.lru_cache(maxsize=1)
def bar_file() -> dict:
    """data/capstone_bar.json: the gated baselines per world, the bar, and the simulated checks."""
    return json.loads((DATA_DIR / BAR_FILE).read_text(encoding="utf-8"))


def bar() -> Bar:
    found = bar_file()["bar"]
    return Bar(found["name"], found["success"], found["worlds"], found["tokens"])


def margin(per_world) -> float:
    """How far above the bar a mean over these worlds must be: Student's t (MARGIN_T for CHECK_WORLDS worlds; past
    ten worlds, ten's, which asks more than needed) times the standard error of that mean. One world: no margin will
    do."""
    if len(per_world) < 2:
        return math.inf
    spread = max(statistics.stdev(per_world), MIN_SPREAD)
    return T_995.get(len(per_world) - 1, T_995[9]) * spread / math.sqrt(len(per_world))


def clears(per_world, bar_success: float) -> bool:
    """The mean of these world scores is above the bar by more than the margin."""
    return statistics.fmean(per_world) > bar_success + margin(per_world)


def lead_text(mine: Standing, the_bar: Bar) -> str:
    """Your mean and spread, the bar, and the margin: what the check compared."""
    need = the_bar.success + margin(mine.per_world)
    return (f"yours {mine.success:.1%} over {len(mine.per_world)} worlds (from {mine.low:.0%} to {mine.high:.0%}); "
            f"the bar {the_bar.success:.1%} ({the_bar.name}, over {the_bar.worlds} worlds) plus the margin your "
            f"spread asks, {margin(mine.per_world):.1%}: {need:.1%} to clear")


# --- tables and the chart -----------------------------------------------------------------------------


def leaderboard(mine: Optional[Standing] = None, others: Optional[list] = None, ax=None) -> str:
    """The standings, best success within budget first, and (with `ax`) success against tokens with the spread."""
    rows = list(others if others is not None else baselines()) + ([mine] if mine else [])
    rows.sort(key=lambda s: (not s.within_budget, -s.success, s.tokens))
    worlds = len(rows[0].per_world)
    lines = [f"{'agent':<22} success [lowest-highest of {worlds} worlds]   cost",
             *[s.line() + ("   <- yours" if s is mine else "") for s in rows]]
    if ax is not None:
        for s in rows:
            colour = "tab:red" if s is mine else ("tab:blue" if s.within_budget else "tab:gray")
            ax.errorbar(s.tokens, s.success, yerr=[[s.success - s.low], [s.high - s.success]], fmt="o",
                        color=colour, capsize=3)
            ax.annotate(s.name, (s.tokens, s.success), textcoords="offset points", xytext=(5, 4), fontsize=8)
        ax.axvline(BUDGET, color="black", linestyle=":", label=f"budget: {BUDGET} tokens per task")
        ax.set(xlabel="mean tokens per task", ylabel="success (share of the tasks)",
               title=f"Drawn worlds at {RATE:.0%} errors per reply (bars: lowest to highest world)", ylim=(0, 1.05))
        ax.legend(loc="lower right")
    return "\n".join(lines)


def category_table(standings: list[Standing]) -> str:
    """Success by task category, one line per agent."""
    lines = [f"{'agent':<22}" + "".join(f"{c:>12}" for c in CATEGORIES)]
    for s in standings:
        lines.append(f"{s.name:<22}" + "".join(f"{s.by_category[c]:>12.0%}" for c in CATEGORIES))
    return "\n".join(lines)


def failure_table(standing: Standing) -> str:
    """Why runs failed, by category: counts of runs, above the number of runs in each category, then, apart, the
    mean tokens a run of the category spent. The error analysis of one agent."""
    failed = [r for r in standing.rows if not r.correct]
    kinds = sorted({r.failure.split(":")[0] if r.failure.startswith(("error", "broke")) else r.failure for r in failed})
    width = max([len(k) for k in kinds] + [len("mean tokens per run")])
    lines = [f"{'why it failed':<{width}}" + "".join(f"{c:>12}" for c in CATEGORIES)]
    for kind in kinds:
        counts = [sum(1 for r in failed if r.category == c and r.failure.startswith(kind)) for c in CATEGORIES]
        lines.append(f"{kind:<{width}}" + "".join(f"{n:>12}" for n in counts))
    runs = [sum(1 for r in standing.rows if r.category == c) for c in CATEGORIES]
    lines.append(f"{'runs in all':<{width}}" + "".join(f"{n:>12}" for n in runs))
    tokens = [statistics.fmean(r.tokens for r in standing.rows if r.category == c) for c in CATEGORIES]
    lines += ["", f"{'mean tokens per run':<{width}}" + "".join(f"{t:>12.0f}" for t in tokens)]
    return "\n".join(lines)


def examples(standing: Standing, category: str, count: int = 3) -> str:
    """A few failed runs of one category, one of each kind of failure first: the question, the answer, what was
    expected, and why it failed."""
    failed = [r for r in standing.rows if not r.correct and r.category == category]
    kinds = {r.failure.split(":")[0] for r in failed}
    first = [next(r for r in failed if r.failure.split(":")[0] == kind) for kind in sorted(kinds)]
    failed = (first + [r for r in failed if all(r is not f for f in first)])[:count]
    lines = [f"{category}: the first {len(failed)} failed runs"] if failed else [f"{category}: no failed run"]
    for r in failed:
        lines += [f"  {r.question}", f"    answered {shorten(r.answer, 60)!r}; expected {r.expected} ({r.failure})"]
    return "\n".join(lines)
