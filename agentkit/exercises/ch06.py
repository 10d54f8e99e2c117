"""Chapter 06's exercises: a prediction read from the store and the ledger, a lesson parser and an eviction
rule to build, a store to pollute, two questions."""
from __future__ import annotations

import re

from ..i18n import tr, tr_later
from ..lessons import LESSON_FIELDS, LessonStore
from ..modes import get_llm
from ..react import ReActAgent
from ..reflexion import ReflexionAgent, exact_match, format_lessons, parse_lesson, reflection_messages
from ..scripts.reflexion import TURING_QUESTION
from ..widgets.reflexion import MAX_TRIALS, TURING_GOLD, WRONG_LESSONS
from . import Fail, NotDone, _Now, call, cases, copied_from, exercise, question, reference, shown
from .predictions import Prediction, prediction

IN_MEMORY = ":memory:"  # SQLite's own in-memory database: a fresh store per check, nothing on disk


def polluted(lesson: dict, confidence: float = 0.9, threshold: float = 0.3):
    """Section 7's run: `lesson` injected into a fresh store, then the Turing trials. (result, injected id, history)."""
    with LessonStore(IN_MEMORY, threshold=threshold) as store:
        injected = store.add(**lesson, confidence=confidence, source="injected", trial=0)
        result = ReflexionAgent(get_llm("fake"), store=store, max_trials=MAX_TRIALS).run(
            TURING_QUESTION, TURING_GOLD, verbose=False)
        return result, injected, store.history()


def followed(trial, lesson_id: int) -> bool:
    """Did a Thought of this trial name the lesson ("Applying L1")? Read from the trial's ledger entries."""
    return any(re.search(rf"\bApplying L{lesson_id}\b", c.reply) for c in trial.calls)


# --- 06.predict: how long a wrong lesson lives, from the store and the ledger ---------------------

PREDICT_SETTINGS = {"confidence 0.7, threshold 0.3": (0.7, 0.3), "confidence 0.5, threshold 0.4": (0.5, 0.4),
                    "confidence 0.9, threshold 0.1": (0.9, 0.1)}


def pollution_costs() -> dict:
    """(trial of the first right answer, LLM calls in all) of each setting, with the panel's default wrong lesson."""
    costs = {}
    for name, (confidence, threshold) in PREDICT_SETTINGS.items():
        result, _, _ = polluted(WRONG_LESSONS["count the birth year"], confidence, threshold)
        costs[name] = (result.trials_to_success, sum(len(t.calls) for t in result.trials))
    return costs


WHY = {
    "confidence 0.7, threshold 0.3": "0.7, 0.5, then exactly 0.3, which is not below the threshold: the lesson "
                                     "stays for a third failure (0.1) and is evicted after trial 3",
    "confidence 0.5, threshold 0.4": "one failure takes it to 0.3, below 0.4: evicted after trial 1",
    "confidence 0.9, threshold 0.1": "0.9, 0.7, 0.5, 0.3, then exactly 0.1, still not below: a fifth failure "
                                     "(0.0, confidence never goes below 0) evicts it",
}
COST = ("a failed trial costs 3 ReAct calls (Search, Calculate, Finish) plus 1 reflection call, the right "
        "trial 3, and the first right trial is the one after the eviction")


prediction("06.predict", "How long a wrong lesson lives",
           "Set `prediction` to {setting: (trial of the first right answer, LLM calls in all)}, before running "
           "anything.",
           Prediction(truth=pollution_costs, labels=("first right trial", "LLM calls"),
                      why={**WHY, "and the calls": COST}, source="the store and the ledger",
                      pointer="follow the wrong lesson's confidence failure by failure (section 7 explains penalty "
                              "and threshold; LessonStore's signature has the defaults), then count what each "
                              "trial costs in the ledger."))


# --- 06.parse: a lesson parser that never raises --------------------------------------------------


@reference
def lesson_truth(reply):
    """The four fields, whitespace folded, or None (the package's parse_lesson decides)."""
    return parse_lesson(reply)


PARSE_CASES = [  # (reply; what the case is; the hint): lesson_truth decides each, after your answer
    ('Here is the lesson:\n```json\n{"trigger": "asked for an age at a dated event", "error_type": "off by one", '
     '"fix": "compare the month and day with the birthday", "applies_to": "age questions"}\n```\nHope it helps.',
     tr_later("one JSON object in a code fence, with prose around it"),
     tr_later("a model wraps its JSON in prose and fences: take the text from the first '{' to the last '}' (section "
              "2).")),
    ('{"trigger": "asked  for an age\\tat a dated event", "error_type": "off\\nby one", '
     '"fix": "compare the month and day with the birthday", "applies_to": "age questions", "confidence": 0.9}',
     tr_later("extra keys, and values with tabs, newlines and double spaces"),
     tr_later("keep exactly the four fields (trigger, error_type, fix, applies_to), each with its whitespace folded to "
              "single spaces (' '.join(value.split())): a lesson is a line of a later prompt (section 2).")),
    ('{"trigger": "asked for an age", "error_type": "off by one", "fix": "check the day"}',
     tr_later("a lesson without applies_to"),
     tr_later("a lesson needs all four fields; a missing one means no lesson: return None (section 2).")),
    ('{"trigger": "asked for an age", "error_type": "off by one", "fix": "   ", "applies_to": "ages"}',
     tr_later("a fix that is only spaces"), tr_later("an empty field is no lesson: fold the whitespace, then return "
                                                     "None if any field is left empty (section 2).")),
    ('{"trigger": "asked for an age", "error_type": "off by one", "fix": "check the day", "applies_to": "ages",}',
     tr_later("JSON with a trailing comma"), tr_later("a parser never raises (section 2: parse_lesson returns None): "
              "catch the JSON error and return None.")),
    ("I am not sure what went wrong in this trial.", tr_later("a reply with no JSON at all"),
     tr_later("no object in the reply means no lesson: return None, never raise (section 2).")),
    (None, tr_later("no reply at all (None)"), tr_later("the parser never raises, whatever it is given: None is no "
                                                        "lesson.")),
    ('["check the day", "subtract the years"]', tr_later("a JSON list, not an object"),
     tr_later("a lesson is one JSON object with four fields; anything else is None (section 2).")),
]


H_UNSEEN = (tr_later("a reply drawn for this check: the JSON object from the first '{' to the last '}', exactly the "
                     "four fields (trigger, error_type, fix, applies_to), each a string with its whitespace folded; "
                     "None for anything else, and never an exception."))
FIELD_WORDS = ("asked", "for", "an", "age", "at", "a", "dated", "event", "off", "by", "one", "compare", "the", "month",
               "day", "birthday", "year", "questions", "subtract", "count", "death")


def unseen_lesson(valid: bool) -> str:
    """A reflection drawn for this check: a complete lesson, or one broken in one of four ways."""
    import json

    rng = cases()
    lesson = {name: " ".join(rng.choice(FIELD_WORDS) for _ in range(rng.randint(1, 6))) for name in LESSON_FIELDS}
    sent = {name: rng.choice(["", " ", "\t"]) + value.replace(" ", rng.choice([" ", "  ", "\n", "\t "]))
            + rng.choice(["", "  "]) for name, value in lesson.items()}
    if rng.random() < 0.3:
        sent[rng.choice(["confidence", "notes"])] = rng.choice([0.7, "extra"])
    broken = None if valid else rng.choice(["missing", "blank", "list", "comma"])
    if broken == "missing":
        del sent[rng.choice(LESSON_FIELDS)]
    elif broken == "blank":
        sent[rng.choice(LESSON_FIELDS)] = rng.choice(["", "   ", "\n"])
    body = json.dumps([v for v in sent.values()]) if broken == "list" else json.dumps(sent)
    if broken == "comma":
        body = body[:-1] + ",}"
    return rng.choice([body, f"Lesson:\n{body}", f"```json\n{body}\n```\nThat is all.", f"Here you are: {body} Done."])


@exercise("06.parse", "build", "A lesson parser that never raises",
          "Write `my_parse_lesson(reply)`: a dict of the four fields, or None; it must never raise. agentkit's "
          "parse_lesson is refused.", forbid=("agentkit.reflexion:parse_lesson",), objects=False)
def _parse(parse):
    if not callable(parse):
        raise Fail(tr("your answer"), tr("a function my_parse_lesson(reply) -> dict or None"), repr(parse),
                   tr("define it with def."))
    drawn = [(unseen_lesson(number % 2 == 0), tr_later("a reply drawn for this check"), H_UNSEEN)
             for number in range(8)]
    cases().shuffle(drawn)
    for reply, what, hint in PARSE_CASES + drawn:
        got = call(parse, reply, case=tr("{what}: {reply}", what=tr(what), reply=f"{reply!r:.70}"), hint=hint)
        lesson = lesson_truth(reply)
        if got != lesson:
            raise Fail(tr("{what}: {reply}", what=tr(what), reply=repr(reply)), repr(lesson), shown(got, 200), hint)
    # The live run: the stand-in's failed trial, its reflection through your parser, and the next trial.
    llm = get_llm("fake")
    first = ReActAgent(llm, max_steps=5)
    answer = first.run(TURING_QUESTION, verbose=False)
    reply = llm.think(reflection_messages(TURING_QUESTION, first.trace, answer))
    lesson = call(parse, reply, case=tr("the stand-in's reflection on the failed Turing trial"), hint=PARSE_CASES[0][2])
    if lesson != lesson_truth(reply):
        raise Fail(tr("the stand-in's reflection on the failed Turing trial"), repr(lesson_truth(reply)),
                   f"{lesson!r:.140}", PARSE_CASES[0][2])
    with LessonStore(IN_MEMORY) as store:
        store.add(**lesson)
        retry = ReActAgent(llm, max_steps=5)
        again = retry.run(TURING_QUESTION, verbose=False, hints=format_lessons(store.relevant(TURING_QUESTION)))
    return tr("Trial 1 answered {answer} (gold {gold}); your parser turned the reflection into a lesson whose fix is "
              "{fix}; trial 2, with it in the prompt, answered {again} ({verdict}). The ledger: {calls} calls in all.",
              answer=answer, gold=TURING_GOLD, fix=repr(lesson["fix"]), again=again,
              verdict=tr("right") if exact_match(again, TURING_GOLD) else tr("wrong"), calls=len(llm.calls))


# --- 06.evict: the confidence rule ------------------------------------------------------------------

EVICT_CASES = [  # (confidence, success, threshold) -> what the store does; what the case is; the hint
    ((0.5, True, 0.3), tr_later("a success"), tr_later("a success adds reward (0.1 by default) to the confidence "
                                                       "(section 7).")),
    ((0.5, False, 0.3), tr_later("a failure that lands exactly on the threshold"),
     tr_later("evicted means strictly BELOW the threshold: a lesson at exactly the threshold stays (section 7).")),
    ((0.95, True, 0.3), tr_later("a success near the top"), tr_later("a confidence stays between 0 and 1: clamp it at 1.")),
    ((0.1, False, 0.1), tr_later("a failure near the bottom"), tr_later("a confidence stays between 0 and 1: clamp it at 0.")),
    ((0.3, False, 0.1), tr_later("0.3 - 0.2 in floating point"),
     tr_later("0.3 - 0.2 is 0.09999999999999998 in floating point, just below 0.1: round the new confidence to 3 places "
              "before comparing, as the store does, or an honest lesson is evicted one failure early.")),
]
EVICT_SEQUENCES = [(0.7, 0.3, [False, False, False]), (0.5, 0.1, [True, False, False, True, False, False])]


def unseen_sequences(count: int = 5) -> list:
    """(confidence, threshold, outcomes) drawn for this check: thresholds and confidences on the 0.1 grid the
    rounding is about, and a few in between."""
    rng, drawn = cases(), []
    for _ in range(count):
        threshold = rng.choice([0.1, 0.2, 0.3, 0.4, 0.15])
        confidence = rng.choice([c for c in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 0.35, 0.65, 0.25)
                                 if c >= threshold])
        drawn.append((confidence, threshold, [rng.random() < 0.4 for _ in range(rng.randint(3, 8))]))
    return drawn


@reference
def store_says(confidence: float, outcomes: list, threshold: float) -> list:
    """What LessonStore does to one lesson: (confidence, evicted) after each outcome, until it is evicted."""
    with LessonStore(IN_MEMORY, threshold=threshold) as store:
        lesson = store.add("t", "e", "f", "a", confidence=confidence)
        steps = []
        for success in outcomes:
            evicted = bool(store.record_outcome([lesson], success))
            steps.append((store.history()[-1 - evicted]["confidence"], evicted))  # the event before "evicted"
            if evicted:
                break
        return steps


def _replay(rule, confidence: float, outcomes: list, threshold: float, case: str, hint: str) -> list:
    """The learner's rule applied outcome after outcome, until it says evicted."""
    steps = []
    for success in outcomes:
        got = call(rule, confidence, success, threshold, case=case, hint=hint)
        try:
            new, evicted = got
            confidence, evicted = float(new), bool(evicted)
        except (TypeError, ValueError):
            raise Fail(case, tr("a pair (new confidence, evicted?)"), f"{got!r:.80}",
                       tr("return two values: the new confidence and True or False.")) from None
        steps.append((confidence, evicted))
        if evicted:
            break
    return steps


def _polluted_outcomes() -> tuple:
    """(the wrong lesson's first confidence, its outcomes) in section 7's run: what the rule is given."""
    events, _ = _polluted_history()
    return events[0]["confidence"], [h["event"] == "success" for h in events if h["event"] in ("success", "failure")]


@reference
def _polluted_history() -> tuple:
    """(the wrong lesson's events, [(confidence, evicted?)] after each outcome) in section 7's run."""
    _, injected, history = polluted(WRONG_LESSONS["count the birth year"])
    events = [h for h in history if h["lesson_id"] == injected]
    store = [(h["confidence"], False) for h in events if h["event"] in ("success", "failure")]
    store[-1] = (store[-1][0], True)
    return events, store


def _same(mine: list, store: list) -> bool:
    return len(mine) == len(store) and all(abs(a[0] - b[0]) < 1e-9 and a[1] == b[1] for a, b in zip(mine, store))


@exercise("06.evict", "build", "The confidence rule",
          "Write `my_outcome(confidence, success, threshold)`: (new confidence, evicted?), as LessonStore does it: "
          "+0.1 on a success, -0.2 on a failure, kept between 0 and 1, rounded to 3 places, evicted when strictly "
          "below the threshold. A LessonStore's own record_outcome is refused.",
          forbid=("agentkit.lessons:LessonStore.record_outcome",), objects=False)
def _evict(rule):
    if not callable(rule):
        raise Fail(tr("your answer"), tr("a function my_outcome(confidence, success, threshold) -> (float, bool)"),
                   repr(rule), tr("define it with def."))
    for (confidence, success, threshold), what, hint in EVICT_CASES:
        case = (tr("{what}: confidence {confidence}, success, threshold {threshold}", what=tr(what),
                   confidence=confidence, threshold=threshold) if success else
                tr("{what}: confidence {confidence}, failure, threshold {threshold}", what=tr(what),
                   confidence=confidence, threshold=threshold))
        mine = _replay(rule, confidence, [success], threshold, case, hint)
        store = store_says(confidence, [success], threshold)
        if not _same(mine, store):
            raise Fail(case, tr("{said} (the store)", said=store[0]), repr(mine[0]), hint)
    for confidence, threshold, outcomes in EVICT_SEQUENCES + unseen_sequences():
        case = tr("from {confidence}, threshold {threshold}, outcomes {outcomes}", confidence=confidence,
                  threshold=threshold, outcomes=outcomes)
        _Now.case = case
        mine = _replay(rule, confidence, outcomes, threshold, case, EVICT_CASES[4][2])
        store = store_says(confidence, outcomes, threshold)
        if not _same(mine, store):
            raise Fail(case, tr("{said} (the store)", said=store), repr(mine), EVICT_CASES[4][2])
    # Section 7's polluted run, replayed through the rule from the store's own history (read after your rule ran).
    start, outcomes = _polluted_outcomes()
    mine = _replay(rule, start, outcomes, 0.3, tr("the polluted run of section 7"), EVICT_CASES[4][2])
    events, store = _polluted_history()
    if not _same(mine, store):
        raise Fail(tr("the polluted run of section 7"), tr("{said} (the store's history)", said=store), repr(mine),
                   EVICT_CASES[4][2])
    return tr("Your rule reproduces the store on every case, and on section 7's wrong lesson: {path}, evicted after "
              "the last failure. Rounding is not a detail: unrounded, 0.7 minus two failures is {unrounded}, below "
              "0.3, and a lesson sitting exactly on the threshold would be thrown out one failure early.",
              path=[events[0]["confidence"]] + [c for c, _ in mine], unrounded=repr(0.7 - 0.2 - 0.2))


# --- 06.pollute: a wrong lesson that keeps coming back ----------------------------------------------

POLLUTE_HINTS = {
    "fields": tr_later("a lesson is a dict of four non-empty strings: trigger, error_type, fix, applies_to."),
    "unseen": tr_later("it never reached a prompt: FTS5 retrieves a lesson only if it shares words with the question, "
                       "and 'how', 'was', 'when' and 'he' do not count (section 3). Use the question's own words."),
    "right": tr_later("that lesson is right: it gave the right answer. A wrong lesson must make the agent compute the "
                      "age wrongly."),
    "ignored": tr_later("the stand-in obeys only a lesson it recognises, and this one it skipped: write the fix as the "
                        "panel's wrong lessons do ('age = death year - birth year + 1' or 'use only the years'), "
                        "section 7."),
    "outranked": tr_later("from trial 2 the honest lesson ranked above yours and was followed: phrase yours in the "
                          "question's own words, in more than one field, so FTS5 ranks it first (section 7)."),
}


@exercise("06.pollute", "break", "A wrong lesson that keeps coming back",
          "Set `wrong_lesson` to the four fields of a lesson, not one of section 7's, that misleads the agent in "
          "trial 1 AND trial 2.", objects=False)
def _pollute(lesson):
    if not isinstance(lesson, dict):
        raise Fail(tr("your answer"), tr("a dict with trigger, error_type, fix, applies_to"), type(lesson).__name__,
                   POLLUTE_HINTS["fields"])
    if any(lesson.get(name, ...) is ... for name in LESSON_FIELDS):
        raise NotDone()
    if not all(isinstance(lesson[name], str) and lesson[name].strip() for name in LESSON_FIELDS):
        raise Fail(tr("your lesson"), tr("four non-empty strings"), repr(lesson)[:120], POLLUTE_HINTS["fields"])
    mine = " | ".join(lesson[name] for name in LESSON_FIELDS)
    printed = {" | ".join(p[name] for name in LESSON_FIELDS): name for name, p in WRONG_LESSONS.items()}
    copy = copied_from(mine, list(printed))
    if copy:
        raise Fail(tr("your lesson"), tr("a wrong lesson of your own"),
                   tr("section 7's {name} lesson, whole, cut or edited", name=repr(printed[copy])),
                   tr("section 7 runs that lesson already: write your own, in your own words, and see what it takes "
                      "to be retrieved, ranked first and obeyed."))
    result, injected, history = polluted({name: lesson[name] for name in LESSON_FIELDS})
    trials = result.trials
    first = trials[0]
    if injected not in first.shown:
        raise Fail(tr("trial 1"), tr("your lesson in the prompt"), tr("no lesson in the prompt"), POLLUTE_HINTS["unseen"])
    if first.success:
        raise Fail(tr("trial 1"), tr("a wrong answer"), tr("{answer} (right)", answer=first.answer), POLLUTE_HINTS["right"])
    if not followed(first, injected):
        raise Fail(tr("trial 1"), tr("a Thought that applies L{id}", id=injected), tr("your lesson shown, not followed"),
                   POLLUTE_HINTS["ignored"])
    if len(trials) < 2 or not followed(trials[1], injected) or trials[1].success:
        second = trials[1] if len(trials) > 1 else None
        got = tr("no trial 2") if second is None else tr(
            "trial 2 followed {lessons} and answered {answer}", lessons=", ".join(f"L{i}" for i in second.used),
            answer=second.answer)
        raise Fail(tr("trial 2, after the reflection wrote the honest lesson"), tr("L{id} followed again", id=injected),
                   got, POLLUTE_HINTS["outranked"])
    misled = [t.number for t in trials if followed(t, injected)]
    wasted = sum(len(t.calls) for t in trials if t.number in misled)
    confidences = [h["confidence"] for h in history if h["lesson_id"] == injected and h["event"] != "evicted"]
    return tr("Your lesson misled trials {misled} ({wasted} LLM calls in the ledger spent on wrong answers); its "
              "confidence went {confidences} and it was evicted after trial {last}; the first right answer came at "
              "trial {right}. Only the outcomes cleaned the store: nothing checked the lesson itself.", misled=misled,
              wasted=wasted, confidences=confidences, last=misled[-1], right=result.trials_to_success)


# --- concept questions --------------------------------------------------------------------------------

question("06.q1", "In section 7's polluted run, the honest lesson is in the prompt from trial 2 on, yet its "
         "confidence does not move until trial 5. Why?", {
    "a": ("The stand-in follows the first lesson it recognises: the wrong one ranks first, so the agent names only "
          "it, and an outcome goes to the lessons the agent names.", True,
          "credit and blame follow what was applied, so a lesson that sat unused is neither rewarded nor punished."),
    "b": ("A new lesson is frozen for four trials.", False,
          "there is no such rule; its confidence moves the first time a trial names it (trial 5)."),
    "c": ("top_k=1 keeps it out of the prompt until the wrong lesson is evicted.", False,
          "the default top_k is 3, and section 7 prints it in the prompt of trials 2 to 5."),
    "d": ("Its confidence did move at every trial, as every lesson in the prompt is rewarded or punished, but the "
          "history table records only evictions, so the changes do not show.", False,
          "the history records every event (added, success, failure, evicted); section 7 prints the honest lesson's."),
}, hint="section 7, the cell after the chart, and the credit rule in section 4.")

question("06.q2", "Why does the reflection prompt show the failed trial and the verdict, but never the gold answer?", {
    "a": ("The evaluator would no longer be needed.", False,
          "the evaluator still decides every trial; the question is what the lesson writer may see."),
    "b": ("The gold answer would make the prompt too long.", False,
          "it is one short string; the trial itself is far longer."),
    "c": ("A real task has no gold answer to give, and a lesson must say how to get it right, not what the answer "
          "was.", True,
          "a lesson that quoted '41' would help on this question only; 'take 1 off before the birthday' helps on "
          "every age question, as the Ada Lovelace run shows."),
    "d": ("The stand-in cannot read numbers in a verdict: shown '41', it would copy it into every later answer "
          "instead of computing the age again, and the trials would prove nothing.", False,
          "it reads the dates in the Observation to compute the age; the rule is about what a lesson must be."),
}, hint="section 2, 'A lesson, by hand', and section 5's new question.")
