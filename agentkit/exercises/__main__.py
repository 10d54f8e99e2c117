"""Instructors: run every worked solution against its check, or measure what a forked check costs.

    python -m agentkit.exercises solutions              # the folder of worked solutions (chNN.py files)
    python -m agentkit.exercises overhead [id] [n]      # a check's time, forked and in-process, n of each
"""
import os
import statistics
import sys
import time
from pathlib import Path

from . import check, check_solutions


def _cpu() -> float:
    """CPU seconds of this process and of the children it has waited for (the children count 0 on Windows)."""
    try:
        import resource  # POSIX only; os.times() counts in clock ticks (10 ms), too coarse for one check
    except ImportError:
        return time.process_time()
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def overhead(id: str = "13.hit", n: int = 50) -> None:
    """Median wall and CPU time of `n` checks of `id` with its worked solution, forked and in-process alternated
    (one of each in turn: a machine whose load drifts slows both alike). The children's CPU counts once reaped,
    which the next forked check does: the medians include it."""
    import importlib.util

    chapter = id.split(".")[0]
    folder = Path("solutions")
    spec = importlib.util.spec_from_file_location(f"solutions_ch{chapter}", folder / f"ch{chapter}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    answer = module.SOLUTIONS[id]
    times = {"fork": ([], []), "in-process": ([], [])}
    for path in ("fork", "in-process"):  # one of each first: imports and caches, not counted
        os.environ["AGENTKIT_CHECKS"] = path
        check(id, answer, seed=0)
    for number in range(n):
        for path in ("fork", "in-process") if number % 2 == 0 else ("in-process", "fork"):
            os.environ["AGENTKIT_CHECKS"] = path
            cpu, start = _cpu(), time.perf_counter()
            verdict = check(id, answer, seed=number)
            times[path][0].append(time.perf_counter() - start)
            times[path][1].append(_cpu() - cpu)
            if not verdict.ok:
                sys.exit(f"{id} failed its check on the {path} path: {verdict.text}")
    os.environ.pop("AGENTKIT_CHECKS", None)
    for path, (wall, cpu) in times.items():
        print(f"{id} {path:10}: wall median {statistics.median(wall) * 1000:7.1f} ms, CPU median "
              f"{statistics.median(cpu) * 1000:6.1f} ms over {n} checks")
    extra = statistics.median(times["fork"][0]) - statistics.median(times["in-process"][0])
    print(f"the fork adds {extra * 1000:.1f} ms of wall time per check (medians)")


if len(sys.argv) > 1 and sys.argv[1] == "overhead":
    overhead(*(sys.argv[2:3] or ["13.hit"]), *(int(a) for a in sys.argv[3:4]))
    sys.exit(0)
folder = Path(sys.argv[1] if len(sys.argv) > 1 else "solutions")
if not folder.is_dir():
    sys.exit(f"No folder {folder}: give the path of the worked solutions, e.g. python -m agentkit.exercises solutions")
results = check_solutions(folder)
for id, status in results:
    print(f"{id:12} {status}")
wrong = [id for id, status in results if status != "correct"]
print(f"{len(results) - len(wrong)} of {len(results)} solutions pass their checks" + (f"; failing: {wrong}" if wrong else ""))
sys.exit(1 if wrong or not results else 0)
