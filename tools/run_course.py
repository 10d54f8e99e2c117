"""Execute every notebook headless in one AP_MODE, into build/<mode>/, and report each one.

    python tools/run_course.py --mode local            # SmolLM2 on llama.cpp (make course-local)
    python tools/run_course.py --mode real-loopback    # the real client against tools/offscript.py
    python tools/run_course.py --mode fake notebooks/02_react.ipynb

Per notebook it prints the wall time (kernel start included), the LLM calls and tokens every
ledger in the kernel recorded (and how many requests went to a real model through the
openai SDK, the rest being stand-ins), and, for each cell with an error output, the cell's number
(counting Markdown cells, from 1), its first line and the error. Every cell runs even after an error, so one failure does not
hide the next. Exit status 1 if any notebook has an error output. The stored notebooks are
never touched.

How calls are counted: a setup cell (added to the executed copy, removed before it is saved)
wraps `CallRecord.__init__`, so every record any ledger in the kernel appends is tallied,
even from a client the notebook later resets or drops; and it wraps the openai SDK's two
`create` methods, so every request to a real model is counted too.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
MARK = "run_course"

TALLY_SETUP = """\
import agentkit.llm as _run_course_llm
_run_course_tally = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "real_calls": 0}
_run_course_init = _run_course_llm.CallRecord.__init__
def _run_course_counting_init(self, *args, **kwargs):
    _run_course_init(self, *args, **kwargs)
    _run_course_tally["calls"] += 1
    _run_course_tally["prompt_tokens"] += self.prompt_tokens
    _run_course_tally["completion_tokens"] += self.completion_tokens
_run_course_llm.CallRecord.__init__ = _run_course_counting_init
import openai.resources.chat.completions as _run_course_chat, openai.resources.completions as _run_course_text
for _run_course_api in (_run_course_chat.Completions, _run_course_text.Completions):
    def _run_course_counting_create(self, *args, _create=_run_course_api.create, **kwargs):
        _run_course_tally["real_calls"] += 1
        return _create(self, *args, **kwargs)
    _run_course_api.create = _run_course_counting_create
"""
TALLY_REPORT = 'import json as _j; print("RUN_COURSE_TALLY " + _j.dumps(_run_course_tally))'


def _mode_setting() -> str:
    """AP_MODE from the environment, else from the nearest .env file, else fake (as get_llm reads it)."""
    if os.environ.get("AP_MODE"):
        return os.environ["AP_MODE"].strip().lower()
    from dotenv import dotenv_values, find_dotenv

    path = find_dotenv(usecwd=True)
    return ((dotenv_values(path).get("AP_MODE") if path else None) or "fake").strip().lower()


def _marked(source: str):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata[MARK] = True
    return cell


def _first_line(source: str) -> str:
    lines = [line for line in source.splitlines() if line.strip()]
    return (lines[0][:70] + ("…" if len(lines[0]) > 70 else "")) if lines else "(empty)"


def summarize(nb) -> tuple[dict | None, list[str], tuple[float, str]]:
    """From an executed notebook: the tally the report cell printed, the error cells, the slowest cell."""
    tally, errors, slowest = None, [], (0.0, "")
    number = 0
    for cell in nb.cells:
        if cell.metadata.get(MARK):
            for output in cell.get("outputs", []):
                text = output.get("text", "")
                if output.get("output_type") == "stream" and "RUN_COURSE_TALLY " in text:
                    tally = json.loads(text.split("RUN_COURSE_TALLY ", 1)[1])
            continue
        number += 1
        if cell.cell_type != "code":
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                errors.append(f"cell {number} ({_first_line(cell.source)}): {output['ename']}: {output['evalue']}")
        timing = cell.metadata.get("execution", {})
        if "iopub.execute_input" in timing and "shell.execute_reply" in timing:
            begin = datetime.fromisoformat(timing["iopub.execute_input"].replace("Z", "+00:00"))
            end = datetime.fromisoformat(timing["shell.execute_reply"].replace("Z", "+00:00"))
            seconds = (end - begin).total_seconds()
            if seconds > slowest[0]:
                slowest = (seconds, f"cell {number} ({_first_line(cell.source)})")
    return tally, errors, slowest


def run_notebook(path: Path, out_dir: Path, timeout: int) -> dict:
    """Execute one notebook; return its wall time, tally and error cells. Writes out_dir/<name>."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, _marked(TALLY_SETUP))
    nb.cells.append(_marked(TALLY_REPORT))
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                            record_timing=True, store_widget_state=False,
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    try:
        client.execute()
        crashed = ""
    except Exception as e:  # noqa: BLE001 - a dead kernel or a timeout is a failure to report, not to raise
        crashed = f"{type(e).__name__}: {str(e).strip().splitlines()[-1] if str(e).strip() else ''}"
    wall = time.perf_counter() - start

    tally, errors, slowest = summarize(nb)
    if crashed:
        errors.append(f"execution stopped: {crashed}")
    nb.cells = [c for c in nb.cells if not c.metadata.get(MARK)]
    out_dir.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out_dir / path.name)
    return {"notebook": path.stem, "wall_s": wall, "tally": tally, "errors": errors, "slowest": slowest}


def report_line(result: dict) -> str:
    tally = result["tally"] or {}
    calls = tally.get("calls", "?")
    tokens = f"{tally.get('prompt_tokens', '?')}+{tally.get('completion_tokens', '?')}"
    status = "ok" if not result["errors"] else f"FAILED ({len(result['errors'])} error cells)"
    real = tally.get("real_calls", "?")
    return (f"{result['notebook']:<36} {result['wall_s']:7.1f} s  {calls!s:>5} calls ({real!s:>3} real)  "
            f"{tokens:>15} tokens  {status}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default=_mode_setting(),
                        choices=["fake", "local", "real", "real-loopback"],
                        help="real-loopback: AP_MODE=real against tools/offscript.py on 127.0.0.1")
    parser.add_argument("--out", default=None, help="output folder (default build/<mode>)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds allowed for one cell")
    parser.add_argument("notebooks", nargs="*", help="default: every notebooks/[0-9]*.ipynb, in order")
    args = parser.parse_args(argv)

    paths = [Path(p).resolve() for p in args.notebooks] or sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
    out_dir = Path(args.out) if args.out else ROOT / "build" / args.mode
    server = None
    if args.mode == "real-loopback":
        sys.path.insert(0, str(ROOT))
        try:
            from agentkit.loopback import serve
        except ImportError:
            print("course-real needs agentkit.loopback (the loopback server of issue 13); it is not in this checkout.")
            return 2
        from tools.offscript import reply

        server = serve(reply)
        os.environ.update(AP_MODE="real", LLM_BASE_URL=server.base_url, LLM_API_KEY="loopback",
                          LLM_MODEL_ID="offscript-1")
        print(f"AP_MODE=real against the off-script loopback server at {server.base_url}")
    else:
        os.environ["AP_MODE"] = args.mode
        if args.mode == "fake":
            os.environ["LLM_API_KEY"] = ""
    print(f"{'notebook':<36} {'wall':>9}  {'LLM calls (to a real model)':>22}  {'prompt+completion tokens':>22}")
    results = []
    total_start = time.perf_counter()
    try:
        for path in paths:
            result = run_notebook(path, out_dir, args.timeout)
            results.append(result)
            print(report_line(result), flush=True)
            if result["slowest"][1]:
                print(f"    slowest: {result['slowest'][1]} {result['slowest'][0]:.1f} s")
            for error in result["errors"]:
                print(f"    ERROR {error}")
    finally:
        if server is not None:
            print(f"    the loopback server answered {len(server.requests)} requests")
            server.stop()
    total = time.perf_counter() - total_start
    calls = sum((r["tally"] or {}).get("calls", 0) for r in results)
    failed = [r["notebook"] for r in results if r["errors"]]
    print(f"{'total':<36} {total:7.1f} s  {calls:>5} calls  mode={args.mode}  outputs in {out_dir}")
    if failed:
        print(f"FAILED: {', '.join(failed)} (error outputs above; the executed copies are in {out_dir})")
        return 1
    print(f"{len(results)} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
