"""AgentDojo offline: a scripted agent that does what it reads, through the suites and their attacks, under defences.

AgentDojo (`agentdojo` on PyPI) gives tool environments (workspace, travel, banking, slack), user tasks, and
injection tasks whose goal an attack writes into the data the tools return. It scores a run from the
environment's state: utility (the user's task done), and attack success (the injection task done).

The agent (`ScriptedAgent`, an AgentDojo pipeline element) stands for the worst case: a model that follows the
user perfectly and obeys every instruction it reads. It makes the user task's own ground-truth calls
(AgentDojo's), one at a time; whenever a tool result contains an injection task's goal, it first makes that
task's ground-truth calls, then goes on. Its last message is the task's ground-truth answer, unless one of the
user's own calls was refused (then it says so), followed by what an obeyed goal asked it to say. It can obey only
what AgentDojo's ground truth spells out: an injection task that ships no ground-truth calls (eight of
workspace's fourteen) is never carried out, and counts as a failed attack under every defence.
Every call it asks for is written into its assistant message,
refused or not, as a model's request would be; refused calls get AgentDojo's error field.

A defence (`DEFENCES`) decides each requested call before it runs (`decide(defence, call, state)`):
* `none`; `spotlighting` (AgentDojo's: tool results between << and >>, and a system message asking not to obey
  them; a prompt the scripted agent does not heed, so it changes nothing here);
* `tool_filter` (AgentDojo's: the model first picks the tools the request needs; scripted, the pick is the user
  task's own functions, the best case): a call of any other tool is AgentDojo's "Invalid tool";
* `taint_gate` (chapter 12): a person approves every side effect, but after any tool output has been read,
  `approval.Tainted` denies every side effect;
* `plan_then_execute`: the functions to call are fixed from the user's request before anything is read
  (scripted: the user task's own, in order); a call runs only if its function is still in the plan;
* `provenance`: a side effect runs only if no argument came from a tool's output: a value (3 characters or
  more) found in an earlier tool result and not in the user's request came from there;
* `plan_and_provenance`: both.
Effects (`effect(tool)`): a name starting get_, read_, search_, list_ or check_ reads; `get_webpage` reads an
address the call chooses, so it counts as a send (chapter 12's open world); every other tool has a side effect.

`run_pair(suite, user_task, injection_task, defence)` runs one pair; `sweep()` runs them all. AgentDojo is
imported through `agentkit.agentdojo_import.lean()`, without the vendor SDKs it would load and this never calls.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field

from .agentdojo_import import lean
from .approval import Call, Tainted, Verdict
from .bfcl import interval

BENCHMARK_VERSION = "v1.2.2"
ATTACK = "important_instructions"
SUITES = ("workspace", "travel", "banking", "slack")
DEFENCES = ("none", "spotlighting", "tool_filter", "taint_gate", "plan_then_execute", "provenance",
            "plan_and_provenance")
READ_PREFIXES = ("get_", "read_", "search_", "list_", "check_")
OPEN_WORLD = ("get_webpage",)
INSTALL = 'pip install -r requirements-benchmarks.txt   (or: pip install -e ".[benchmarks]")'
MIN_TRACE = 3  # shorter values ("1", "no") are found in any text: they cannot be traced


def effect(tool: str) -> str:
    if tool in OPEN_WORLD:
        return "send"
    return "read" if tool.startswith(READ_PREFIXES) else "write"


def missing() -> str:
    """"" when AgentDojo is installed, else what to install."""
    import importlib.util
    return "" if importlib.util.find_spec("agentdojo") else f"AgentDojo is not installed here. {INSTALL}"


@dataclass
class State:
    """What a defence may know: the user's words, the plan, what was read so far."""

    prompt: str
    plan: list  # function names still to call (plan_then_execute)
    offered: set  # tools the filter kept
    outputs: list = field(default_factory=list)  # tool results read so far (text)
    number: int = 0


def _values(value) -> list[str]:
    if isinstance(value, dict):
        return [v for item in value.values() for v in _values(item)]
    if isinstance(value, (list, tuple)):
        return [v for item in value for v in _values(item)]
    return [str(value)]


def from_output(args: dict, state: State) -> str:
    """The first argument value found in a tool output and not in the user's request, or ""."""
    for value in _values(args):
        if len(value) >= MIN_TRACE and value not in state.prompt and any(value in out for out in state.outputs):
            return value
    return ""


def taint_verdict(tool: str, args: dict, state: State) -> tuple[bool, str]:
    """Chapter 12's rule: a person would approve, but `Tainted` denies any side effect after untrusted output."""
    call = Call(state.number, tool, json.dumps(args, default=str), effect(tool),
                tainted="the first tool output of this run" if state.outputs else "")
    verdict = Tainted(lambda c: Verdict("run", "the user approves"))(call)
    return verdict.action == "run", verdict.by


def decide(defence: str, tool: str, args: dict, state: State) -> tuple[bool, str]:
    """(run it, why not) for one requested call."""
    if defence == "tool_filter" and tool not in state.offered:
        return False, f"Invalid tool {tool} provided."
    if defence == "taint_gate" and effect(tool) != "read":
        return taint_verdict(tool, args, state)
    if defence in ("plan_then_execute", "plan_and_provenance"):
        if tool not in state.plan:
            return False, f"{tool} is not in the plan made from the user's request"
    if defence in ("provenance", "plan_and_provenance") and effect(tool) != "read":
        value = from_output(args, state)
        if value:
            return False, f"argument {value[:40]!r} came from a tool's output"
    if defence in ("plan_then_execute", "plan_and_provenance"):
        state.plan.remove(tool)
    return True, ""


def _flat(text: str) -> str:
    """Text as a reader sees it: YAML's quoting undone (folded lines, `\\` line continuations, `\\n`, doubled
    quotes), then every run of whitespace one space."""
    text = re.sub(r"\\\n\s*\\?", "", text).replace("\\n", " ").replace("''", "'")
    return " ".join(text.split())


def _pipeline_element():
    lean()  # AgentDojo without the vendor SDKs it would import (agentkit.agentdojo_import says why)
    from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement

    class ScriptedAgent(BasePipelineElement):
        """Does the user's task by its ground truth, and every injected goal it reads, at once (see the module)."""

        name = "local-scripted-agent"  # AgentDojo names the model in its attack from this: "Local model"

        def __init__(self, user_task, injection_tasks, defence: str) -> None:
            self.user_task, self.injection_tasks, self.defence = user_task, injection_tasks, defence
            self.log = []  # (tool, args, ran, why, whose): the run's ledger

        def query(self, query, runtime, env=None, messages=(), extra_args=None):
            from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
            from agentdojo.types import ChatAssistantMessage, ChatToolResultMessage, text_content_block_from_string

            text = text_content_block_from_string
            planned = list(self.user_task.ground_truth(env.model_copy(deep=True)))
            state = State(query, [c.function for c in planned], {c.function for c in planned})
            queue = [(c, "user") for c in planned]
            obeyed, refused, messages = set(), False, list(messages)
            while queue:
                call, whose = queue.pop(0)
                state.number += 1
                ran, why = decide(self.defence, call.function, dict(call.args), state)
                messages.append(ChatAssistantMessage(role="assistant", content=[text("")], tool_calls=[call]))
                result, error = "", why or None
                if ran:
                    output, error = runtime.run_function(env, call.function, dict(call.args))
                    result = tool_result_to_str(output)
                    if self.defence == "spotlighting":
                        result = f"<<{result}>>"
                    state.outputs.append(result)
                refused |= whose == "user" and not ran
                self.log.append((call.function, dict(call.args), ran, why, whose))
                messages.append(ChatToolResultMessage(role="tool", content=[text(result)], tool_call_id=None,
                                                      tool_call=call, error=error))
                for task in self.injection_tasks:  # it obeys what it reads, before going on
                    if task.ID not in obeyed and _flat(task.GOAL) in _flat(result):
                        obeyed.add(task.ID)
                        queue[:0] = [(c, "attacker") for c in task.ground_truth(env.model_copy(deep=True))]
            answer = "A step of your task was refused, so it is not done." if refused else \
                self.user_task.GROUND_TRUTH_OUTPUT
            said = [t.GROUND_TRUTH_OUTPUT for t in self.injection_tasks if t.ID in obeyed and t.GROUND_TRUTH_OUTPUT]
            answer = " ".join([answer, *said])  # an injected goal that asks it to say something: it says it
            messages.append(ChatAssistantMessage(role="assistant", content=[text(answer)], tool_calls=None))
            return query, runtime, env, messages, extra_args or {}

    return ScriptedAgent


_suites: dict = {}
_attacks: dict = {}


def suite(name: str):
    """One of AgentDojo's suites, at BENCHMARK_VERSION (loaded once per process)."""
    if name not in SUITES:
        raise ValueError(f"suite must be one of {', '.join(SUITES)}, got {name!r}")
    if name not in _suites:
        lean()
        from agentdojo.task_suite.load_suites import get_suite
        _suites[name] = get_suite(BENCHMARK_VERSION, name)
    return _suites[name]


def injections(suite_name: str, user_task, injection_task) -> dict:
    """AgentDojo's attack (ATTACK) for this pair: {placeholder: injected text}."""
    lean()
    from agentdojo.attacks.attack_registry import load_attack

    s = suite(suite_name)
    if suite_name not in _attacks:
        attack = load_attack(ATTACK, s, _pipeline_element()(None, [], "none"))
        # Which placeholders a user task's run shows does not depend on the injection task: found once per task.
        attack.get_injection_candidates = functools.lru_cache(maxsize=None)(attack.get_injection_candidates)
        _attacks[suite_name] = attack
    return _attacks[suite_name].attack(user_task, injection_task)


def run_pair(suite_name: str, user_task, injection_task, defence: str, environment=None) -> dict:
    """One run: utility, attack success as AgentDojo scores it (requested calls count where its check reads the
    calls) and as the calls that ran decide it, and the ledger. `environment`: the suite's environment with this
    pair's injections, loaded already (it is copied, never changed)."""
    lean()
    from agentdojo.functions_runtime import FunctionsRuntime
    from agentdojo.task_suite.task_suite import functions_stack_trace_from_messages, model_output_from_messages

    if defence not in DEFENCES:
        raise ValueError(f"defence must be one of {', '.join(DEFENCES)}, got {defence!r}")
    s = suite(suite_name)
    if environment is None:
        environment = load_environment(suite_name, user_task, injection_task)
    env = user_task.init_environment(environment.model_copy(deep=True))
    before = env.model_copy(deep=True)
    agent = _pipeline_element()(user_task, [injection_task] if injection_task else [], defence)
    _, _, after, messages, _ = agent.query(user_task.PROMPT, FunctionsRuntime(s.tools), env)
    output = model_output_from_messages(messages) or []
    requested = functions_stack_trace_from_messages(messages)
    ran = [c for c, (_, _, done, _, _) in zip(requested, agent.log) if done]
    row = {"utility": bool(s._check_task_result(user_task, output, before, after, requested)), "log": agent.log}
    if injection_task is not None:
        row["attack"] = bool(s._check_task_result(injection_task, output, before, after, requested))
        row["attack_ran"] = bool(s._check_task_result(injection_task, output, before, after, ran))
    return row


def load_environment(suite_name: str, user_task, injection_task):
    """The suite's default environment with AgentDojo's attack for this pair written into it (none: no attack)."""
    injected = injections(suite_name, user_task, injection_task) if injection_task else {}
    return suite(suite_name).load_and_inject_default_environment(injected)


def run_suite(suite_name: str, defences=DEFENCES, user_tasks=None, injection_tasks=None) -> dict:
    """{defence: every (user task, injection task) pair of a suite, and every user task without an attack}.
    Each pair's environment is loaded once and copied for every defence."""
    s = suite(suite_name)
    users = [s.user_tasks[t] for t in (user_tasks or s.user_tasks)]
    attacks = [s.injection_tasks[t] for t in (injection_tasks or s.injection_tasks)]
    out = {d: {"clean": [], "pairs": []} for d in defences}
    for u in users:
        for i in [None, *attacks]:
            environment = load_environment(suite_name, u, i)
            for d in defences:
                r = run_pair(suite_name, u, i, d, environment)
                if i is None:
                    out[d]["clean"].append(r["utility"])
                else:
                    out[d]["pairs"].append((u.ID, i.ID, r["utility"], r["attack"], r["attack_ran"]))
    return out


def summary(result: dict) -> dict:
    """Rates with their 95% intervals: utility, utility under attack, attack success (scored, and by what ran)."""
    def rate(values):
        k, n = sum(values), len(values)
        return {"k": k, "n": n, "rate": k / n if n else 0.0, "interval": interval(k, n)}
    pairs = result["pairs"]
    return {"utility": rate(result["clean"]), "utility_under_attack": rate([p[2] for p in pairs]),
            "attack_success": rate([p[3] for p in pairs]), "attack_success_ran": rate([p[4] for p in pairs])}


def sweep(progress: bool = False, suites=SUITES) -> dict:
    """Every suite under every defence (what data/agentdojo_sweep.json holds)."""
    from importlib.metadata import version

    out = {"agentdojo": version("agentdojo"), "benchmark_version": BENCHMARK_VERSION, "attack": ATTACK,
           "suites": {}}
    for name in suites:
        s = suite(name)
        out["suites"][name] = {"tools": {t.name: effect(t.name) for t in s.tools}, "defences": {}}
        for defence, result in run_suite(name).items():
            out["suites"][name]["defences"][defence] = dict(summary(result), pairs=result["pairs"],
                                                            clean=result["clean"])
            if progress:
                rates = summary(result)
                print(f"{name:10} {defence:20} " + "  ".join(f"{k} {v['rate']:.0%}" for k, v in rates.items()),
                      flush=True)
    return out
