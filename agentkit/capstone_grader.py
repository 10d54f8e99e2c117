"""The capstone's grading: the worlds of one standing, their model, ledgers, outboxes and memories, and the rows.

It runs in the world's process (agentkit.capstone_server), which the learner's kernel reaches only through a pipe
(agentkit.capstone_client). A `Session` serves one task at a time:

* `next()` opens the next task: a fresh `CapstoneLLM` (the stand-in at `rate` errors per reply, knowing this
  world's tasks), fresh tools and outbox, and the world's memory (one per world, shared by its tasks). It gives
  the question and the world's number only.
* `think`, `act`, `tool`, `memory`: one call to the open task's model, tools or memory. Every call of the model is
  on the open task's ledger, which is the only ledger the budget reads; past TASK_CAP tokens on one task the
  model refuses every call. With no task open, nothing is served.
* `answer(...)` grades the open task and closes it. It says only which rule was broken, if one was (a message to
  an address outside TEAM_DOMAIN; no call of the model on the task; a right answer that no reply of the model
  about this task holds; another model called, as the kernel reports it), and the tokens spent so far; never
  whether an answer was right: an agent that learned its grades while it runs could tune itself on them.
* `result()` gives the standing (score per world, mean tokens per task, score by category, one row per task),
  and the session takes no more calls. Seeds drawn here (`seeds=None`: a check) never leave the process, and
  their rows carry no expected answer.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import io
import secrets
import statistics
from dataclasses import dataclass
from typing import Callable, Optional

from .capstone_world import CATEGORIES, PER_TEMPLATE, TEAM_DOMAIN, World, draw_world
from .instruments import NoisyTaskLLM
from .memory_store import MemoryStore
from .paradigms import PARADIGMS
from .protocol import LLMError, prompt_text
from .scripts import course_script
from .scripts import memory as memory_script
from .scripts import tasks as tasks_script
from .scripts.key_paths import knowing, task_in
from .tasks import Task, is_refusal, last_number, normalise, numbers_in

RATE = 0.1
BUDGET = 900  # mean prompt + completion tokens per task
TASK_CAP = 10 * BUDGET
CHECK_WORLDS = 5  # worlds a check draws
MAX_WORLDS = 200


class SessionError(RuntimeError):
    """A call the session cannot serve now (no task open, one still open, the session over)."""


@functools.lru_cache(maxsize=1)
def _rules_in_order() -> tuple:
    """The course's rules, those that know the task set and the memory first (the first match answers: same replies,
    fewer rules tried)."""
    first = [*tasks_script.RULES, *memory_script.RULES]
    return (*first, *[rule for rule in course_script() if all(rule is not f for f in first)])


class CapstoneLLM(NoisyTaskLLM):
    """The stand-in at the capstone's error rate, knowing one drawn world's tasks, refusing calls past a cap."""

    def __init__(self, world: World, rate: float = RATE, cap: int = TASK_CAP) -> None:
        super().__init__(rate, seed=world.seed)
        self.rules = list(_rules_in_order())
        self.known, self.cap = world.known(), cap
        self.replies: list = []  # (task id, reply) of every reply the model gave about a task of this world

    def _answer(self, messages) -> tuple:
        with knowing(self.known):
            reply, note = super()._answer(messages)
            task = task_in(prompt_text(messages))
        by_rule = note.startswith(("rule: tasks:", "rule: memory-answer"))
        if by_rule and isinstance(reply, str) and self.known.holds(task):
            self.replies.append((task.id, reply))
        return reply, note

    def _complete(self, messages, temperature):
        self._refuse_past_cap()
        return super()._complete(messages, temperature)

    def _complete_with_tools(self, messages, tools, temperature, tool_choice):
        self._refuse_past_cap()
        return super()._complete_with_tools(messages, tools, temperature, tool_choice)

    def _refuse_past_cap(self) -> None:
        spent = sum(c.total_tokens for c in self.calls)
        if spent >= self.cap:
            raise LLMError(f"this task has spent {spent} tokens, past the capstone's cap of {self.cap} per task: "
                           "the model takes no more calls")

    def replies_about(self, task: Task) -> list[str]:
        return [reply for task_id, reply in self.replies if task_id == task.id]


def is_the_models(task: Task, answer: str, replies: list[str]) -> bool:
    """The answer is one the model gave: its number, its words, or a refusal appear in a reply about the task."""
    if task.must_refuse or is_refusal(answer):
        return any(is_refusal(reply) for reply in replies)
    if task.checker == "numeric":
        number = last_number(answer)
        return number is not None and any(number in map(float, numbers_in(reply)) for reply in replies)
    return any(normalise(answer) in " ".join(reply.split()).casefold() for reply in replies)


def expected(world: World, task: Task) -> str:
    if task.must_refuse:
        return "a refusal, and no message sent" if task.category == "gate" else "a refusal"
    recipient = world.recipients.get(task.id)
    return f"{task.gold}, and a message with it to {recipient}" if recipient else str(task.gold)


def failure(world: World, task: Task, answer: str, stop: str, error: str, outbox: list, broken: str) -> str:
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


def run_agent(agent, question: str) -> tuple[str, str]:
    """The agent's answer and its stop reason ("finished" unless it says otherwise); its printing goes nowhere."""
    try:
        takes_verbose = "verbose" in inspect.signature(agent.run).parameters
    except (TypeError, ValueError):
        takes_verbose = False
    with contextlib.redirect_stdout(io.StringIO()):  # a hundred runs print nothing into the cell
        answer = str(agent.run(question, verbose=False) if takes_verbose else agent.run(question))
    return answer, str(getattr(agent, "stop_reason", "") or "finished")


@dataclass
class _Open:
    """The task being run: its world, the model, tools and outbox made for it."""

    world: int
    task: Task
    llm: CapstoneLLM
    tools: object
    outbox: list


MEMORY_METHODS = ("search", "search_ids", "keyword", "get", "memories", "evicted", "add", "add_many",
                  "record_outcome", "retire", "__len__")


class Session:
    """The worlds of one standing, served one task at a time (see the module's docstring)."""

    def __init__(self, seeds=None, count: int = CHECK_WORLDS, rate: float = RATE,
                 per_template: int = PER_TEMPLATE) -> None:
        if not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise ValueError(f"rate must be a number between 0 and 1, got {rate!r}")
        if not isinstance(per_template, int) or not 1 <= per_template <= PER_TEMPLATE:
            raise ValueError(f"per_template must be a whole number from 1 to {PER_TEMPLATE}, got {per_template!r}")
        self.secret = seeds is None
        if self.secret:
            if not isinstance(count, int) or not 1 <= count <= MAX_WORLDS:
                raise ValueError(f"count must be a whole number from 1 to {MAX_WORLDS}, got {count!r}")
            seeds = [secrets.randbits(64) for _ in range(count)]  # 64 bits: no table of worlds can cover them
        seeds = [int(seed) for seed in seeds]
        if not 1 <= len(seeds) <= MAX_WORLDS:
            raise ValueError(f"give 1 to {MAX_WORLDS} seeds, got {len(seeds)}")
        self.rate = float(rate)
        self.worlds = [draw_world(seed, per_template) for seed in seeds]
        self.memories = [world.memory() for world in self.worlds]
        self.pending = [(i, task) for i, world in enumerate(self.worlds) for task in world.tasks]
        self.open: Optional[_Open] = None
        self.rows: list[dict] = []
        self.over = False

    def describe(self) -> dict:
        """What the kernel needs to make its stubs: the number of worlds and tasks, and each tool's name and effect."""
        tools, _ = self.worlds[0].tools()
        return {"worlds": len(self.worlds), "tasks": len(self.pending),
                "tools": [[t.name, t.description, t.effect] for t in tools.tools.values()]}

    def _task(self) -> _Open:
        if self.over:
            raise SessionError("this standing is over: its world's process serves no more calls")
        if self.open is None:
            raise SessionError("no task is open: the model, the tools and the memory serve only during a task")
        return self.open

    def next(self) -> Optional[dict]:
        """Open the next task and give its question (None when every task has been answered)."""
        if self.over:
            raise SessionError("this standing is over: its world's process serves no more calls")
        if self.open is not None:
            raise SessionError("the open task has no answer yet")
        if len(self.rows) == len(self.pending):
            return None
        index, task = self.pending[len(self.rows)]
        world = self.worlds[index]
        tools, outbox = world.tools()
        self.open = _Open(index, task, CapstoneLLM(world, self.rate), tools, outbox)
        return {"world": index + 1, "question": task.question}

    def think(self, messages, temperature: float = 0, grammar: str = "") -> dict:
        llm = self._task().llm
        reply = llm.think(messages, temperature, **({"grammar": grammar} if grammar else {}))
        return {"reply": reply, "prompt_tokens": llm.calls[-1].prompt_tokens,
                "completion_tokens": llm.calls[-1].completion_tokens}

    def act(self, messages, tools, temperature: float = 0, tool_choice=None) -> dict:
        llm = self._task().llm
        turn = llm.act(messages, tools, temperature, tool_choice)
        return {"content": turn.content, "tool_calls": [dataclasses.asdict(c) for c in turn.tool_calls],
                "prompt_tokens": llm.calls[-1].prompt_tokens, "completion_tokens": llm.calls[-1].completion_tokens}

    def tool(self, name: str, argument: str) -> str:
        return self._task().tools.run(name, argument)

    def memory(self, method: str, args=(), kwargs=None):
        """One call of the world's MemoryStore; Memory objects come back as dicts."""
        if method not in MEMORY_METHODS:
            raise ValueError(f"the team's memory has no method {method!r} here; it has {', '.join(MEMORY_METHODS)}")
        store: MemoryStore = self.memories[self._task().world]
        result = getattr(store, method)(*args, **(kwargs or {}))
        if isinstance(result, list):
            return [dataclasses.asdict(m) if dataclasses.is_dataclass(m) else m for m in result]
        return dataclasses.asdict(result) if dataclasses.is_dataclass(result) else result

    def answer(self, answer: str, stop: str = "finished", error: str = "", others=()) -> dict:
        """Grade the open task and close it: the rule it broke ("" if none), and the tokens the standing has spent so
        far (never whether the answer was right)."""
        o = self._task()
        self.open = None
        world, task, answer = self.worlds[o.world], o.task, str(answer)
        broken = (f"called a model it built itself ({', '.join(sorted(set(map(str, others))))})" if others else
                  "answered without calling the model it was given" if not o.llm.calls and not error else "")
        right = not error and stop == "finished" and task.check(answer)
        if right and not broken and not is_the_models(task, answer, o.llm.replies_about(task)):
            broken = f"answered {answer[:200]!r}, which no reply of the model it was given holds"
        why = failure(world, task, answer, stop, error, o.outbox, broken)
        self.rows.append({"world": o.world + 1, "seed": None if self.secret else world.seed, "task_id": task.id,
                          "category": task.category, "question": task.question, "answer": answer, "correct": not why,
                          "calls": len(o.llm.calls), "tokens": sum(c.total_tokens for c in o.llm.calls),
                          "failure": why, "expected": "" if self.secret else expected(world, task)})
        outside = [recipient for recipient, _ in o.outbox if not recipient.endswith("@" + TEAM_DOMAIN)]
        if outside and not broken:
            broken = f"sent a message to {outside[0]}, an address outside {TEAM_DOMAIN}"
        return {"broken": broken, "spent": sum(row["tokens"] for row in self.rows)}

    def result(self) -> dict:
        """The standing, once every task is answered; the session then serves nothing more."""
        if self.open is not None or len(self.rows) < len(self.pending):
            raise SessionError(f"{len(self.pending) - len(self.rows)} task(s) have no answer yet")
        self.over = True
        rows = self.rows
        per_world = [statistics.fmean(r["correct"] for r in rows if r["world"] == i + 1)
                     for i in range(len(self.worlds))]
        by_category = {c: statistics.fmean(r["correct"] for r in rows if r["category"] == c) for c in CATEGORIES}
        return {"per_world": per_world, "tokens": statistics.fmean(r["tokens"] for r in rows),
                "by_category": by_category, "rows": rows}

    def run_local(self, build: Callable) -> dict:
        """Run a build of the course's own code here, on every task, and give the standing (no pipe in between)."""
        while self.next() is not None:
            o = self.open
            try:
                agent = build(o.llm, o.tools, self.memories[o.world])
                answer, stop = run_agent(agent, o.task.question)
                error = ""
            except Exception as e:  # noqa: BLE001 - a run that fails is a row
                answer, stop, error = "", "error", f"{type(e).__name__}: {e}"
            self.answer(answer, stop, error)
        return self.result()


def baseline(name: str) -> Callable:
    """The course paradigm `name` as it is, as a capstone build: it ignores the memory and runs every tool ungated."""
    make = PARADIGMS[name]
    return lambda llm, tools, memory: make(llm=llm, tools=tools)


def baselines(seeds, rate: float = RATE, per_template: int = PER_TEMPLATE) -> dict:
    """{paradigm: standing} of the course's seven paradigms as they are, on the worlds of `seeds`."""
    return {name: Session(seeds, rate=rate, per_template=per_template).run_local(baseline(name)) for name in PARADIGMS}
