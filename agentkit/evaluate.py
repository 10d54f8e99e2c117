"""Run an agent over a labelled task set and measure it: one row per task, then a summary.

`evaluate(make_agent, tasks, workers=1)` calls `make_agent()` once per task for a fresh
agent (anything with `run(question, verbose=False) -> str` and an `.llm`), runs the tasks
through `agentkit.batch.run_batch` (at most `workers` at once, rows in task order, a
progress bar) and reads every figure from the ledgers:

* calls, prompt and completion tokens: the agent's LLM ledger, entries added by this run;
* tool calls: the executor's log (`agent.tools.log`), when the agent has tools;
* steps: `steps_of(agent)`; stop reason: `agent.stop_reason` ("finished" if it has none);
* an exception (SystemExit included) becomes a row with `error` set and stop reason "error";
  its calls still count;
* correct: the task's checker accepts the answer of a finished run, or the fallback answer
  (flagged `unverified`) of a stopped one; never the text of a stop message.

`read_run(task, agent, ...)` is that reading on its own, for a run made elsewhere (chapter
08's suites read their rows with it).

Two tasks running at once must not share an LLM client or an executor (one ledger cannot
be split between them): that row gets an error saying so. A run is an *early stop* when
its stop reason is neither "finished" nor "error" (max_steps, the repeat fuse, a guard, a
replan budget, a round limit). With `review=True` each early stop is run again with
`make_agent(extra_steps=2)`, the same agent with two more steps, and the row records
whether that run was right (None when not reviewed).

Ctrl-C stops an evaluation at once and raises `EvaluationInterrupted` (a KeyboardInterrupt)
whose `.report` holds the rows of the tasks that had finished (None if none had), marked
`interrupted`; in Jupyter the exception is `sys.last_value`.

`summarize(runs)` is arithmetic on rows only: success rate, mean and P95 steps (numpy's
default, linear percentile), the share stopped by max_steps, means of calls, tool calls and
tokens per task, failure categories and success per category. `compare(before, after)` lines
two reports up task by task.
"""
from __future__ import annotations

import inspect
import threading
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

from .batch import BatchInterrupted, run_batch
from .llm import ledger, ledger_totals
from .tasks import Task, is_refusal, parse_call
from .text import shorten

EXTRA_STEPS = 2


@dataclass
class Run:
    """One task, run once: what came out, whether it was right, and what it cost."""

    task_id: str
    category: str
    checker: str
    answer: str
    correct: bool
    steps: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    tool_calls: int
    stop_reason: str
    error: str = ""
    solved_with_two_more_steps: Optional[bool] = None
    key_path_found: Optional[float] = None  # share of the task's key-path calls the run made (None: no key path)
    wall_s: float = field(default=0.0, compare=False)  # machine-dependent, never compared

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def early_stop(self) -> bool:
        return self.stop_reason not in ("finished", "error")

    @property
    def failure(self) -> str:
        """Why the run is wrong ("" when it is right)."""
        if self.correct:
            return ""
        if self.error:
            return "error"
        if self.early_stop:
            return f"stopped: {self.stop_reason}"
        if self.checker == "refuse":
            return "answered the impossible"
        if is_refusal(self.answer):
            return "refused an answerable task"
        return "wrong answer"


def steps_of(agent) -> int:
    """Steps of the last run: `.steps` if the agent counts them (ReWOO: plan lines; hybrids: inner
    ReAct turns), else `len(.trace)` (ReAct, Act-only), else the inner ReAct turns of every attempt
    (Plan-and-Execute), else `len(.results)` (Plan-and-Solve: executor calls), else 0."""
    if hasattr(agent, "steps"):
        return int(agent.steps)
    if hasattr(agent, "trace"):
        return len(agent.trace)
    if hasattr(agent, "attempts"):
        return sum(attempt.llm_calls for attempt in agent.attempts)
    if hasattr(agent, "results"):
        return len(agent.results)
    return 0


class _Claims:
    """LLM clients and executors in use by a running task, so two tasks never share one."""

    def __init__(self) -> None:
        self.lock, self.held = threading.Lock(), {}

    def take(self, *objects) -> None:
        with self.lock:
            if any(id(o) in self.held for o in objects if o is not None):
                raise ValueError("make_agent returned an LLM client or tool executor that another running task "
                                 "is using; one ledger cannot be split between tasks that run at once. Build a "
                                 "new client and executor inside make_agent.")
            self.held.update({id(o): o for o in objects if o is not None})

    def give_back(self, *objects) -> None:
        with self.lock:
            for o in objects:
                self.held.pop(id(o), None)


def _call_key(tool: str, argument: str) -> tuple:
    return tool.lower(), "".join(str(argument).split()).casefold()


def key_path_found(task: Task, tool_calls: list) -> Optional[float]:
    """The share of the task's key-path calls that the run made and that worked (None when it has no key path).

    A call counts once its tool and input match, case and spaces aside: the path, not only the answer."""
    if not task.key_path:
        return None
    try:
        wanted = [_call_key(*parse_call(step)) for step in task.key_path]
    except ValueError:
        return None  # a key path not written as Tool[input] steps (a hand-made task) scores nothing
    made = {_call_key(c.tool, c.argument) for c in tool_calls if c.ok}
    return sum(w in made for w in wanted) / len(wanted)


def read_run(task: Task, agent, answer: str, stop_reason: str, calls: list, tool_calls: list,
             error: str = "") -> Run:
    """The row of one finished run: `calls` and `tool_calls` are the ledger entries the run added."""
    spent = ledger_totals(calls)
    # A stopped run's "answer" is the loop's own stop message (a number in it must not score), unless
    # the agent gave a fallback answer, flagged unverified; a refusal counts only from a finished run.
    answered = stop_reason == "finished" or (getattr(agent, "unverified", False) and not task.must_refuse)
    return Run(
        task_id=task.id, category=task.category, checker=task.checker, answer=answer,
        correct=not error and answered and task.check(answer),
        steps=steps_of(agent), calls=spent["calls"], prompt_tokens=spent["prompt_tokens"],
        completion_tokens=spent["completion_tokens"], tool_calls=len(tool_calls), stop_reason=stop_reason,
        error=error, key_path_found=key_path_found(task, tool_calls),
    )


def run_task(make_agent: Callable, task: Task, extra_steps: int = 0, claims: Optional[_Claims] = None) -> Run:
    """Build an agent, run it on one task, and read the row from its ledgers. Never raises for the agent's faults."""
    agent = make_agent(extra_steps=extra_steps) if extra_steps else make_agent()
    llm, tools = getattr(agent, "llm", None), getattr(agent, "tools", None)
    claims = claims or _Claims()
    claims.take(llm, tools)
    try:
        calls_before = len(ledger(llm))
        log_before = len(tools.log) if tools is not None else 0
        error = ""
        try:
            answer = str(agent.run(task.question, verbose=False))
            stop_reason = getattr(agent, "stop_reason", "") or "finished"
        except (Exception, SystemExit) as e:  # noqa: BLE001 - a bad plan, a dead server or sys.exit is a row, not a crash
            answer, stop_reason, error = "", "error", f"{type(e).__name__}: {e}"
        tool_calls = tools.log[log_before:] if tools is not None else []
        return read_run(task, agent, answer, stop_reason, ledger(llm)[calls_before:], tool_calls, error)
    finally:
        claims.give_back(llm, tools)


def takes_extra_steps(make_agent: Callable) -> bool:
    try:
        parameters = inspect.signature(make_agent).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "extra_steps" or p.kind is p.VAR_KEYWORD for p in parameters)


@dataclass
class Summary:
    tasks: int
    success_rate: float
    mean_steps: float
    p95_steps: float
    max_steps_share: float
    early_stops: int
    solved_with_two_more_steps: int
    mean_calls: float
    mean_tool_calls: float
    mean_prompt_tokens: float
    mean_completion_tokens: float
    mean_tokens: float
    failures: dict  # category of failure -> how many runs
    success_by_category: dict  # task category -> success rate
    key_path_share: Optional[float] = None  # mean share of the key path found, over runs whose task has one
    right_off_path: int = 0  # right answers from runs that missed part of the key path


def summarize(runs: list[Run]) -> Summary:
    """The summary of a list of rows: pure arithmetic, nothing is run."""
    import numpy as np

    if not runs:
        raise ValueError("summarize needs at least one run")
    n = len(runs)

    def mean(values) -> float:
        return sum(values) / n

    categories = sorted({r.category for r in runs})
    pathed = [r.key_path_found for r in runs if r.key_path_found is not None]
    return Summary(
        tasks=n,
        success_rate=mean(r.correct for r in runs),
        mean_steps=mean(r.steps for r in runs),
        p95_steps=float(np.percentile([r.steps for r in runs], 95)),
        max_steps_share=mean(r.stop_reason == "max_steps" for r in runs),
        early_stops=sum(r.early_stop for r in runs),
        solved_with_two_more_steps=sum(r.solved_with_two_more_steps is True for r in runs),
        mean_calls=mean(r.calls for r in runs),
        mean_tool_calls=mean(r.tool_calls for r in runs),
        mean_prompt_tokens=mean(r.prompt_tokens for r in runs),
        mean_completion_tokens=mean(r.completion_tokens for r in runs),
        mean_tokens=mean(r.total_tokens for r in runs),
        failures=dict(sorted(Counter(r.failure for r in runs if not r.correct).items())),
        success_by_category={c: sum(r.correct for r in runs if r.category == c) /
                             sum(r.category == c for r in runs) for c in categories},
        key_path_share=sum(pathed) / len(pathed) if pathed else None,
        right_off_path=sum(r.correct and r.key_path_found is not None and r.key_path_found < 1 for r in runs),
    )


@dataclass
class Report:
    name: str
    runs: list[Run]
    summary: Summary
    reviewed: bool  # False when make_agent takes no extra_steps, or review=False
    interrupted: bool = False  # Ctrl-C stopped the evaluation: `runs` holds only the tasks that finished

    @property
    def early_stops(self) -> list[Run]:
        return [r for r in self.runs if r.early_stop]

    def table(self) -> str:
        """One line per task."""
        lines = [f"{'task':<22}{'ok':<4}{'steps':>6}{'calls':>6}{'tokens':>8}  {'stop':<14}answer"]
        for r in self.runs:
            answer = shorten(r.error or r.answer, 50)
            lines.append(f"{r.task_id:<22}{'yes' if r.correct else 'no':<4}{r.steps:>6}{r.calls:>6}"
                         f"{r.total_tokens:>8}  {r.stop_reason:<14}{answer}")
        return "\n".join(lines)

    def early_stop_review(self) -> str:
        """The runs a fuse or guard stopped, and whether two more steps would have solved them."""
        stops = self.early_stops
        if not stops:
            return f"{self.name}: no run was stopped early."
        lines = [f"{self.name}: {len(stops)} of {len(self.runs)} runs stopped early"]
        for r in stops:
            if r.solved_with_two_more_steps is None:
                verdict = "not reviewed"
            else:
                verdict = "solved with two more steps" if r.solved_with_two_more_steps else \
                    "still not solved with two more steps"
            lines.append(f"  {r.task_id:<22}{r.stop_reason:<14}after {r.steps} steps: {verdict}")
        return "\n".join(lines)


def evaluate(make_agent: Callable, tasks: list[Task], workers: int = 1, *, name: str = "",
             review: bool = True, progress: bool = True) -> Report:
    """Run `make_agent()`'s agents over `tasks` and report; see the module docstring."""
    tasks = list(tasks)
    if not tasks:
        raise ValueError("evaluate needs at least one task")
    claims = _Claims()
    try:
        results = run_batch(lambda task: run_task(make_agent, task, 0, claims), tasks, workers,
                            progress=progress, desc=name or "tasks")
    except BatchInterrupted as stop:
        runs = [_row(result) for result in stop.results]
        raise EvaluationInterrupted(name, runs, len(tasks), "while running the tasks") from None
    runs = [_row(result) for result in results]
    reviewed = review and takes_extra_steps(make_agent)
    stopped = [i for i, r in enumerate(runs) if r.early_stop] if reviewed else []
    if stopped:
        try:
            again = run_batch(lambda i: run_task(make_agent, tasks[i], EXTRA_STEPS, claims), stopped, workers,
                              progress=False)
        except BatchInterrupted as stop:
            _record_review(runs, stop.results)
            raise EvaluationInterrupted(name, runs, len(tasks), "while reviewing the early stops") from None
        _record_review(runs, again)
    return Report(name, runs, summarize(runs), reviewed)


def _record_review(runs: list[Run], results) -> None:
    """Mark each reviewed row (a result's item is the row's index) with whether two more steps solved it."""
    for result in results:
        runs[result.item] = replace(runs[result.item], solved_with_two_more_steps=bool(result.ok and result.value.correct))


class EvaluationInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped `evaluate`; `.report` holds the rows of the tasks that finished (None if none did)."""

    def __init__(self, name: str, runs: list[Run], total: int, when: str) -> None:
        self.runs = runs
        self.report = Report(name, runs, summarize(runs), False, interrupted=True) if runs else None
        super().__init__(f"evaluation interrupted {when}: {len(runs)} of {total} tasks had finished; their rows "
                         f"are in this exception's .report (in Jupyter: sys.last_value.report)")


def _row(result) -> Run:
    """The Run of one batch item; a failure outside the agent (make_agent, a shared ledger) becomes an error row."""
    if result.ok:
        return replace(result.value, wall_s=result.wall_s)
    task = result.item
    return Run(task.id, task.category, task.checker, "", False, 0, 0, 0, 0, 0, "error", result.error,
               wall_s=result.wall_s)


# --- reading several reports ----------------------------------------------------------


def comparison_table(reports: list[Report]) -> str:
    """One line per report: success, steps, max_steps share, calls and tokens per task."""
    lines = [f"{'paradigm':<20}{'success':>8}{'mean steps':>11}{'P95 steps':>10}{'max_steps':>10}"
             f"{'calls':>7}{'tool calls':>11}{'tokens':>8}"]
    for report in reports:
        s = report.summary
        lines.append(f"{report.name:<20}{s.success_rate:>8.0%}{s.mean_steps:>11.1f}{s.p95_steps:>10.1f}"
                     f"{s.max_steps_share:>10.0%}{s.mean_calls:>7.1f}{s.mean_tool_calls:>11.1f}{s.mean_tokens:>8.0f}")
    return "\n".join(lines)


@dataclass
class Comparison:
    before: Report
    after: Report
    broken: list[tuple[Run, Run]]  # right before, wrong after
    fixed: list[tuple[Run, Run]]  # wrong before, right after

    def text(self) -> str:
        b, a = self.before.summary, self.after.summary
        rows = [("success", f"{b.success_rate:.0%}", f"{a.success_rate:.0%}"),
                ("mean steps", f"{b.mean_steps:.1f}", f"{a.mean_steps:.1f}"),
                ("P95 steps", f"{b.p95_steps:.1f}", f"{a.p95_steps:.1f}"),
                ("calls per task", f"{b.mean_calls:.1f}", f"{a.mean_calls:.1f}"),
                ("tokens per task", f"{b.mean_tokens:.0f}", f"{a.mean_tokens:.0f}")]
        lines = [f"{'':<18}{self.before.name:>18}{self.after.name:>18}"]
        lines += [f"{label:<18}{x:>18}{y:>18}" for label, x, y in rows]
        lines.append(f"broken ({len(self.broken)}): right before, wrong after")
        lines += [f"  {old.task_id:<22}{shorten(old.answer, 24)!r:<28}-> {shorten(new.error or new.answer, 40)!r} "
                  f"[{new.failure}]" for old, new in self.broken]
        lines.append(f"fixed ({len(self.fixed)}): wrong before, right after")
        lines += [f"  {old.task_id:<22}{shorten(old.error or old.answer, 24)!r:<28}-> {shorten(new.answer, 40)!r}"
                  for old, new in self.fixed]
        return "\n".join(lines)


def compare(before: Report, after: Report) -> Comparison:
    """Line two reports on the same tasks up task by task; ValueError if the task lists differ."""
    if [r.task_id for r in before.runs] != [r.task_id for r in after.runs]:
        raise ValueError("compare needs two reports over the same tasks, in the same order")
    pairs = list(zip(before.runs, after.runs))
    return Comparison(before, after, [(b, a) for b, a in pairs if b.correct and not a.correct],
                      [(b, a) for b, a in pairs if a.correct and not b.correct])


