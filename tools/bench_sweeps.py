"""Chapter 18's shipped runs, made once here and read by the notebook (it runs only small slices itself).

    python tools/bench_sweeps.py record-bfcl   # SmolLM2 on llama.cpp, every sampled BFCL entry through the three
                                               # channels (--channel text: one), into build/record/18-<channel>.jsonl
                                               # (slow: 75 calls, up to a minute each on 2 busy cores)
    python tools/bench_sweeps.py merge         # the three parts as data/cassettes/18_public_benchmarks.jsonl
    python tools/bench_sweeps.py bfcl          # data/bfcl_sweep.json: the recording scored, the oracle, the
                                               # corruptions and the agreement with bfcl-eval's checker
    python tools/bench_sweeps.py agentdojo     # data/agentdojo_sweep.json: the scripted agent through every
                                               # suite, every attack pair, every defence (minutes; or one suite per
                                               # process with --suite NAME, then --merge)

Needs the benchmarks extra (requirements-benchmarks.txt and requirements-benchmarks-nodeps.txt).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentkit import bfcl  # noqa: E402
from agentkit import bfcl_models as bm  # noqa: E402

NOTEBOOK = "18_public_benchmarks"
DRAWN, SAMPLE = 8, 5  # entries per category: the first SAMPLE of DRAWN drawn with bfcl.load's seed
PARTS = ROOT / "build" / "record"  # one cassette per channel while recording (each channel can run on its own)


def sample() -> list:
    return [e for category in bfcl.CATEGORIES for e in bfcl.load(category, DRAWN)[:SAMPLE]]


def record_bfcl(channels) -> None:
    """Record SmolLM2's replies channel by channel; a request already on the channel's part is not asked again."""
    from agentkit.replay import CassetteMiss, Recorder, ReplayLLM, stamp_of

    PARTS.mkdir(parents=True, exist_ok=True)
    entries = sample()
    for channel in channels:
        path = PARTS / f"18-{channel}.jsonl"
        client = bm.local_client(channel)
        stamp = dict(stamp_of(client, NOTEBOOK, "local"), server=f"llama.cpp, replies capped at {bm.MAX_TOKENS} tokens",
                     command="python tools/bench_sweeps.py record-bfcl")
        llm = Recorder(client, path, append=True, name=channel, stamp=stamp)
        for number, entry in enumerate(entries, 1):
            try:
                bm.ask(ReplayLLM(path, name=channel), entry, channel)
                continue  # recorded already
            except (CassetteMiss, FileNotFoundError):
                pass
            start = time.perf_counter()
            calls, problem = bm.ask(llm, entry, channel)
            right, why = bfcl.match(entry, calls) if not problem else (("irrelevance" in entry.category), problem)
            print(f"{channel:8} {number:3}/{len(entries)} {entry.id:24} {'right' if right else 'wrong':5} "
                  f"{time.perf_counter() - start:5.1f} s  {why[:60]}", flush=True)


def merge() -> None:
    """The three channels' parts as the notebook's one cassette: the first part's stamp, then every call."""
    from agentkit.replay import cassette_path

    asked = {bm.text_messages(e)[1]["content"] for e in sample()}  # calls of entries no longer sampled are left out
    lines, stamp = [], None
    for channel in bm.CHANNELS:
        for line in (PARTS / f"18-{channel}.jsonl").read_text(encoding="utf-8").splitlines():
            if line.startswith('{"stamp"'):
                stamp = stamp or line
            elif line.strip() and json.loads(line)["request"]["messages"][-1]["content"] in asked:
                lines.append(line)
    cassette_path(NOTEBOOK).write_text("\n".join([stamp, *lines]) + "\n", encoding="utf-8")
    print("wrote", cassette_path(NOTEBOOK), len(lines), "calls")


def sweep_bfcl() -> dict:
    from agentkit.replay import ReplayLLM, cassette_path

    entries = sample()
    out = {"bfcl_eval": bfcl.installed_version(), "sample_per_category": SAMPLE, "drawn_per_category": DRAWN,
           "categories": {}}
    for category in bfcl.CATEGORIES:
        every = bfcl.load(category)
        row = {"entries": len(every), "oracle": sum(bfcl.score(e, bfcl.oracle(e))[0] for e in every),
               "caught": {how: sum(not bfcl.score(e, bfcl.corrupt(e, how))[0] for e in every)
                          for how in bfcl.CORRUPTIONS}}
        agree = total = 0
        for e in every:
            for text in [bfcl.oracle(e)] + [bfcl.corrupt(e, how) for how in bfcl.CORRUPTIONS]:
                calls, problem = bfcl.parse_calls(text)
                agree += bfcl.score(e, text)[0] == bfcl.bfcl_check(e, calls, problem)[0]
                total += 1
        row["agreement"] = [agree, total]
        row["smollm2"] = {}
        for channel in bm.CHANNELS:
            llm = ReplayLLM(cassette_path(NOTEBOOK), name=channel)
            verdicts = []
            for e in (x for x in entries if x.category == category):
                calls, problem = bm.ask(llm, e, channel)
                ours = bfcl.match(e, calls)[0] if not problem else ("irrelevance" in category)
                theirs = bfcl.bfcl_check(e, None if problem else calls, problem)[0]
                verdicts.append({"id": e.id, "right": ours, "bfcl_eval": theirs, "reply": llm.calls[-1].reply[:300]})
            k = sum(v["right"] for v in verdicts)
            row["smollm2"][channel] = {"right": k, "of": len(verdicts), "interval": bfcl.interval(k, len(verdicts)),
                                       "agree": sum(v["right"] == v["bfcl_eval"] for v in verdicts),
                                       "verdicts": verdicts}
        out["categories"][category] = row
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["record-bfcl", "merge", "bfcl", "agentdojo"])
    parser.add_argument("--channel", action="append", choices=bm.CHANNELS, help="record-bfcl: only these channels")
    parser.add_argument("--suite", help="agentdojo: only this suite, into build/record/agentdojo-<suite>.json")
    parser.add_argument("--merge", action="store_true", help="agentdojo: join the four suites' parts")
    args = parser.parse_args(argv)
    if args.what == "record-bfcl":
        record_bfcl(args.channel or bm.CHANNELS)
        return 0
    if args.what == "merge":
        merge()
        return 0
    if args.what == "bfcl":
        result, name = sweep_bfcl(), "bfcl_sweep.json"
    elif args.suite:  # one suite into build/record/ (several can run side by side); --merge joins them
        from agentkit.agentdojo_run import sweep
        PARTS.mkdir(parents=True, exist_ok=True)
        part = PARTS / f"agentdojo-{args.suite}.json"
        part.write_text(json.dumps(sweep(progress=True, suites=(args.suite,))), encoding="utf-8")
        print("wrote", part)
        return 0
    elif args.merge:
        from agentkit.agentdojo_run import SUITES
        parts = [json.loads((PARTS / f"agentdojo-{s}.json").read_text(encoding="utf-8")) for s in SUITES]
        result, name = dict(parts[0], suites={s: p["suites"][s] for s, p in zip(SUITES, parts)}), "agentdojo_sweep.json"
    else:
        from agentkit.agentdojo_run import sweep
        result, name = sweep(progress=True), "agentdojo_sweep.json"
    (ROOT / "data" / name).write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print("wrote", ROOT / "data" / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
