"""Reflexion: trials of a ReAct agent, judged by an evaluator, with lessons carried between them.

After a failed trial the model writes a structured lesson (trigger, error type, fix, where
it applies) into a LessonStore; the next trial's prompt carries only the top-k most
relevant lessons. Lessons the agent used gain confidence on success and lose it on failure.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Callable, Optional

from .lessons import LESSON_FIELDS, MAX_TOP_K, Lesson, LessonStore
from .llm import default_llm, ledger
from .react import ReActAgent, Step

LESSONS_HEADER = "Lessons from earlier trials (when you apply one, name it in your Thought, e.g. 'Applying L3'):"

REFLECTION_MARKER = "You write lessons for an agent that failed a task"

REFLECTION_PROMPT = """You write lessons for an agent that failed a task. Read its trial below and
explain, as one JSON object and nothing else, what went wrong and what to do next time:
{"trigger": "the situation in which the lesson applies",
 "error_type": "the kind of mistake, in a few words",
 "fix": "what to do instead, as one instruction",
 "applies_to": "which tasks the lesson is for"}
One sentence per value. Write a lesson that would help on similar tasks, not just this one."""


def normalise_answer(text: str) -> str:
    return " ".join(str(text).split()).strip().rstrip(".").casefold()


def exact_match(answer: str, gold: str) -> bool:
    """The course's evaluator: the answer equals the gold answer, ignoring case, spacing and a final period."""
    return normalise_answer(answer) == normalise_answer(gold)


def format_lessons(lessons: list[Lesson]) -> str:
    """The hints block for a trial's prompt ("" when there are no lessons)."""
    if not lessons:
        return ""
    return "\n".join([LESSONS_HEADER, *(lesson.as_prompt_line() for lesson in lessons)])


def cited_lessons(trace: list[Step], shown: list[int]) -> list[int]:
    """Ids of shown lessons that the agent named (L<id>) in its thoughts, in order of first mention."""
    named = [int(n) for step in trace for n in re.findall(r"\bL(\d+)\b", step.thought)]
    return [i for i in dict.fromkeys(named) if i in shown]


# --- the reflection writer ------------------------------------------------------


def reflection_messages(question: str, trace: list[Step], answer: str) -> list[dict]:
    """The prompt that asks for a lesson: the failed trial, and the verdict (never the gold answer)."""
    steps = "\n".join(step.as_history() if step.action != "Finish" else f"Thought: {step.thought}\n"
                      f"Action: Finish[{step.argument}]" for step in trace)
    user = (f"Question: {question}\n\nThe trial, step by step:\n{steps}\n\n"
            f"Final answer: {answer}\nVerdict: the evaluator judged this answer wrong.")
    return [{"role": "system", "content": REFLECTION_PROMPT}, {"role": "user", "content": user}]


def parse_lesson(reply) -> Optional[dict]:
    """The lesson fields from a reply holding one JSON object, or None. Never raises."""
    text = "" if reply is None else str(reply)
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end < start:
        return None
    try:
        data = json.loads(text[start:end + 1])
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    lesson = {name: " ".join(str(data.get(name) or "").split()) for name in LESSON_FIELDS}
    return lesson if all(lesson.values()) else None


def write_reflection(llm, question: str, trace: list[Step], answer: str) -> Optional[dict]:
    """One LLM call that turns a failed trial into lesson fields (None if the reply has none)."""
    return parse_lesson(llm.think(reflection_messages(question, trace, answer)))


# --- the trial loop ---------------------------------------------------------------


@dataclass
class Trial:
    """One attempt: what the prompt carried, what came out, and what the store learned."""

    number: int
    answer: str
    success: bool
    stop_reason: str
    shown: list[int]  # lesson ids in the prompt
    used: list[int]  # lesson ids whose confidence this trial moved
    hints: str
    calls: list = field(default_factory=list)  # this trial's LLM ledger entries (ReAct + reflection)
    lesson_written: Optional[int] = None
    lesson_was_new: bool = False  # False when the reflection re-derived a lesson already stored
    evicted: list[int] = field(default_factory=list)

    @property
    def prompt(self) -> str:
        """The first prompt of the trial, as text."""
        return self.calls[0].prompt if self.calls else ""


@dataclass
class ReflexionResult:
    question: str
    gold: str
    trials: list[Trial]

    @property
    def success(self) -> bool:
        return any(t.success for t in self.trials)

    @property
    def trials_to_success(self) -> Optional[int]:
        """The number of the first successful trial, or None."""
        return next((t.number for t in self.trials if t.success), None)


class ReflexionAgent:
    """Run a ReAct agent for up to `max_trials` trials, writing and reusing lessons.

    `store=None` runs the same trials with no memory: every trial starts from scratch.
    """

    def __init__(self, llm=None, tools=None, store: Optional[LessonStore] = None, *,
                 max_trials: int = 4, top_k: int = 3, max_steps: int = 5,
                 evaluator: Callable[[str, str], bool] = exact_match) -> None:
        if max_trials < 1:
            raise ValueError(f"max_trials must be at least 1, got {max_trials}")
        if not 1 <= top_k <= MAX_TOP_K:
            raise ValueError(f"top_k must be between 1 and {MAX_TOP_K}, got {top_k}")
        self.llm = llm if llm is not None else default_llm()
        self.actor = ReActAgent(self.llm, tools, max_steps=max_steps)
        self.store, self.max_trials, self.top_k, self.evaluator = store, max_trials, top_k, evaluator

    def run(self, question: str, gold: str, verbose: bool = True, *, first_trial: int = 1) -> ReflexionResult:
        """Trials until the evaluator accepts an answer or max_trials is reached; every trial is reported."""
        trials = []
        for number in range(first_trial, first_trial + self.max_trials):
            trial = self._trial(number, question, gold)
            trials.append(trial)
            if verbose:
                _print_trial(trial, self.store)
            if trial.success:
                break
        return ReflexionResult(question, gold, trials)

    def _trial(self, number: int, question: str, gold: str) -> Trial:
        start = len(ledger(self.llm))
        lessons = self.store.relevant(question, self.top_k) if self.store is not None else []
        hints = format_lessons(lessons)
        answer = self.actor.run(question, verbose=False, hints=hints)
        success = bool(self.evaluator(answer, gold))
        shown = [lesson.id for lesson in lessons]
        # Credit goes to the lessons the agent says it applied; if it names none, all shown share it.
        used = cited_lessons(self.actor.trace, shown) or shown
        trial = Trial(number, answer, success, self.actor.stop_reason, shown, used, hints)
        if self.store is not None:
            trial.evicted = self.store.record_outcome(used, success, trial=number)
            if not success:
                lesson = write_reflection(self.llm, question, self.actor.trace, answer)
                if lesson is not None:
                    before = {stored.id for stored in self.store.lessons()}
                    trial.lesson_written = self.store.add(**lesson, trial=number)
                    trial.lesson_was_new = trial.lesson_written not in before
        trial.calls = ledger(self.llm)[start:]
        return trial


def _print_trial(trial: Trial, store: Optional[LessonStore]) -> None:
    verdict = "right" if trial.success else "wrong"
    shown = ", ".join(f"L{i}" for i in trial.shown) or "none"
    used = ", ".join(f"L{i}" for i in trial.used) or "none"
    print(f"Trial {trial.number}: answer {trial.answer!r} is {verdict} | lessons in prompt: {shown} | "
          f"credited: {used} | LLM calls: {len(trial.calls) or 'not recorded'}")  # a trial makes at least one
    for lesson_id in trial.evicted:
        print(f"  L{lesson_id} evicted (confidence below the threshold)")
    if trial.lesson_written is not None and store is not None:
        lesson = store.get(trial.lesson_written)
        if lesson is not None and trial.lesson_was_new:
            print(f"  lesson written: {lesson.as_prompt_line()}")
        elif lesson is not None:
            print(f"  reflection gave L{lesson.id} again (already stored, not duplicated)")


def confidence_by_trial(history: list[dict], last_trial: int) -> dict[int, list[Optional[float]]]:
    """Each lesson's confidence after trials 0..last_trial, from the store's history (None = not in the store)."""
    table: dict[int, list[Optional[float]]] = {}
    for event in history:
        trial = event["trial"] if event["trial"] is not None else 0
        row = table.setdefault(event["lesson_id"], [None] * (last_trial + 1))
        if trial > last_trial:
            continue
        for t in range(trial, last_trial + 1):  # a value holds until the next event changes it
            row[t] = None if event["event"] == "evicted" and t > trial else event["confidence"]
    return table
