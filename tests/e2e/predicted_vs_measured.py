#!/usr/bin/env python3
"""The planner's moe-train predictions against moe-train's own measured runs (issue 15).

Every row of benchmarks/measured/*.json is a measured GPU run (committed as data, with its
source); its config is rebuilt from the row's base config and edit (as benchmarks/gpu_round.sh
builds it), predicted with `moe-workbench-cli generate --format runtime --hardware H --gpus N`
(what a user gets), and compared: (predicted - measured) / measured, for peak memory and step
time. Prints the table (docs/planner.md carries it).

Bands (fail when a row leaves its band). The memory band is a regression guard around today's
errors; the memory target (+-5 %) is printed per row and NOT met by every row yet (docs/planner.md
says which rows miss it and why):
  memory     +-10 %  (target +-5 %: 7 of 9 rows meet it)
  step time  +-15 %  the target itself (uncalibrated): every one-GPU row, and the 2-GPU rows whose
                     collectives the planner models for moe-train: DP, FSDP, EP, PP
  mock/real  +-10 %  effective tokens/s ratio (the target itself; rows with effective_tokens_per_step)
usage: predicted_vs_measured.py --cli build/bin/moe-workbench-cli       (ctest: planner_predicted_vs_measured)
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEMORY_BAND = 0.10
MEMORY_TARGET = 0.05
# 2-GPU layouts: the TP rows are -9..-10 % (not explained from the code yet); every other row within +-5 %
MEMORY_LAYOUT_GUARD = 0.11
STEP_TARGET = 0.15
STEP_GUARD = STEP_TARGET
# 2-GPU rows whose step time is shown but not guarded, with why. The collective rates of moe-train
# (resources/catalog/runtime-profiles.json) come from dp-sync, fsdp-optim and ep2-sync; every other
# DP/FSDP/EP/PP row is predicted from them.
UNMODELED_LAYOUTS = {
    # moe-train's TP collectives are modelled from its code at the measured rates (7-12 ms per step
    # here); the rows measure ~0.75 ms more per TP collective than their bytes explain (docs/planner.md)
    "tp2": "TP: ~0.75 ms per collective beyond its bytes, not explained yet (needs a 2-GPU trace)",
    "tp2-sp": "TP: as tp2",
    "tp2-sp-etp1": "TP: as tp2",
    "tp2-sp-fsdp": "TP: as tp2 (FSDP over DP 1 copying its units is modelled)",
}

MOCK_RATIO_TARGET = 0.10  # the mock/real effective tokens/s ratio, predicted vs measured


def merge(base, edit):
    for key, value in edit.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value


def report(row, step_ms, memory_gib, failures, guard_only=False, rate_sources=None):
    """Prints one row; records a failure when it leaves a guard band. guard_only: a 2-GPU layout
    row (predicted by the committed layouts.json): memory within its wider guard, step time guarded
    unless UNMODELED_LAYOUTS names the row."""
    step_err = (step_ms - row["step_ms"]) / row["step_ms"]
    mem_err = (memory_gib - row["peak_gib"]) / row["peak_gib"]
    print(f"{row['name']:28s} {step_ms:8.1f} {row['step_ms']:8.1f} {step_err:+7.1%}   "
          f"{memory_gib:8.1f} {row['peak_gib']:8.1f} {mem_err:+7.1%}"
          f"{'' if abs(mem_err) <= MEMORY_TARGET else '   memory outside the +-5 % target'}"
          f"{'' if abs(step_err) <= STEP_TARGET else '   step outside the +-15 % target'}")
    if abs(mem_err) > (MEMORY_LAYOUT_GUARD if guard_only else MEMORY_BAND):
        failures.append(f"{row['name']}: memory {mem_err:+.1%} is outside its guard band")
    if rate_sources and row["name"] in rate_sources:
        print(f"{'':28s} (the source of moe-train's measured {rate_sources[row['name']]} rate)")
    if guard_only and row["name"] in UNMODELED_LAYOUTS:
        print(f"{'':28s} (step time not guarded: {UNMODELED_LAYOUTS[row['name']]})")
    elif abs(step_err) > STEP_GUARD:
        failures.append(f"{row['name']}: step time {step_err:+.1%} is outside the +-{STEP_GUARD:.0%} guard")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    args = parser.parse_args()
    failures = []
    print(f"{'row':28s} {'pred ms':>8s} {'meas ms':>8s} {'err':>7s}   {'pred GiB':>8s} {'meas GiB':>8s} {'err':>7s}")
    with tempfile.TemporaryDirectory() as tmp:
        for index, path in enumerate(sorted(glob.glob(os.path.join(ROOT, "benchmarks", "measured", "*.json")))):
            data = json.load(open(path))
            scratch = os.path.join(tmp, str(index))
            os.makedirs(scratch)
            print(f"# {os.path.relpath(path, ROOT)}: {data['hardware']} x {data['gpus']}")
            if "predictions" in data:  # rows predicted by the committed layouts.json
                predicted = json.load(open(os.path.join(ROOT, data["predictions"])))["gpus"]
                for row in data["rows"]:
                    p = predicted[str(row.get("gpus", data["gpus"]))].get(row["name"])
                    if p is None:
                        failures.append(f"{row['name']}: no prediction in {data['predictions']}")
                        continue
                    report(row, p["step_ms"], p["memory_gib"], failures, guard_only=True,
                           rate_sources=data.get("rate_sources"))
                continue
            base = json.load(open(os.path.join(ROOT, data["base_config"])))
            throughput = {}  # row -> (predicted, measured) effective tokens/s/GPU
            for row in data["rows"]:
                config = json.loads(json.dumps(base))
                merge(config, data.get("base_edit", {}))  # what the round ran then (e.g. the serial optimizer)
                merge(config, row["edit"])
                config["data"]["manifest"] = os.path.join(scratch, "manifest.jsonl")
                cfg = os.path.join(scratch, row["name"] + ".json")
                json.dump(config, open(cfg, "w"))
                out = os.path.join(scratch, "out-" + row["name"])
                command = [args.cli, "generate", "--from", cfg, "--format", "runtime", "--hardware",
                           data["hardware"], "--gpus", str(data["gpus"]), "--out", out]
                # The data the run really trained on, as moe-train's loader packed it
                # (benchmarks/round_workloads.py): images per sequence, patches, per-sample attention.
                if row["name"] in data.get("workloads", {}):
                    workload = os.path.join(scratch, row["name"] + ".workload.json")
                    json.dump(data["workloads"][row["name"]], open(workload, "w"))
                    command += ["--workload", workload]
                r = subprocess.run(command, capture_output=True, text=True)
                if r.returncode != 0:
                    failures.append(f"{row['name']}: generate failed: {r.stderr.strip()}")
                    continue
                p = json.load(open(os.path.join(out, "prediction.json")))
                report(row, p["step_ms"], p["memory_gib"], failures)
                if "effective_tokens_per_step" in row:
                    throughput[row["name"]] = (p["tokens_per_s_per_gpu"],
                                               row["effective_tokens_per_step"] / row["step_ms"] * 1e3 / data["gpus"])
            # Real versus mock data (issue 15 item 5): the ratio of effective tokens/s, predicted for
            # the two workloads (the mock row packs ~25 captions per sequence, no images) vs measured.
            if "real" in throughput and "mock" in throughput:
                predicted = throughput["mock"][0] / throughput["real"][0]
                measured = throughput["mock"][1] / throughput["real"][1]
                err = (predicted - measured) / measured
                print(f"{'mock/real tokens/s':28s} {predicted:8.3f} {measured:8.3f} {err:+7.1%}"
                      f"{'' if abs(err) <= MOCK_RATIO_TARGET else '   outside the +-10 % target'}")
                if abs(err) > MOCK_RATIO_TARGET:
                    failures.append(f"mock/real throughput ratio {predicted:.3f} vs measured {measured:.3f} ({err:+.1%})")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
