"""The task-set stand-in as an instrument: knobs for what a real model gets wrong.

At every rate 0 the stand-in of chapters 09-10 is a perfect reader: it knows each task's key
path and never misreads, forgets, invents or breaks the format, so its figures measure the
structure of a paradigm, nothing about a model. `NoisyTaskLLM(rate)` turns four knobs up:

* **misread**: the last number of the reply's action or answer is read wrong (two digits swapped, or one added);
* **forget**: a key-path call is skipped: a pending tool call becomes a Finish with what is known,
  a plan loses its last step;
* **invent**: a final answer asserts a fact no Observation gave (a number moved, a made-up name);
* **format**: the reply breaks its format (no `Action:` label, a plan's JSON cut short, no verdict line).

Each knob fires on a reply with its own probability, drawn from a hash of (seed, knob, prompt):
the same prompt under the same seed always gets the same reply, so runs are reproducible and
workers cannot disturb them. `sweep()` runs the paradigms over rates and seeds;
`python -m agentkit.instruments` writes its figures to data/instrument_sweep.json.
"""
from __future__ import annotations

import hashlib
import json
import re
import statistics
from typing import Optional

from .evaluate import evaluate
from .paradigms import PARADIGMS
from .protocol import prompt_text
from .scripted import ScriptedLLM
from .scripts import course_script
from .scripts.key_paths import final_answer, task_in, visible
from .tasks import load_tasks

KNOBS = ("misread", "forget", "invent", "format")
RATES = (0.0, 0.05, 0.1, 0.2, 0.3)
SEEDS = tuple(range(5))
INVENTED_NAME = "Jane Doe"  # in no page of the knowledge base


def draw(seed: int, knob: str, prompt: str) -> float:
    """A number in [0, 1) fixed by (seed, knob, prompt)."""
    digest = hashlib.sha256(f"{seed}|{knob}|{prompt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _misread_number(text: str) -> str:
    digits = text[::-1]
    if len(digits) >= 2 and digits[0] != digits[1]:
        return (digits[1] + digits[0] + digits[2:])[::-1]
    return str(int(text) + 1)


_ACTION = re.compile(r"^(Action: )(\w+)\[(.*)\]\s*$", re.MULTILINE | re.DOTALL)


def misread(reply: str, prompt: str) -> str:
    """The last number in the reply's action line (or answer, or plan) is read wrong."""
    numbers = list(re.finditer(r"\d+", reply))
    if not numbers:
        return reply
    last = numbers[-1]
    return reply[:last.start()] + _misread_number(last.group()) + reply[last.end():]


def forget(reply: str, prompt: str) -> str:
    """A pending key-path call is skipped: the reply finishes with what is known; a plan drops its last step."""
    match = _ACTION.search(reply)
    if match and match.group(2) != "Finish":
        task = task_in(prompt)
        return reply[:match.start()] + f"Action: Finish[{final_answer(task, visible(prompt))}]"
    if reply.lstrip().startswith("["):
        try:
            steps = json.loads(reply)
        except ValueError:
            return reply
        return json.dumps(steps[:-1]) if isinstance(steps, list) and len(steps) > 1 else reply
    plan = re.findall(r"^Plan: .*\n#E\d+ = .*$", reply, re.MULTILINE)
    if len(plan) > 1:
        return reply.replace("\n" + plan[-1], "")
    return reply


def invent(reply: str, prompt: str) -> str:
    """A final answer asserts a fact no Observation gave."""
    match = re.search(r"(Finish\[|^Answer: )(.*?)(\]?\s*)$", reply, re.MULTILINE | re.DOTALL)
    if match is None:
        return reply
    answer = match.group(2)
    numbers = re.findall(r"\d+", answer)
    made_up = re.sub(r"\d+(?!.*\d)", str(int(numbers[-1]) + 17), answer, count=1) if numbers else INVENTED_NAME
    return reply[:match.start(2)] + made_up + reply[match.end(2):]


def break_format(reply: str, prompt: str) -> str:
    """The reply loses its format: no Action label, a plan's JSON cut short, no verdict line."""
    if "Action: " in reply:
        return reply.replace("Action: ", "I will now do ", 1)
    if reply.lstrip().startswith("["):
        return reply.rstrip()[:-1]
    if "VERDICT:" in reply:
        return reply.split("VERDICT:")[0].rstrip()
    if reply.startswith("Answer: "):
        return reply[len("Answer: "):]
    return reply


DISEASES = {"forget": forget, "misread": misread, "invent": invent, "format": break_format}


class NoisyTaskLLM(ScriptedLLM):
    """The course's stand-in, whose replies about the task set are corrupted at the knobs' rates."""

    def __init__(self, rate: float = 0.0, *, seed: int = 0, **rates: float) -> None:
        unknown = set(rates) - set(KNOBS)
        if unknown:
            raise ValueError(f"unknown knob(s) {sorted(unknown)}; the knobs are {', '.join(KNOBS)}")
        self.rates = {knob: float(rates.get(knob, rate)) for knob in KNOBS}
        for knob, value in self.rates.items():
            if not 0 <= value <= 1:
                raise ValueError(f"{knob} must be a rate between 0 and 1, got {value}")
        self.seed = int(seed)
        super().__init__(course_script())
        self.model = f"stand-in with errors {self.rates}, seed {self.seed}"

    def _answer(self, messages) -> tuple:
        reply, note = super()._answer(messages)
        if not isinstance(reply, str) or not any(self.rates.values()):
            return reply, note
        prompt = prompt_text(messages)
        if task_in(prompt) is None:
            return reply, note
        for knob, disease in DISEASES.items():
            if self.rates[knob] and draw(self.seed, knob, prompt) < self.rates[knob]:
                changed = disease(reply, prompt)
                if changed != reply:
                    reply, note = changed, f"{note}; {knob}"
        return reply, note


def noisy_factory(paradigm: str, rate: float, seed: int):
    """make_agent for the harness: the paradigm's agent on a fresh NoisyTaskLLM."""
    make = PARADIGMS[paradigm]

    def make_agent(extra_steps: int = 0):
        return make(extra_steps, llm=NoisyTaskLLM(rate, seed=seed))

    return make_agent


def sweep(paradigms=None, rates=RATES, seeds=SEEDS, tasks=None, progress: bool = False) -> list[dict]:
    """One row per (paradigm, rate, seed): success, mean steps and mean tokens over `tasks` (rate 0 once: no draws)."""
    tasks = tasks if tasks is not None else load_tasks()
    rows = []
    for paradigm in paradigms or list(PARADIGMS):
        for rate in rates:
            for seed in (seeds[:1] if rate == 0 else seeds):
                summary = evaluate(noisy_factory(paradigm, rate, seed), tasks, review=False, progress=progress,
                                   name=paradigm).summary
                rows.append({"paradigm": paradigm, "rate": rate, "seed": seed, "success": summary.success_rate,
                             "mean_steps": summary.mean_steps, "mean_tokens": summary.mean_tokens})
    return rows


def curves(rows: list[dict]) -> dict:
    """{paradigm: {metric: [(rate, mean, low, high), ...]}} over the seeds of each rate."""
    out: dict = {}
    for paradigm in dict.fromkeys(r["paradigm"] for r in rows):
        mine = [r for r in rows if r["paradigm"] == paradigm]
        out[paradigm] = {}
        for metric in ("success", "mean_steps", "mean_tokens"):
            points = []
            for rate in sorted({r["rate"] for r in mine}):
                values = [r[metric] for r in mine if r["rate"] == rate]
                points.append((rate, statistics.fmean(values), min(values), max(values)))
            out[paradigm][metric] = points
    return out


def main(argv: Optional[list] = None) -> int:
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser(prog="python -m agentkit.instruments", description=main.__doc__)
    from .data import DATA_DIR

    parser.add_argument("--out", type=Path, default=Path(str(DATA_DIR / "instrument_sweep.json")))
    args = parser.parse_args(argv)
    rows = sweep(progress=True)
    args.out.write_text(json.dumps({"rates": list(RATES), "seeds": list(SEEDS), "knobs": list(KNOBS),
                                    "tasks": len(load_tasks()), "rows": rows}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(rows)} rows to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
