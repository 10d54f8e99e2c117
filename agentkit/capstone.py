"""The capstone: your agent, on worlds drawn when it is checked, through the model it is given, under a budget.

The rules, which the check (exercise 14.capstone) applies and this module implements:

* **Tasks**: per seed, `draw_world(seed)` (agentkit.capstone_world) invents people, companies and a team's
  memories, and fills every template of data/capstone_tasks.jsonl from them (six categories). The check
  draws its seeds when it runs, so no answer exists before it; SEEDS are the practice seeds.
* **The agent**: `build(llm, tools, memory)` returns an object with `.run(question)` and `.llm`, the model
  it was given. It is built afresh for each task with a fresh `CapstoneLLM` (the stand-in at RATE errors
  per reply on each of chapter 09's knobs, knowing this world's tasks), fresh `tools` (Search, Calculate,
  and SendMessage, whose effect is "send") and the team's long-term memory (a MemoryStore, one per world).
* **Budget**: the mean, over tasks, of prompt plus completion tokens of every call to the given model, as
  its ledger (`.calls`) records them: at most BUDGET. One task may spend at most TASK_CAP; past it the
  model refuses every call (a loop that never stops ends there).
* **Time**: the check runs every build and every run inside its clock (`clock`, the check's learner_code):
  a loop that never calls the model, or a sleep, ends as a verdict when the check's time limit is spent.
* **A run counts** when it finished, its answer passes the task's checker, the answer is the model's (it is
  in a reply the model gave about this task), and the world is as the task needs (one message with the
  answer to the team address asked for; nothing sent otherwise).
* **Refused outright** (`Refused`, with `strict=True`): an agent that calls another model, makes no call on
  a task, keeps its model anywhere but `.llm`, changes the model's ledger or error rates, or returns an
  answer no reply of the model holds. The check also refuses any message to an address outside TEAM_DOMAIN.
* **Beats**: the lowest world (seed) of yours is above the highest world of the other: a lead larger than
  the spread of either over the worlds. The baseline to beat is the best of the seven within the budget.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import io
import secrets
import statistics
from dataclasses import dataclass
from typing import Callable, Optional

from .capstone_world import CATEGORIES, TEAM_DOMAIN, World, draw_world
from .instruments import NoisyTaskLLM
from .paradigms import PARADIGMS
from .protocol import LedgerLLM, LLMError, prompt_text
from .scripts import course_script
from .scripts import memory as memory_script
from .scripts import tasks as tasks_script
from .scripts.key_paths import knowing, task_in
from .tasks import Task, is_refusal, last_number, normalise, numbers_in
from .text import shorten

RATE = 0.1
SEEDS = (0, 1, 2, 3, 4)  # practice seeds: the chapter's figures; the check draws its own
CHECK_SEEDS = 5
BUDGET = 900  # mean prompt + completion tokens per task
TASK_CAP = 10 * BUDGET


class Refused(Exception):
    """The agent broke a rule that no score can make up for; the message says which, on which task."""


@functools.lru_cache(maxsize=1)
def _rules_in_order() -> tuple:
    """The course's rules, those that know the task set and the memory first (the first match answers: same replies,
    fewer rules tried)."""
    first = [*tasks_script.RULES, *memory_script.RULES]
    return (*first, *[rule for rule in course_script() if all(rule is not f for f in first)])


class CapstoneLLM(NoisyTaskLLM):
    """The stand-in at the capstone's error rate, knowing one drawn world's tasks, with an audit of its own calls."""

    def __init__(self, world: World, rate: float = RATE, cap: int = TASK_CAP) -> None:
        super().__init__(rate, seed=world.seed)
        self.rules = list(_rules_in_order())
        self.__known, self.__cap = world.known(), cap
        self.__settings = (dict(self.rates), self.seed)
        self.__spent = [0, 0]  # calls and tokens, counted apart from the public ledger
        self.__replies: list = []  # (task id, reply) of every reply the model gave about a task of this world

    def _answer(self, messages) -> tuple:
        with knowing(self.__known):
            reply, note = super()._answer(messages)
            task = task_in(prompt_text(messages))
        by_rule = note.startswith(("rule: tasks:", "rule: memory-answer"))
        if by_rule and isinstance(reply, str) and self.__known.holds(task):
            self.__replies.append((task.id, reply))
        return reply, note

    def _count(self, usage: dict) -> None:
        self.__spent[0] += 1
        self.__spent[1] += usage["prompt_tokens"] + usage["completion_tokens"]

    def _complete(self, messages, temperature):
        self._refuse_past_cap()
        reply, usage = super()._complete(messages, temperature)
        self._count(usage)
        return reply, usage

    def _complete_with_tools(self, messages, tools, temperature, tool_choice):
        self._refuse_past_cap()
        turn, usage = super()._complete_with_tools(messages, tools, temperature, tool_choice)
        self._count(usage)
        return turn, usage

    def _refuse_past_cap(self) -> None:
        if self.__spent[1] >= self.__cap:
            raise LLMError(f"this task has spent {self.__spent[1]} tokens, past the capstone's cap of {self.__cap} "
                           "per task: the model takes no more calls")

    def audit(self) -> str:
        """What the agent changed in this model ("" when nothing): its error rates, its seed, or its ledger."""
        if (dict(self.rates), self.seed) != self.__settings:
            return "changed the model's error rates or seed"
        spent = (len(self.calls), sum(c.total_tokens for c in self.calls))
        if spent != tuple(self.__spent):
            return f"changed the model's ledger ({spent[0]} calls recorded, {self.__spent[0]} made)"
        return ""

    def replies_about(self, task: Task) -> list[str]:
        return [reply for task_id, reply in self.__replies if task_id == task.id]


def is_the_models(task: Task, answer: str, replies: list[str]) -> bool:
    """The answer is one the model gave: its number, its words, or a refusal appear in a reply about the task."""
    if task.must_refuse or is_refusal(answer):
        return any(is_refusal(reply) for reply in replies)
    if task.checker == "numeric":
        number = last_number(answer)
        return number is not None and any(number in map(float, numbers_in(reply)) for reply in replies)
    return any(normalise(answer) in " ".join(reply.split()).casefold() for reply in replies)


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


@dataclass
class Row:
    """One task of one seed, read from the given model's ledger and the world."""

    seed: int
    task_id: str
    category: str
    question: str
    answer: str
    correct: bool
    calls: int
    tokens: int
    failure: str = ""  # why it is wrong ("" when right)
    expected: str = ""  # what a right run gives, in words


def expected(world: World, task: Task) -> str:
    if task.must_refuse:
        return "a refusal, and no message sent" if task.category == "gate" else "a refusal"
    recipient = world.recipients.get(task.id)
    return f"{task.gold}, and a message with it to {recipient}" if recipient else str(task.gold)


def _run(agent, question: str) -> str:
    try:
        takes_verbose = "verbose" in inspect.signature(agent.run).parameters
    except (TypeError, ValueError):
        takes_verbose = False
    with contextlib.redirect_stdout(io.StringIO()):  # a hundred runs print nothing into the check's cell
        return str(agent.run(question, verbose=False) if takes_verbose else agent.run(question))


def _no_clock(case: str):
    return contextlib.nullcontext()


def run_task(build: Callable, world: World, task: Task, memory, rate: float = RATE, strict: bool = False,
             clock: Callable = _no_clock) -> Row:
    """Build an agent on a fresh model and tools, run it on one task, and score it; `strict` raises Refused.
    `clock(case)` is a context manager around everything the learner's code does (the check's time limit)."""
    llm = CapstoneLLM(world, rate)
    tools, outbox = world.tools()
    agent, error, holds = None, "", True
    with _watching_models(llm) as others:
        try:
            with clock(f"world {world.seed}, task {task.id!r}: {task.question}"):
                agent = build(llm, tools, memory)
                holds = getattr(agent, "llm", None) is llm  # read again after the run, which may change it
                answer = _run(agent, task.question)
                stop = getattr(agent, "stop_reason", "") or "finished"
                holds = getattr(agent, "llm", None) is llm
        except (Exception, SystemExit) as e:  # noqa: BLE001 - the agent's fault is a row, not a crash
            answer, stop, error = "", "error", f"{type(e).__name__}: {e}"
    where = f"on task {task.id!r} ({task.question!r}) your agent"
    broken = (f"called a model it built itself ({', '.join(sorted(set(others)))})" if others else
              llm.audit() or
              ("answered without calling the model it was given" if not llm.calls and not error else "") or
              ("keeps its model somewhere other than .llm" if agent is not None and not holds else ""))
    right = not error and stop == "finished" and task.check(answer)
    if right and not broken and not is_the_models(task, answer, llm.replies_about(task)):
        broken = f"answered {answer!r}, which no reply of the model it was given holds"
    if broken and strict:
        raise Refused(f"{where} {broken}.")
    failure = _failure(world, task, answer, stop, error, outbox, broken)
    return Row(world.seed, task.id, task.category, task.question, answer, not failure, len(llm.calls),
               sum(c.total_tokens for c in llm.calls), failure, expected(world, task))


def _failure(world: World, task: Task, answer: str, stop: str, error: str, outbox: list, broken: str) -> str:
    """Why the run is wrong, the gravest reason first ("" when it is right)."""
    if broken:
        return "broke a rule: " + broken
    if any(not recipient.endswith("@" + TEAM_DOMAIN) for recipient, _ in outbox):
        return "sent a message it must not"
    if error:
        return "error: " + error
    if stop != "finished":
        return f"stopped: {stop}"
    if not world.sent_right(task, outbox):
        return "sent a wrong message" if outbox else "did not send the message"
    if task.check(answer):
        return ""
    if task.must_refuse:
        return "answered the impossible"
    return "refused an answerable task" if is_refusal(answer) else "wrong answer"


@dataclass
class Standing:
    """One agent over the seeds: success per seed, mean tokens per task, success by category, and its rows."""

    name: str
    per_seed: tuple
    tokens: float
    by_category: dict
    rows: list

    @property
    def success(self) -> float:
        return statistics.fmean(self.per_seed)

    @property
    def low(self) -> float:
        return min(self.per_seed)

    @property
    def high(self) -> float:
        return max(self.per_seed)

    @property
    def within_budget(self) -> bool:
        return self.tokens <= BUDGET

    def line(self) -> str:
        over = "" if self.within_budget else "  over budget"
        return (f"{self.name:<22} {self.success:5.0%}  [{self.low:.0%}-{self.high:.0%}]  "
                f"{self.tokens:6.0f} tokens/task{over}")


def standing(name: str, build: Callable, seeds=SEEDS, rate: float = RATE, strict: bool = False,
             clock: Callable = _no_clock) -> Standing:
    """Score `build` on the world of each seed (one fresh memory per seed, one fresh model and tools per task)."""
    rows, per_seed = [], []
    for seed in seeds:
        world = draw_world(seed)
        memory = world.memory()
        mine = [run_task(build, world, task, memory, rate, strict, clock) for task in world.tasks]
        per_seed.append(sum(r.correct for r in mine) / len(mine))
        rows += mine
    by_category = {c: statistics.fmean(r.correct for r in rows if r.category == c) for c in CATEGORIES}
    return Standing(name, tuple(per_seed), statistics.fmean(r.tokens for r in rows), by_category, rows)


def baseline(name: str) -> Callable:
    """The course paradigm `name` as it is, as a capstone build: it ignores the memory and runs every tool ungated."""
    make = PARADIGMS[name]
    return lambda llm, tools, memory: make(llm=llm, tools=tools)


@functools.lru_cache(maxsize=4)
def _baselines(seeds: tuple, rate: float) -> tuple:
    return tuple(standing(name, baseline(name), seeds, rate) for name in PARADIGMS)


def baselines(seeds=SEEDS, rate: float = RATE) -> list[Standing]:
    """The course's seven paradigms under the capstone's rules (computed once per process for the same seeds)."""
    return list(_baselines(tuple(seeds), rate))


def best_of(standings: list[Standing]) -> Standing:
    """The baseline to beat: the highest success within the budget (the cheaper one on a tie)."""
    return min((s for s in standings if s.within_budget), key=lambda s: (-s.success, s.tokens))


def beats(mine: Standing, other: Standing) -> bool:
    return mine.low > other.high


def lead_text(mine: Standing, other: Standing) -> str:
    """The lead, with the spread of both: mean and [lowest-highest] over the seeds."""
    gap = mine.low - other.high
    relation = f"{gap:.0%} above" if gap > 0 else f"{-gap:.0%} below" if gap < 0 else "level with"
    return (f"yours {mine.success:.0%} [{mine.low:.0%}-{mine.high:.0%}], {other.name} {other.success:.0%} "
            f"[{other.low:.0%}-{other.high:.0%}] over {len(mine.per_seed)} worlds: your lowest world is {relation} "
            f"its highest")


def draw_seeds(count: int = CHECK_SEEDS) -> tuple:
    """Fresh seeds, drawn when the check runs: worlds nobody has seen."""
    return tuple(secrets.randbelow(2**31) for _ in range(count))


# --- tables and the chart -----------------------------------------------------------------------------


def leaderboard(mine: Optional[Standing] = None, others: Optional[list] = None, ax=None) -> str:
    """The standings, best success within budget first, and (with `ax`) success against tokens with the spread."""
    rows = list(others if others is not None else baselines()) + ([mine] if mine else [])
    rows.sort(key=lambda s: (not s.within_budget, -s.success, s.tokens))
    seeds = len(rows[0].per_seed)
    lines = [f"{'agent':<22} success [lowest-highest of {seeds} worlds]   cost",
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
