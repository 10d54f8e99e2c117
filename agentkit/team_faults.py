"""The instrument of chapter 09, with four more knobs: failures of a team of agents, one disease each.

`FaultyTeamLLM(rate, seed=..., **knobs)` is `agentkit.instruments.NoisyTaskLLM` (the stand-in with its
misread, forget, invent and format knobs at `rate`) with four knobs of its own, all 0 unless set. Each
fires on a reply of one role with its own probability, drawn from a hash of (seed, knob, prompt) like
the others, and its name is added to that call's `note` in the ledger, so injected faults are counted
from the ledgers. The diseases, with the MAST failure mode each one plays (Cemri et al. 2025):

* `ignore_task` (FM-1.1 Disobey task specification), a member with a look-up to do: instead of the
  call its assignment asks for, it looks up another subject of the team's question, one it was not
  given. A question with one subject leaves it nothing else to look up, and the reply stands.
* `handoff_loop` (FM-1.3 Step repetition), the supervisor: it hands the last handoff out again, the
  same member with the same instruction, even where it would have finished.
* `wrong_result` (the fault behind FM-3.2 No or incomplete verification), a member: its report has
  each number the team needs from it (one a later calculation uses, or the answer) 10 higher.
* `lost_context` (FM-2.4 Information withholding), the supervisor: its handoff's Context line says none.

`injection(knob, rate, guarded, seed)` runs the task set through the topology each knob belongs to
(TOPOLOGY_OF) with that knob alone at `rate`, with or without a `TeamGuard`, and reads one row from the
ledgers and the guard: success, LLM calls per task, the tasks with an injected fault, those where the
check meant for it fired (caught), and alarms on tasks with none injected (false alarms). `rate` and `seed`
are checked when given (ValueError naming them); a run that raised makes no row (`agentkit.frontier.MeasurementError`).
`python -m agentkit.team_faults` writes the rows for every knob, RATES and SEEDS to data/team_faults.json.
"""
from __future__ import annotations

import re

import json
from typing import Optional

from .evaluate import evaluate
from .frontier import error_rate, raise_errors, seed_of
from .instruments import KNOBS, NoisyTaskLLM, draw
from .protocol import prompt_text
from .scripts.key_paths import key_calls, task_in
from .scripts.teams import instruction, kind_of
from .tasks import load_tasks
from .team_guards import IGNORED_ASSIGNMENT, MAST, REPEATED_HANDOFF, UNVERIFIED_REPORT, WITHHELD_CONTEXT, TeamGuard
from .teams import OrchestratorWorkers, Supervisor

TEAM_KNOBS = ("ignore_task", "handoff_loop", "wrong_result", "lost_context")
TOPOLOGY_OF = {"ignore_task": OrchestratorWorkers, "wrong_result": OrchestratorWorkers,
               "handoff_loop": Supervisor, "lost_context": Supervisor}
CHECK_OF = {"ignore_task": IGNORED_ASSIGNMENT, "wrong_result": UNVERIFIED_REPORT,
            "handoff_loop": REPEATED_HANDOFF, "lost_context": WITHHELD_CONTEXT}
RATES = (0.3, 1.0)
SEEDS = tuple(range(5))
_ACTION = re.compile(r"^Action: (\w+)\[.*\]\s*$", re.MULTILINE | re.DOTALL)
_FINISH = re.compile(r"Finish\[(.*)\]\s*$", re.DOTALL)
_LAST_HANDOFF = re.compile(r"^Handoff \d+ to (\w+): (.*)\nContext: (.*)\nResult: ", re.MULTILINE)


def _assigned(prompt: str):
    task = task_in(prompt)
    calls = key_calls(task)
    assignment = re.search(r"^Your assignment: (.*)$", prompt, re.MULTILINE).group(1)
    return task, calls, [c for c in calls if instruction(c, calls) in assignment]


def ignore_task(reply: str, prompt: str) -> str:
    """A member looks up a subject of the question it was not given, instead of its own call."""
    action = _ACTION.search(reply)
    if action is None or action.group(1) == "Finish":
        return reply
    _, calls, mine = _assigned(prompt)
    if not any(c.tool == "Search" for c in mine):
        return reply
    others = [c for c in calls if c.tool == "Search" and c not in mine and not c.bridge]
    if not others:
        return reply
    return f"Thought: The question is about {others[0].input}; I look that up.\nAction: {others[0].text}"


def wrong_result(reply: str, prompt: str) -> str:
    """A member's report has every number the team needs from it 10 higher."""
    finish = _FINISH.search(reply)
    if finish is None:
        return reply
    task, calls, mine = _assigned(prompt)
    indices = {c.index for c in mine}
    needed = {number for later in calls for number, source in later.parts if source in indices}
    if task.checker == "numeric" and not task.must_refuse:
        needed.add(format(task.gold, "g") if isinstance(task.gold, float) else str(task.gold))

    def shift(match: re.Match) -> str:
        number = match.group(0)
        if number not in needed:
            return number
        value = float(number) + 10
        return str(int(value)) if value.is_integer() and "." not in number else f"{value:g}"

    report = re.sub(r"(?<![\d.])\d+(?:\.\d+)?(?![\d.])", shift, finish.group(1))
    return reply[:finish.start(1)] + report + reply[finish.end(1):]


def handoff_loop(reply: str, prompt: str) -> str:
    """The supervisor hands the last handoff out again."""
    handoffs = _LAST_HANDOFF.findall(prompt)
    if not handoffs:
        return reply
    member, instruction_text, context = handoffs[-1]
    return f"Next: {member}\nInstruction: {instruction_text}\nContext: {context}"


def lost_context(reply: str, prompt: str) -> str:
    """The supervisor passes nothing on."""
    return re.sub(r"^Context: .*$", "Context: none", reply, flags=re.MULTILINE)


DISEASES = {"ignore_task": (("member",), ignore_task), "handoff_loop": (("supervisor",), handoff_loop),
            "wrong_result": (("member",), wrong_result), "lost_context": (("supervisor",), lost_context)}


class FaultyTeamLLM(NoisyTaskLLM):
    """The noisy stand-in with four knobs for a team's failures (see the module docstring)."""

    def __init__(self, rate: float = 0.0, *, seed: int = 0, **rates: float) -> None:
        unknown = set(rates) - set(KNOBS) - set(TEAM_KNOBS)
        if unknown:
            raise ValueError(f"unknown knob(s) {sorted(unknown)}; the knobs are {', '.join(KNOBS + TEAM_KNOBS)}")
        team = {knob: rates.pop(knob, 0.0) for knob in TEAM_KNOBS}
        for knob, value in team.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise ValueError(f"{knob} must be a rate between 0 and 1, got {value!r}")
        super().__init__(rate, seed=seed, **rates)
        self.team_rates = {knob: float(value) for knob, value in team.items()}
        on = {knob: value for knob, value in self.team_rates.items() if value}
        self.model = f"stand-in with errors {self.rates}, team faults {on or 'none'}, seed {self.seed}"

    def _answer(self, messages) -> tuple:
        reply, note = super()._answer(messages)
        if not isinstance(reply, str) or not any(self.team_rates.values()):
            return reply, note
        prompt = prompt_text(messages)
        kind = kind_of(prompt)
        for knob, (kinds, disease) in DISEASES.items():
            if kind in kinds and self.team_rates[knob] and draw(self.seed, knob, prompt) < self.team_rates[knob]:
                changed = disease(reply, prompt)
                if changed != reply:
                    reply, note = changed, f"{note}; {knob}"
        return reply, note


def injected(team, knob: str) -> bool:
    """Whether any reply of this team's run was changed by `knob` (read from the ledgers' notes)."""
    return any(f"; {knob}" in call.note for call in team.llm.calls)


def injection(knob: str, rate: float, guarded: bool, seed: int = 0, tasks=None) -> dict:
    """One row: the knob's topology over the tasks, the knob alone at `rate` (see the module docstring)."""
    if knob not in TEAM_KNOBS:
        raise ValueError(f"knob must be one of {', '.join(TEAM_KNOBS)}, got {knob!r}")
    rate, seed = error_rate(rate), seed_of(seed)  # here: inside a run, a bad one would be a failed task
    made = []

    def make_agent():
        made.append(TOPOLOGY_OF[knob](FaultyTeamLLM(seed=seed, **{knob: rate}),
                                      guard=TeamGuard() if guarded else None))
        return made[-1]

    report = evaluate(make_agent, tasks if tasks is not None else load_tasks(), review=False, progress=False)
    raise_errors(report, f"{knob} at {rate:g}")  # an exception is reported, never counted as a failed task
    hit = [injected(team, knob) for team in made]
    fired = [bool(team.guard and any(a.check == CHECK_OF[knob] for a in team.guard.alarms)) for team in made]
    alarmed = [bool(team.guard and team.guard.alarms) for team in made]
    return {"knob": knob, "mode": MAST[CHECK_OF[knob]], "topology": TOPOLOGY_OF[knob].__name__, "rate": rate,
            "seed": seed, "guard": guarded, "success": report.summary.success_rate, "calls": report.summary.mean_calls,
            "injected": sum(hit), "caught": sum(h and f for h, f in zip(hit, fired)),
            "false_alarms": sum(a and not h for h, a in zip(hit, alarmed)), "tasks": len(made)}


def main(argv: Optional[list] = None) -> int:
    """Write every knob's rows, guard off and on, at RATES and SEEDS, to data/team_faults.json."""
    import argparse
    from pathlib import Path

    from .data import DATA_DIR

    parser = argparse.ArgumentParser(prog="python -m agentkit.team_faults", description=main.__doc__)
    parser.add_argument("--out", type=Path, default=Path(str(DATA_DIR / "team_faults.json")))
    args = parser.parse_args(argv)
    rows = [injection(knob, rate, guarded, seed) for knob in TEAM_KNOBS for rate in RATES for guarded in (False, True)
            for seed in SEEDS]
    args.out.write_text(json.dumps({"rates": list(RATES), "seeds": list(SEEDS), "tasks": len(load_tasks()),
                                    "rows": rows}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(rows)} rows to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
