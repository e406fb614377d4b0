#!/usr/bin/env python3
"""benchmarks/predictions/layouts.json is what the planner predicts now, and the layout table uses it.

1. Regenerates the predictions of every gpu_layouts.sh row (its configs-only mode, then
   `moe-workbench-cli generate --format runtime --hardware h200 --gpus N` per row) and compares them
   with the committed file: a planner change that moves a prediction, or a row added to
   gpu_layouts.sh, fails here until benchmarks/layout_predictions.sh is run and the file committed.
2. The comparison notices a changed figure and a missing row (so 1. can fail).
3. summarize.py --predictions prints the file's step ms and memory beside a measured row with the
   error (predicted − measured) / measured, and "—" plus the reason for a row it has no prediction
   for. The measured metrics are written here for the check and never kept.
4. The prediction follows the runtime knobs a row may turn: text-only mock data, frozen vision,
   full and selective recompute.
usage: layout_predictions_test.py --cli build/bin/moe-workbench-cli        (ctest: layout_predictions_current)
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import layout_predictions as lp  # noqa: E402

FILE = os.path.join(ROOT, "benchmarks", "predictions", "layouts.json")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def write_metrics(path, world, step_ms, peak_gib):
    with open(path, "w") as f:
        f.write(json.dumps({"v": 1, "type": "meta", "world_size": world, "data_source": "real"}) + "\n")
        for i in range(5):
            f.write(json.dumps({"v": 1, "type": "step", "step": i + 1, "step_ms": step_ms, "mem_peak_gib": peak_gib,
                                "tokens_per_s_per_gpu": 1.0, "mfu": 0.01, "loss": 1.0}) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    a = ap.parse_args()
    with open(FILE) as f:
        committed = json.load(f)
    counts = sorted(int(g) for g in committed["gpus"])

    # 1. The committed file is current.
    fresh = lp.build(a.cli, committed["hardware"], counts)
    diff = lp.differences(committed, fresh)
    for line in diff:
        print("  " + line)
    check(not diff, "benchmarks/predictions/layouts.json is what the planner predicts now" +
          ("" if not diff else " — it is not: run benchmarks/layout_predictions.sh and commit the file"))
    rows2 = fresh["gpus"].get("2", {})
    check({"ref", "dp", "ep2", "pp2"} <= set(rows2), f"the 2-GPU rows include ref, dp, ep2, pp2: {sorted(rows2)}")
    check(rows2.get("ref", {}).get("world_size") == 1 and rows2.get("dp", {}).get("world_size") == 2,
          "the reference is predicted on 1 GPU, the other rows on G")
    check(rows2.get("dp", {}).get("layout", "").endswith("ddp"),
          f"runtime predictions assume no distributed optimizer (moe-train has none): {rows2.get('dp', {}).get('layout')}")
    ep_on_one = fresh["gpus"].get("1", {}).get("ep2", {})
    check("minimum GPUs" in ep_on_one.get("unpredicted", ""), "EP 2 on one GPU is not predicted, and says why")

    # 2. The comparison can fail.
    changed = copy.deepcopy(fresh)
    changed["gpus"]["2"]["dp"]["step_ms"] *= 1.01
    del changed["gpus"]["2"]["pp2"]
    found = lp.differences(changed, fresh)
    check(any("dp: step_ms" in d for d in found) and any("row pp2 is new" in d for d in found),
          f"a changed figure and a missing row are reported: {found}")

    # 3. The table beside measured rows.
    with tempfile.TemporaryDirectory(prefix="wb-layout-table-") as tmp:
        dp = committed["gpus"]["2"]["dp"]
        write_metrics(os.path.join(tmp, "dp.jsonl"), 2, 200.0, 50.0)
        write_metrics(os.path.join(tmp, "later-row.jsonl"), 2, 100.0, 40.0)
        r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "summarize.py"), "--skip", "1",
                            "--predictions", FILE, "--gpus", "2", f"dp={tmp}/dp.jsonl", f"later-row={tmp}/later-row.jsonl"],
                           capture_output=True, text=True)
        print(r.stdout + r.stderr)
        lines = r.stdout.splitlines()
        head = [c.strip() for c in lines[0].split("|")]
        row = next(([c.strip() for c in l.split("|")] for l in lines if l.startswith("| dp ")), [])
        cell = dict(zip(head, row))
        err_ms = f"{100 * (dp['step_ms'] - 200.0) / 200.0:+.0f}%"
        err_gib = f"{100 * (dp['memory_gib'] - 50.0) / 50.0:+.0f}%"
        check(r.returncode == 0 and cell.get("pred. ms") == f"{dp['step_ms']:.1f}" and cell.get("err. ms") == err_ms and
              cell.get("pred. GiB") == f"{dp['memory_gib']:.1f}" and cell.get("err. GiB") == err_gib,
              f"dp row: predicted {dp['step_ms']:.1f} ms ({err_ms}), {dp['memory_gib']:.1f} GiB ({err_gib}): {cell}")
        later = next((l for l in lines if l.startswith("| later-row ")), "")
        check(later.count("| — | — |") == 2 and "later-row: no prediction — no row 'later-row'" in r.stdout,
              "a row without a prediction shows — and the reason under the table")
    # 4. The knobs the rows may turn (mock data, frozen vision, recompute) move the prediction.
    with tempfile.TemporaryDirectory(prefix="wb-layout-knobs-") as tmp:
        rows = dict(lp.configs_for(2, os.path.join(tmp, "configs")))
        with open(os.path.join(tmp, "configs", "ref.json")) as f:
            base = json.load(f)
        variants = {"base": {}, "mock": {"data": {"source": "mock", "mock_image_size": 0}},
                    "frozen": {"model": {"freeze_vision_model": True, "freeze_vision_projection": True}},
                    "full": {"recompute": {"granularity": "full", "method": "uniform", "recompute_num_layers": 1}},
                    "selective": {"recompute": {"granularity": "selective", "modules": ["core_attn", "moe_act"]}}}
        got = {}
        for name, change in variants.items():
            cfg = copy.deepcopy(base)
            for section, values in change.items():
                cfg.setdefault(section, {}).update(values)
            os.makedirs(os.path.join(tmp, "v"), exist_ok=True)
            with open(os.path.join(tmp, "v", name + ".json"), "w") as f:
                json.dump(cfg, f)
            got[name] = lp.predict_row(a.cli, "h200", os.path.join(tmp, "v"), name, rows["ref"], os.path.join(tmp, "out"))
        b, terms = got["base"], {n: r.get("step_ms_terms", {}) for n, r in got.items()}
        check(all("step_ms" in r for r in got.values()), f"every variant predicted: {[n for n, r in got.items() if 'step_ms' not in r]}")
        check("vision encoder" in terms["base"] and "vision encoder" not in terms["mock"] and got["mock"]["step_ms"] < b["step_ms"],
              f"text-only mock data: no vision term, faster ({got['mock'].get('step_ms')} < {b.get('step_ms')} ms)")
        check(terms["frozen"].get("vision encoder", 1e9) < terms["base"].get("vision encoder", 0) and
              got["frozen"]["memory_gib"] < b["memory_gib"], "frozen vision: less vision time and memory")
        check(terms["full"].get("recompute", 0) > 0 and got["full"]["step_ms"] > b["step_ms"] and
              got["full"]["memory_gib"] < b["memory_gib"], "full recompute: slower, less memory")
        check(terms["selective"].get("recompute", 0) > 0, "selective recompute (core_attn): a recompute term")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
