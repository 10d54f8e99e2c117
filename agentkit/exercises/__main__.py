"""Instructors: run every worked solution against its check.

    python -m agentkit.exercises solutions      # the folder of worked solutions (chNN.py files)
"""
import sys
from pathlib import Path

from . import check_solutions

folder = Path(sys.argv[1] if len(sys.argv) > 1 else "solutions")
if not folder.is_dir():
    sys.exit(f"No folder {folder}: give the path of the worked solutions, e.g. python -m agentkit.exercises solutions")
results = check_solutions(folder)
for id, status in results:
    print(f"{id:12} {status}")
wrong = [id for id, status in results if status != "correct"]
print(f"{len(results) - len(wrong)} of {len(results)} solutions pass their checks" + (f"; failing: {wrong}" if wrong else ""))
sys.exit(1 if wrong or not results else 0)
