"""An agent run that can wait for a human: a ReAct run that pauses when the approval gate asks.

`PausableAgent(llm, GatedExecutor(..., ask_human))` runs until the gate's policy says `ask`; `start`
then returns "pending" with the waiting call in `.pending`, and `decide(approve, by)` answers it and
goes on. A Jupyter cell cannot wait for a click, so a run pauses instead (agentkit.widgets.approval).
"""
from __future__ import annotations

from typing import Optional

from .approval import ApprovalNeeded, Call, GatedExecutor
from .react import ReActAgent


class PausableAgent(ReActAgent):
    """A ReAct run that pauses when the gate asks a human, and resumes when one decides.

    `start(question)` returns "pending" (see `.pending`) or "finished"/"max_steps"/"repeat_fuse";
    `decide(approve, by)` answers the pending call and goes on. The model is not asked again for a
    call that waited: the reply that asked for it is kept and carried out once decided. The repeat
    fuse and max_steps apply; `runtime`, `on_step` and the fallback answer are not used here.
    """

    def __init__(self, llm=None, tools=None, max_steps: int = 5, **options) -> None:
        super().__init__(llm, tools, max_steps, **options)
        if not isinstance(self.tools, GatedExecutor):
            raise TypeError("PausableAgent needs a GatedExecutor as tools (the gate is what pauses it)")
        self.pending: Optional[Call] = None
        self.status = "not started"
        self._question, self._held = "", None

    def start(self, question: str, verbose: bool = False) -> str:
        from .llm import ledger

        self.trace, self.stop_reason, self.answer, self.pending = [], "", "", None
        self._question, self._held, self.verbose = question, None, verbose
        self._ledger_start, self._log_start = len(ledger(self.llm)), len(self.tools.log)
        return self._go()

    def decide(self, approve: bool, by: str) -> str:
        if self.pending is None:
            raise RuntimeError("no call is waiting for a decision")
        self.tools.decide(self.pending.number, approve, by)
        self.pending = None
        return self._go()

    def _go(self) -> str:
        from .react import _print_step

        while len(self.trace) < self.max_steps:
            if self._held is not None:
                (parsed, reply), self._held = self._held, None
            else:
                parsed, reply = self._decide(self.messages(self._question))
            try:
                step, answer = self._act(parsed, reply)
            except ApprovalNeeded as waiting:
                self._held, self.pending, self.status = (parsed, reply), waiting.call, "pending"
                return self.status
            self.trace.append(step)
            if self.verbose:
                _print_step(len(self.trace), step)
            if answer is not None:
                self.answer, self.status = answer, self.stop_reason
                return self.status
        self.stop_reason = self.status = "max_steps"
        self.answer = f"Stopped by max_steps: no Finish after {self.max_steps} steps."
        return self.status
