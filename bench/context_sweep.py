"""Write data/context_sweep.json: every context strategy of chapter 17 on every relay task, at the long-context
knob's two settings (0, and 0.05 per 1,000 prompt tokens with 8 seeds), on the stand-in.

    .venv/bin/python bench/context_sweep.py      # about a minute and a half on a 2-core machine

Each row is one run, read from its ledger (agentkit.context_runs.row); at knob 0 the per-call prompt tokens,
cached-prefix tokens and who made each call are kept too, for chapter 17's curves. The runs are deterministic:
the same code writes the same file (tests/test_context_runs.py re-runs a sample of rows and compares).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from agentkit.context_runs import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
