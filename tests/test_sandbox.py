"""The sandbox: hostile programs come back as clear results within the limits, and we are unharmed.

Limits are tight (1-3 s, 128 MB) so the file runs in a few seconds. The time bounds asserted
here are the sandbox's own limits plus a margin for process start-up on a loaded machine.
"""
import os
import resource

import pytest

from agentkit import sandbox
from agentkit.sandbox import MAX_OUTPUT_CHARS, run_code

MARGIN_S = 1.5


def group_members(pgid):
    """Every process (zombies too) still in the sandbox's process group, read from /proc."""
    members = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[2]) == pgid:
                    members.append(int(entry))
        except (OSError, IndexError):
            pass
    return members


def can_bound_process_count():
    """RLIMIT_NPROC never binds root; the sandbox then needs an unprivileged user to run as."""
    return os.geteuid() != 0 or sandbox._unprivileged_runner() is not None


def test_value_and_output_come_back():
    result = run_code("print('hello')\nx = 6 * 7", "x")
    assert result.ok and result.value == 42 and result.output == "hello\n"
    assert not result.timed_out and result.exit_code == 0


def test_environment_has_no_secrets_and_cwd_is_fresh_and_removed(monkeypatch):
    monkeypatch.setenv("LLM_API_KEY", "sk-should-never-leak")
    code = "import os\nopen('mine.txt', 'w').write('x')"
    first = run_code(code, "[sorted(os.environ), os.getcwd(), os.listdir('.')]")
    second = run_code(code, "os.getcwd()")
    names, cwd, listing = first.value
    assert "LLM_API_KEY" not in names and not any("KEY" in n or "TOKEN" in n for n in names)
    assert listing == ["mine.txt"]  # only what the code itself wrote
    assert cwd != second.value and cwd != os.getcwd()
    assert not os.path.exists(cwd) and not os.path.exists(second.value)


def test_the_child_runs_under_the_requested_limits():
    # The CPU limit is a backstop the wall clock beats, so it is checked here rather than by a run.
    wanted = {"CPU": 2, "AS": 128 * 2**20, "NPROC": 8, "FSIZE": 2**20, "CORE": 0}
    expression = f"[resource.getrlimit(getattr(resource, 'RLIMIT_' + name)) for name in {list(wanted)}]"
    result = run_code("import resource", expression, timeout_s=1, memory_mb=128, max_processes=8, max_file_mb=1)
    got = dict(zip(wanted, result.value))
    # At most what was asked (lower if our own hard limit is lower), and never unlimited (-1).
    assert all(0 < got[name][0] <= wanted[name] for name in ("CPU", "AS", "NPROC", "FSIZE"))
    assert got["CORE"] == [0, 0]  # no core dumps, and the code cannot raise that limit again


def test_infinite_loop_is_stopped_by_the_wall_clock():
    result = run_code("while True:\n    pass", timeout_s=0.5)
    assert result.timed_out and "timed out" in result.error
    assert result.duration_s < 0.5 + MARGIN_S
    assert group_members(result.pid) == []


def test_memory_bomb_is_a_memory_error():
    result = run_code("hoard = []\nwhile True:\n    hoard.append(bytearray(10**7))", timeout_s=3, memory_mb=128)
    assert not result.timed_out
    assert result.error == "MemoryError"
    assert result.duration_s < 3


def test_our_process_limits_are_untouched():
    before = [resource.getrlimit(r) for r in (resource.RLIMIT_AS, resource.RLIMIT_CPU, resource.RLIMIT_NPROC)]
    run_code("x = bytearray(10**10)", memory_mb=128)
    after = [resource.getrlimit(r) for r in (resource.RLIMIT_AS, resource.RLIMIT_CPU, resource.RLIMIT_NPROC)]
    assert before == after


def test_one_huge_allocation_fails_at_once():
    result = run_code("x = bytearray(10**10)", memory_mb=128, timeout_s=2)
    assert result.error == "MemoryError" and not result.timed_out


def test_fork_bomb_is_refused_by_the_guard():
    result = run_code("import os\nwhile True:\n    os.fork()", timeout_s=2)
    assert result.error.startswith("PermissionError: sandbox guard: os.fork")
    assert group_members(result.pid) == []


@pytest.mark.skipif(not can_bound_process_count(), reason="root without an unprivileged interpreter")
def test_fork_bomb_without_the_guard_is_bounded_by_the_process_limit():
    result = run_code("import os\nwhile True:\n    os.fork()", timeout_s=2, max_processes=8, guard=False)
    assert not result.timed_out
    assert result.error.startswith("BlockingIOError")
    assert result.survivors == 0 and group_members(result.pid) == []


@pytest.mark.skipif(not can_bound_process_count(), reason="root without an unprivileged interpreter")
def test_stubborn_fork_bomb_is_killed_with_its_whole_group():
    code = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    result = run_code(code, timeout_s=0.5, max_processes=8, guard=False)
    assert result.timed_out and result.duration_s < 0.5 + MARGIN_S
    assert result.survivors == 0 and group_members(result.pid) == []


@pytest.mark.parametrize("code", [
    "import os\nos.system('echo hacked')",
    "import subprocess\nsubprocess.run(['echo', 'hacked'])",
])
def test_shell_and_subprocess_are_refused(code):
    result = run_code(code)
    assert result.error.startswith("PermissionError: sandbox guard:")
    assert "hacked" not in result.output


def test_writing_outside_its_directory_is_refused(tmp_path):
    target = tmp_path / "escape.txt"
    for code in (f"open({str(target)!r}, 'w').write('x')",
                 "open('../escape.txt', 'w').write('x')",
                 f"import os\nos.remove({str(tmp_path / 'keep.txt')!r})",
                 f"open('mine.txt', 'w').write('x')\nimport os\nos.replace('mine.txt', {str(target)!r})"):
        (tmp_path / "keep.txt").write_text("keep")
        result = run_code(code)
        assert "writing outside" in result.error or "outside the working directory" in result.error
        assert not target.exists() and (tmp_path / "keep.txt").exists()


def test_writing_inside_and_reading_anywhere_are_allowed():
    result = run_code("open('a.txt', 'w').write('hi')\nimport os", "[open('a.txt').read(), len(os.listdir('/')) > 0]")
    assert result.ok and result.value == ["hi", True]


def test_output_flood_hits_the_file_size_limit_and_is_truncated():
    result = run_code("while True:\n    print('x' * 1000)", timeout_s=2, max_file_mb=1)
    assert not result.timed_out and "File too large" in result.error
    assert len(result.output) <= MAX_OUTPUT_CHARS + 30


@pytest.mark.parametrize("code, expression, error", [
    ("def f(:", None, "SyntaxError"),
    ("1 / 0", None, "ZeroDivisionError: division by zero"),
    ("s = {1}", "s", "the value is not JSON-serialisable"),
    ("import sys\nsys.exit(3)", None, "SystemExit: 3"),
])
def test_ordinary_failures_are_clear_errors(code, expression, error):
    result = run_code(code, expression)
    assert result.error.startswith(error) and not result.timed_out


def test_bad_arguments_raise_at_once():
    with pytest.raises(TypeError):
        run_code(b"print(1)")
