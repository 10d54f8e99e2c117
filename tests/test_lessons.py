"""The SQLite lesson store: persistence, FTS5 ranking, confidence, eviction, and lossless errors."""
import json
import multiprocessing
import sqlite3
import subprocess
import sys
import textwrap

import platformdirs
import pytest

from agentkit.lessons import (
    MAX_TOP_K,
    SCHEMA_VERSION,
    CorruptStoreError,
    LessonStore,
    NewerSchemaError,
    NotALessonStoreError,
    StoreLockedError,
    default_path,
    fts5_available,
)

AGE = dict(trigger="asked how old a person was when they died", error_type="off by one year",
           fix="take 1 off if the death came before the birthday", applies_to="age questions")
UNITS = dict(trigger="a height asked in feet", error_type="wrong unit",
             fix="multiply metres by 3.28084", applies_to="unit conversions")
SPELLING = dict(trigger="a name with an accent", error_type="spelling",
                fix="copy names exactly from the observation", applies_to="names")
QUESTION = "How old was Alan Turing when he died?"


@pytest.fixture
def path(tmp_path):
    return tmp_path / "lessons.sqlite3"


@pytest.fixture
def store(path):
    with LessonStore(path, timeout=0.1) as s:
        yield s


def _raw(path):
    return sqlite3.connect(str(path), isolation_level=None)


def test_fts5_is_available_in_this_python():
    assert fts5_available()


def test_a_new_store_is_wal_with_a_schema_version(store, path):
    store.add(**AGE)
    db = _raw(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_default_path_is_in_the_user_data_dir(tmp_path, monkeypatch):
    assert default_path().parent == platformdirs.user_data_path("agentkit", appauthor=False)
    monkeypatch.setattr(platformdirs, "user_data_dir", lambda *a, **k: str(tmp_path / "data"))
    with LessonStore() as store:  # no path: the store opens there, not in the working directory
        assert store.path == tmp_path / "data" / "lessons.sqlite3" and store.path.exists()


def test_a_directory_is_not_a_store_path(tmp_path):
    with pytest.raises(Exception, match="directory"):
        LessonStore(tmp_path)


def test_lessons_persist_across_a_new_process(store, path):
    first = store.add(**AGE)
    child = textwrap.dedent(f"""
        from agentkit.lessons import LessonStore
        with LessonStore({str(path)!r}) as s:
            print([l.id for l in s.relevant({QUESTION!r})])
            s.add("a second lesson", "about ages", "written by the child process", "old people")
    """)
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"[{first}]"  # the child read what this process wrote
    assert [lesson.fix for lesson in store.lessons()] == [AGE["fix"], "written by the child process"]


def test_retrieval_ranks_the_relevant_lesson_first(store):
    # Half-relevant lessons before and after it: no order by id can put the age lesson first.
    building = store.add("asked how old a building is", "wrong year", "use the year it was completed", "buildings")
    ids = {name: store.add(**lesson) for name, lesson in
           [("units", UNITS), ("age", AGE), ("spelling", SPELLING)]}
    plant = store.add("a plant died in the shade", "wrong light", "move it to the window", "house plants")
    found = [lesson.id for lesson in store.relevant(QUESTION, k=5)]
    # The age lesson shares "old" and "died" with the question, the others one word or none.
    assert found[0] == ids["age"] and sorted(found[1:]) == [building, plant]


def test_only_top_k_come_back_and_k_is_capped(store):
    for i in range(8):
        store.add(f"how old someone was, case {i}", "age", f"fix {i}", "age questions")
    assert len(store.relevant(QUESTION, k=3)) == 3
    assert len(store.relevant(QUESTION, k=MAX_TOP_K)) == MAX_TOP_K
    for bad in (0, MAX_TOP_K + 1):
        with pytest.raises(ValueError, match="k must be"):
            store.relevant(QUESTION, k=bad)


def test_full_text_syntax_in_a_question_is_just_words(store):
    store.add(**AGE)
    for text in ['old" OR "x', "NEAR(old died)", "old* AND NOT died", "", "???", "died^2 {col}:x"]:
        store.relevant(text)  # must not raise an FTS5 syntax error


def test_confidence_rises_on_success_and_falls_on_failure(store):
    lesson = store.add(**AGE)
    start = store.get(lesson).confidence
    store.record_outcome([lesson], success=True, trial=1)
    after_success = store.get(lesson)
    assert after_success.confidence == pytest.approx(start + store.reward)
    store.record_outcome([lesson], success=False, trial=2)
    after_failure = store.get(lesson)
    assert after_failure.confidence == pytest.approx(start + store.reward - store.penalty)
    assert (after_failure.uses, after_failure.successes, after_failure.failures) == (2, 1, 1)
    assert [(h["trial"], h["event"]) for h in store.history()] == [(None, "added"), (1, "success"), (2, "failure")]


def test_a_lesson_below_the_threshold_is_evicted_to_the_audit_table(store):
    bad, good = store.add(**AGE), store.add(**SPELLING)
    evicted, trial = [], 0
    while not evicted:
        trial += 1
        evicted = store.record_outcome([bad], success=False, trial=trial)
    assert evicted == [bad]
    assert [lesson.id for lesson in store.lessons()] == [good]
    assert store.relevant(QUESTION) == []  # the evicted lesson can no longer reach a prompt
    (audit,) = store.evicted()
    assert audit["id"] == bad and audit["fix"] == AGE["fix"] and audit["confidence"] < store.threshold
    assert "threshold" in audit["reason"]
    last_two = [h["confidence"] for h in store.history() if h["lesson_id"] == bad and h["event"] == "failure"][-2:]
    assert last_two[0] >= store.threshold > last_two[1]  # evicted at the first step below, not before


def test_an_outcome_is_one_transaction(store):
    lesson = store.add(**AGE)
    history = store.history()
    with pytest.raises(KeyError):
        store.record_outcome([lesson, 999], success=False)
    assert store.get(lesson).confidence == store.initial_confidence  # the first update was rolled back
    assert store.history() == history


def test_the_same_lesson_is_not_stored_twice(store):
    assert store.add(**AGE) == store.add(**{**AGE, "fix": AGE["fix"].upper()})
    assert len(store) == 1


def test_bad_lessons_are_refused(store):
    with pytest.raises(ValueError, match="empty"):
        store.add(**{**AGE, "fix": "   "})
    with pytest.raises(ValueError, match="confidence"):
        store.add(**AGE, confidence=store.threshold / 2)
    assert len(store) == 0


def test_reset_keeps_an_audit_and_export_writes_json(store, tmp_path):
    store.add(**AGE)
    store.add(**UNITS)
    assert store.reset() == 2
    assert len(store) == 0 and [e["reason"] for e in store.evicted()] == ["reset", "reset"]
    target = tmp_path / "export.json"
    data = store.export(target)
    assert json.loads(target.read_text()) == data
    assert data["schema_version"] == SCHEMA_VERSION and len(data["evicted"]) == 2 and data["lessons"] == []


def _filled(path):
    with LessonStore(path) as s:
        for lesson in (AGE, UNITS, SPELLING):
            s.add(**lesson)
    return path.read_bytes()


def test_a_corrupt_header_is_reported_and_the_file_is_left_intact(path):
    good = _filled(path)
    broken = b"\x00" * 100 + good[100:]
    path.write_bytes(broken)
    with pytest.raises(CorruptStoreError, match="left exactly as it was"):
        LessonStore(path)
    assert path.read_bytes() == broken  # never overwritten or recreated
    path.write_bytes(good[:100] + broken[100:])  # repair the header: every lesson is still there
    with LessonStore(path) as store:
        assert [lesson.fix for lesson in store.lessons()] == [AGE["fix"], UNITS["fix"], SPELLING["fix"]]


def test_a_damaged_page_deep_in_the_file_is_caught_before_any_write(path):
    good = _filled(path)
    db = _raw(path)
    root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'lessons'").fetchone()[0]
    offset = (root - 1) * db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    broken = good[:offset] + b"\xff" + good[offset + 1:]  # the lessons table's page type byte
    path.write_bytes(broken)
    with pytest.raises(CorruptStoreError, match="left exactly as it was"):
        LessonStore(path)  # the header and schema read fine: only the integrity check sees this
    assert path.read_bytes() == broken


def test_a_truncated_file_is_reported_and_left_intact(path):
    good = _filled(path)
    path.write_bytes(good[: len(good) // 2])
    with pytest.raises(CorruptStoreError):
        LessonStore(path)
    assert path.read_bytes() == good[: len(good) // 2]


def test_a_locked_store_refuses_writes_and_keeps_its_lessons(store, path):
    kept = store.add(**AGE)
    other = _raw(path)
    other.execute("BEGIN EXCLUSIVE")
    with pytest.raises(StoreLockedError, match="locked"):
        store.add(**UNITS)
    with pytest.raises(StoreLockedError):
        store.record_outcome([kept], success=False)
    assert [lesson.id for lesson in store.lessons()] == [kept]  # reads still work in WAL mode
    other.execute("ROLLBACK")
    store.add(**UNITS)
    assert len(store) == 2 and store.get(kept).confidence == store.initial_confidence


def test_a_newer_schema_is_refused_and_left_intact(path):
    _filled(path)
    db = _raw(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    before = path.read_bytes()
    with pytest.raises(NewerSchemaError, match="Upgrade agentkit"):
        LessonStore(path)
    assert path.read_bytes() == before
    assert _raw(path).execute("SELECT count(*) FROM lessons").fetchone()[0] == 3


def test_another_sqlite_database_is_not_taken_over(path):
    db = _raw(path)
    db.execute("CREATE TABLE notes (text TEXT)")
    db.execute("INSERT INTO notes VALUES ('keep me')")
    db.close()
    before = path.read_bytes()
    with pytest.raises(NotALessonStoreError, match="notes"):
        LessonStore(path)
    assert path.read_bytes() == before


# --- two processes at once ----------------------------------------------------

RACE_ROUNDS = 15  # a race lost one time in three survives 15 rounds with probability (2/3)**15 < 0.3%


def _open_and_add(paths, barrier, worker, report):
    """One of two racing processes: for each new path, wait for the other, then open the store and add."""
    failures = []
    for path in paths:
        try:
            barrier.wait(timeout=10)
            with LessonStore(path) as store:
                store.add(f"a race run by worker {worker}", "none", f"written by worker {worker}", "races")
        except Exception as e:  # noqa: BLE001 - every failure is the finding
            failures.append(f"{path}: worker {worker}: {type(e).__name__}: {e}")
    report.write_text("\n".join(failures))


def test_two_processes_creating_one_new_store_at_once_both_succeed_and_lose_nothing(tmp_path):
    # fork where the OS has it (Linux, macOS); Windows has only spawn, which re-imports this module.
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    paths = [tmp_path / f"race{i}.sqlite3" for i in range(RACE_ROUNDS)]
    barrier = context.Barrier(2)
    reports = [tmp_path / f"worker{w}.txt" for w in (1, 2)]
    workers = [context.Process(target=_open_and_add, args=(paths, barrier, w, reports[w - 1])) for w in (1, 2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert [w.exitcode for w in workers] == [0, 0]
    assert [report.read_text() for report in reports] == ["", ""]
    for path in paths:
        fixes = sorted(row[0] for row in _raw(path).execute("SELECT fix FROM lessons"))
        assert fixes == ["written by worker 1", "written by worker 2"]


# --- careless input: long lessons, a string of ids, "~", a FIFO, an unreadable file -------


def test_two_long_lessons_that_differ_after_the_cut_are_both_kept(store):
    from agentkit.lessons import MAX_FIELD_CHARS

    start = "check the unit of every number in the observation before using it " * 7  # over 400 characters
    first = store.add(**{**AGE, "fix": start + "then convert feet to metres"})
    second = store.add(**{**AGE, "fix": start + "then convert pounds to kilograms"})
    again = store.add(**{**AGE, "fix": start + "then convert feet to metres"})
    assert first != second and again == first and len(store) == 2
    fix = store.get(first).fix
    assert len(fix) <= MAX_FIELD_CHARS and "[... cut:" in fix and fix.startswith("check the unit")


def test_a_string_of_ids_is_refused_not_read_digit_by_digit(store):
    one, two = store.add(**AGE), store.add(**UNITS)
    history = store.history()
    with pytest.raises(TypeError, match="lesson_ids must be a list of lesson ids"):
        store.record_outcome("12", success=True)
    assert store.history() == history and store.get(one).uses == store.get(two).uses == 0
    store.record_outcome(two, success=True)  # one id on its own is fine
    assert store.get(two).uses == 1 and store.get(one).uses == 0


def test_a_path_with_a_tilde_is_in_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    with LessonStore("~/lessons/x.sqlite3") as store:
        assert store.path == tmp_path / "home" / "lessons" / "x.sqlite3"
    assert (tmp_path / "home" / "lessons" / "x.sqlite3").is_file() and not (tmp_path / "~").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="no FIFOs on Windows")
def test_a_fifo_is_refused_with_a_clear_message(tmp_path):
    import os

    from agentkit.lessons import LessonStoreError

    fifo = tmp_path / "lessons.sqlite3"
    os.mkfifo(fifo)
    with pytest.raises(LessonStoreError, match="is a FIFO .*not a lesson store file; it was left alone"):
        LessonStore(fifo, timeout=0.1)


def test_an_unreadable_file_is_refused_with_what_to_do(path, monkeypatch):
    import os

    from agentkit.lessons import LessonStoreError

    LessonStore(path).close()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if str(p) == str(path) else real_access(p, mode, **kw))
    with pytest.raises(LessonStoreError, match=r"cannot be read and written by this user.*chmod u\+rw"):
        LessonStore(path, timeout=0.1)
