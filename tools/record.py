"""Record a notebook's real-model calls into the cassette the course ships with it.

    python tools/record.py notebooks/03b_real_model.ipynb                # SmolLM2 on llama.cpp (AP_MODE=local)
    python tools/record.py --mode real notebooks/03b_real_model.ipynb    # a hosted model: LLM_API_KEY,
                                                                          # LLM_BASE_URL and LLM_MODEL_ID set

The notebook runs headless, its stored copy untouched, with AP_RECORD naming a new cassette: every
`real_or_replay(...)` in it wraps its live model in a Recorder, and the first one stamps the cassette
(model, server and version, date). When no cell failed, the new cassette replaces
data/cassettes/<notebook>.jsonl, and the notebook runs once more offline (AP_MODE=fake) to
check that the cassette answers every request; if it does not (a model that answered the same
request twice in two ways), the old cassette is put back. Then refresh the stored outputs:
make notebooks NB=<notebook>. The executed copies and a rejected cassette go to build/record/.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from agentkit.data import DATA_DIR

ROOT = Path(__file__).resolve().parent.parent
CASSETTES = Path(str(DATA_DIR / "cassettes"))  # data/cassettes in a checkout
BUILD = ROOT / "build" / "record"


def execute(path: Path, out: Path, env: dict, timeout: int) -> tuple[float, list[str]]:
    """Run one notebook with `env` set; return its wall time and its error cells. Writes `out`."""
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update({name: value for name, value in env.items() if value is not None})
    for name in (n for n, v in env.items() if v is None):
        os.environ.pop(name, None)
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                            store_widget_state=False, resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    try:
        client.execute()
        errors = []
    except Exception as e:  # noqa: BLE001 - a dead kernel or a timeout is a failure to report
        errors = [f"execution stopped: {type(e).__name__}: {str(e).strip()[-300:]}"]
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    wall = time.perf_counter() - start
    for number, cell in enumerate(nb.cells, 1):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                errors.append(f"cell {number}: {output['ename']}: {output['evalue'][:300]}")
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out)
    return wall, errors


def record(path: Path, mode: str, timeout: int) -> bool:
    sys.path.insert(0, str(ROOT))
    from agentkit.replay import ReplayLLM

    stem = path.stem
    if "real_or_replay(" not in "".join(c.source for c in nbformat.read(path, as_version=4).cells):
        print(f"== {path.name}: no real-model cells (no real_or_replay call), skipped")
        return True
    cassette, fresh = CASSETTES / f"{stem}.jsonl", BUILD / f"{stem}.jsonl"
    fresh.unlink(missing_ok=True)
    print(f"== {path.name}: recording with AP_MODE={mode} into {fresh.relative_to(ROOT)}", flush=True)
    wall, errors = execute(path, BUILD / f"{stem}.recorded.ipynb", {"AP_MODE": mode, "AP_RECORD": str(fresh)}, timeout)
    for error in errors:
        print(f"   ERROR {error}")
    if not fresh.is_file():
        print(f"   no real-model cells (no real_or_replay call): nothing recorded ({wall:.1f} s)")
        return not errors
    if errors:
        print(f"   not shipped: fix the errors above (the recording is in {fresh.relative_to(ROOT)})")
        return False
    replay = ReplayLLM(fresh)
    if replay.stamp.get("notebook") != stem:
        print(f"   not shipped: the notebook calls real_or_replay({replay.stamp.get('notebook')!r}), not {stem!r}")
        return False
    print(f"   {len(replay.entries)} calls in {wall:.1f} s: {replay.stamp}")

    old = cassette.read_bytes() if cassette.is_file() else None
    CASSETTES.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(fresh, cassette)
    wall, errors = execute(path, BUILD / f"{stem}.replayed.ipynb", {"AP_MODE": "fake", "LLM_API_KEY": "",
                                                                    "AP_RECORD": None}, timeout)
    if errors:
        for error in errors:
            print(f"   REPLAY ERROR {error}")
        if old is None:
            cassette.unlink()
        else:
            cassette.write_bytes(old)
        print(f"   not shipped: the replay failed, the old cassette is back (the new one: {fresh.relative_to(ROOT)})")
        return False
    print(f"   replayed offline in {wall:.1f} s, no miss: shipped as {cassette.relative_to(ROOT)}")
    print(f"   next: refresh the stored outputs with  make notebooks NB={path.relative_to(ROOT)}")
    return True


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="local", choices=["local", "real"],
                        help="local: SmolLM2 on llama.cpp (default); real: the hosted model of your LLM_* settings")
    parser.add_argument("--timeout", type=int, default=900, help="seconds allowed for one cell")
    parser.add_argument("notebooks", nargs="+")
    args = parser.parse_args(argv)
    results = [record(Path(p).resolve(), args.mode, args.timeout) for p in args.notebooks]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
