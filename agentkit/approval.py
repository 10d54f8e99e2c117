"""The approval gate: read-only tools run; a tool with a side effect runs only if a policy says so.

`GatedExecutor(tools, policy, dry_run=None, open_world="send", trusted=())` wraps any ToolExecutor and
is used like one (an agent's `tools=`). For each call it looks up the tool's `effect`
(agentkit.tools.EFFECTS):

* `read`: runs at once. A read-only tool registered with `open_world=True` (its input leaves the
  machine: a web search) counts as `send` unless the gate is made with `open_world="read"`.
* an unknown tool: not run; the wrapped executor's error (the known tools) is the observation.
* anything else goes to `policy(call)`, which returns a `Verdict`:
  - `run`: the tool runs (an approval);
  - `deny`: it does not run; the observation says so, names who denied it and that nothing changed;
  - `dry_run`: it does not run; the observation says what it *would* change (`dry_run(tool, input)`);
  - `ask`: a human must decide; `run` raises `ApprovalNeeded`, and `agentkit.pausable.PausableAgent`
    turns that into a paused run that `decide(...)` resumes.

Every call becomes one `Decision` in `gate.ledger`, written in a `finally`, so a policy or dry run
that raises (`error: denied`: the call does not run) and Ctrl-C (`interrupted, not run` or
`interrupted, may have run`) are recorded too. A decision holds the call, its effect, the verdict,
who decided (`by`), the dry run, the observation, and two pointers to where an instruction came from:
`source`, the latest earlier tool output that names the tool (found in its text with case, spacing,
punctuation and invisible characters ignored: a hint that a paraphrase defeats), and `tainted`, the
first earlier tool output in this gate's run at all (the tools named in `trusted` excepted). The
`Tainted(policy)` policy denies every side effect after such output: the stronger rule.
`gate.save(path)` writes the ledger as JSON lines; `Replayed(path)` gives the recorded verdict again
only to the call with the same number, tool, input, effect and dry run; any other call is denied
(or asked about: `otherwise="ask"`), so a replay never does more than was approved.

Policies here: `deny_side_effects` (the default), `dry_run_side_effects`, `Approve(names)`,
`ask_human`, `Tainted(policy)`, `Replayed(path)`. Any callable `call -> Verdict` is a policy.
"""
from __future__ import annotations

import json
import unicodedata
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Optional

from .text import json_lines, shorten, visible
from .tools import ERROR_PREFIX

VERDICTS = ("run", "deny", "dry_run", "ask")
REPLAYABLE = {"ran": "run", "denied": "deny", "dry run": "dry_run"}  # recorded verdicts a replay may give again


@dataclass
class Call:
    """A call the gate must decide on."""

    number: int  # 1, 2, ... per gate
    tool: str
    argument: str
    effect: str
    dry_run: str = ""
    source: str = ""
    tainted: str = ""  # the first earlier untrusted tool output in this run, or ""


@dataclass
class Verdict:
    action: str  # one of VERDICTS
    by: str  # who or what decided: "policy: ...", "human: ..."
    note: str = ""  # e.g. "replayed from decisions.jsonl"

    def __post_init__(self) -> None:
        if self.action not in VERDICTS:
            raise ValueError(f"a verdict is one of {', '.join(VERDICTS)}, got {self.action!r}")


@dataclass
class Decision:
    """One line of the gate's ledger."""

    number: int
    tool: str
    argument: str
    effect: str
    verdict: str  # "ran", "denied", "dry run", "pending", "not run", "error: denied", "interrupted, ..."
    by: str
    dry_run: str = ""
    observation: str = ""
    source: str = ""
    note: str = ""
    tainted: str = ""


class ApprovalNeeded(Exception):
    """Raised by the gate when its policy asks a human; carries the waiting `Call`."""

    def __init__(self, call: Call) -> None:
        super().__init__(f"{call.tool}[{call.argument}] waits for a human decision")
        self.call = call


# --- policies ------------------------------------------------------------------


def deny_side_effects(call: Call) -> Verdict:
    return Verdict("deny", "policy: side effects are denied by default")


def dry_run_side_effects(call: Call) -> Verdict:
    return Verdict("dry_run", "policy: side effects are shown as a dry run")


def ask_human(call: Call) -> Verdict:
    return Verdict("ask", "policy: a human decides")


class Approve:
    """Approve the named tools (any argument); deny every other side effect."""

    def __init__(self, names, by: str = "policy: approved list") -> None:
        self.names, self.by = sorted(names), by

    def __call__(self, call: Call) -> Verdict:
        if call.tool.lower() in {n.lower() for n in self.names}:
            return Verdict("run", f"{self.by} ({', '.join(self.names)})")
        return deny_side_effects(call)


class Tainted:
    """The stronger rule: a side effect after any untrusted tool output in the run is denied (or `then`);
    before any, `policy` decides."""

    def __init__(self, policy: Callable[[Call], Verdict], then: str = "deny") -> None:
        if then not in ("deny", "dry_run", "ask"):
            raise ValueError(f"then must be 'deny', 'dry_run' or 'ask', got {then!r}")
        self.policy, self.then = policy, then

    def __call__(self, call: Call) -> Verdict:
        if call.tainted:
            return Verdict(self.then, f"policy: tainted, it comes after {call.tainted}")
        return self.policy(call)


class Replayed:
    """The decisions of a saved ledger, each given again only to the very same call (see the module)."""

    def __init__(self, path, otherwise: str = "deny") -> None:
        if otherwise not in ("deny", "ask"):
            raise ValueError(f"otherwise must be 'deny' or 'ask' (what a call off the record gets), got {otherwise!r}")
        self.recorded = recorded = [Decision(**json.loads(line)) for _, line in json_lines(path)]  # U+2028-safe
        self.name, self.otherwise = Path(path).name, otherwise
        self._waiting = {d.number: d for d in recorded}  # each recorded decision answers one call, once
        self._left = ""  # where the run left the recorded trace: every later call is refused too

    def __call__(self, call: Call) -> Verdict:
        if not self._left:
            old = self._waiting.pop(call.number, None)
            skipped = [d for n, d in self._waiting.items() if n < call.number and d.effect != "read"]
            if old is None:
                self._left = f"call {call.number}, which is not on the recorded trace"
            elif skipped:
                self._left = f"call {call.number}: recorded call {skipped[0].number} ({skipped[0].tool}) was not made"
            else:
                wrong = [f"{what} was {then!r}, now {now!r}" for what, then, now in
                         [("tool", old.tool, call.tool), ("input", old.argument, call.argument),
                          ("effect", old.effect, call.effect), ("dry run", old.dry_run, call.dry_run)] if then != now]
                if wrong:
                    self._left = f"call {call.number}, whose " + "; ".join(wrong)
                elif old.verdict not in REPLAYABLE:
                    self._left = f"call {call.number}, recorded as {old.verdict!r}, not a decision to give again"
                else:
                    return Verdict(REPLAYABLE[old.verdict], old.by, f"replayed from {self.name}")
        return Verdict(self.otherwise, f"replay: the run left the recorded trace at {shorten(self._left, 300)}",
                       f"replayed from {self.name}")


# --- the gate ---------------------------------------------------------------------


def _skeleton(text: str) -> str:
    """Letters and digits only, compatibility-folded and case-folded: "Delete\u200bNotes", "delete_notes",
    "Ｄｅｌｅｔｅ Notes" all become "deletenotes"."""
    return "".join(c for c in unicodedata.normalize("NFKC", str(text)).casefold() if c.isalnum())


class GatedExecutor:
    """A ToolExecutor whose side-effecting tools run only when the policy allows it."""

    def __init__(self, tools, policy: Callable[[Call], Verdict] = deny_side_effects,
                 dry_run: Optional[Callable[[str, str], str]] = None, *, open_world: str = "send",
                 trusted=()) -> None:
        if open_world not in ("send", "read"):
            raise ValueError(f"open_world must be 'send' (a tool whose input leaves the machine is gated) or "
                             f"'read' (trust the registered effect), got {open_world!r}")
        self.inner = tools
        self.policy = policy
        self.dry_run = dry_run or (lambda tool, argument: "(no dry run available for this tool)")
        self.open_world = open_world
        self.trusted = {str(name).lower() for name in trusted}  # tools whose output cannot carry instructions
        self.ledger: list[Decision] = []
        self._decided: dict[int, Verdict] = {}  # a human's answer to a pending call, by number

    # Used like the wrapped executor: the agent reads its tool list and log.
    @property
    def tools(self):
        return self.inner.tools

    @property
    def names(self):
        return self.inner.names

    @property
    def log(self):
        return self.inner.log

    def describe(self) -> str:
        return self.inner.describe()

    def _tool(self, name):
        wanted = str(name).strip().lower()
        return next((t for t in self.inner.tools.values() if t.name.lower() == wanted), None)

    def effect(self, tool) -> str:
        """The effect the gate acts on: the registered one, or "send" for an open-world read."""
        if tool.effect == "read" and getattr(tool, "open_world", False) and self.open_world == "send":
            return "send"
        return tool.effect

    def _source(self, tool: str) -> str:
        wanted = _skeleton(tool)
        for old in reversed(self.ledger):
            if old.verdict == "ran" and wanted in _skeleton(old.observation):
                return f"call {old.number}: {old.tool}[{shorten(old.argument, 40)}] named {tool} in its output"
        return f"no earlier tool output named {tool}: the model's own idea"

    def _taint(self) -> str:
        for old in self.ledger:
            if old.verdict == "ran" and old.tool.lower() not in self.trusted:
                return f"call {old.number}: {old.tool}[{shorten(old.argument, 40)}] (untrusted output)"
        return ""

    def run(self, name: str, argument: str) -> str:
        """Run, deny, dry-run, or (policy `ask`) raise ApprovalNeeded; every outcome goes to the ledger."""
        argument = "" if argument is None else str(argument)
        tool = self._tool(name)
        number = self._pending_number(name, argument) or len(self.ledger) + 1
        if tool is None:  # the executor's own error names the tools it knows; nothing runs
            output = self.inner.run(name, argument)
            self._record(Decision(number, str(name), argument, "unknown", "not run", "gate: no tool of that name",
                                  observation=output))
            return output
        effect = self.effect(tool)
        decision = Decision(number, tool.name, argument, effect, "interrupted, not run", "gate: interrupted")
        try:
            if effect == "read":
                decision.by = "no approval needed: read-only"
                return self._carry_out(decision)
            return self._decide(decision)
        finally:
            self._record(decision)

    def _carry_out(self, decision: Decision) -> str:
        decision.verdict = "interrupted, may have run"  # what stays in the ledger if Ctrl-C lands inside the tool
        try:
            output = self.inner.run(decision.tool, decision.argument)
        except Exception as e:  # noqa: BLE001 - an executor that breaks its contract still gets a ledger line
            decision.verdict, decision.observation = "error: may have run", f"{ERROR_PREFIX} {type(e).__name__}: {e}"
            return decision.observation
        decision.verdict, decision.observation = "ran", output
        return output

    def _decide(self, decision: Decision) -> str:
        name, argument = decision.tool, decision.argument
        call = Call(decision.number, name, argument, decision.effect, source=self._source(name), tainted=self._taint())
        decision.source, decision.tainted = call.source, call.tainted
        try:
            call.dry_run = decision.dry_run = str(self.dry_run(name, argument))
            verdict = self._decided.pop(call.number, None) or self.policy(call)
            if not isinstance(verdict, Verdict):
                raise TypeError(f"the policy returned {shorten(repr(verdict), 60)}, not a Verdict")
        except Exception as e:  # noqa: BLE001 - a gate that cannot decide denies, and says why
            decision.verdict, decision.by = "error: denied", f"gate: {type(e).__name__}: {shorten(e, 120)}"
            decision.observation = (f"{ERROR_PREFIX} {name}[{shorten(argument, 60)}] was not run: the gate could "
                                    f"not decide ({decision.by}). Nothing changed.")
            return decision.observation
        decision.by, decision.note = verdict.by, verdict.note
        if verdict.action == "ask":
            decision.verdict = "pending"
            raise ApprovalNeeded(call)
        if verdict.action == "run":
            return self._carry_out(decision)
        if verdict.action == "dry_run":
            decision.verdict = "dry run"
            decision.observation = f"dry run, nothing changed: {name}[{argument}] {call.dry_run}"
        else:
            decision.verdict = "denied"
            decision.observation = (f"{ERROR_PREFIX} {name}[{shorten(argument, 60)}] was not run: it would "
                                    f"{call.effect}, and it was denied ({verdict.by}). Nothing changed. "
                                    "Go on without it, or tell the user what you wanted to do.")
        return decision.observation

    def _pending_number(self, name, argument) -> int:
        """The number of the pending call this is, when a human decision is waiting for it."""
        last = self.ledger[-1] if self.ledger else None
        if last is not None and last.verdict == "pending" and last.number in self._decided \
                and (last.tool.lower(), last.argument) == (str(name).strip().lower(), argument):
            return last.number
        return 0

    def _record(self, decision: Decision) -> None:
        if self.ledger and self.ledger[-1].number == decision.number:
            self.ledger[-1] = decision  # a pending call, now decided
        else:
            self.ledger.append(decision)

    def decide(self, number: int, approve: bool, by: str) -> None:
        """A human's answer to pending call `number`; the next run of that call uses it."""
        self._decided[number] = Verdict("run" if approve else "deny", by)

    def save(self, path) -> Path:
        """The ledger as JSON lines (the decisions of a run, for Replayed)."""
        path = Path(path)
        path.write_text("".join(json.dumps(asdict(d), ensure_ascii=False) + "\n" for d in self.ledger),
                        encoding="utf-8")
        return path

    def table(self) -> str:
        """The ledger, one line per call (control characters shown, not obeyed)."""
        lines = [f"{'#':>2} {'call':34} {'effect':6} {'verdict':8} by"]
        for d in self.ledger:
            call = shorten(visible(f"{d.tool}[{d.argument}]", 200), 34)
            lines.append(f"{d.number:>2} {call:34} {d.effect:6} {d.verdict:8} {visible(d.by, 160)}")
        return "\n".join(lines)
