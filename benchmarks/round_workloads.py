#!/usr/bin/env python3
"""The packed workload of every row of a measured round, from moe-train's own loader.

For each row of benchmarks/measured/FILE.json (base config + edit, as gpu_round.sh builds it), runs
`moe-train --config ROW.json --data-stats --dump-count N` on the round's sample set (N = the row's
micro-batches over the round's steps) and stores the result under "workloads" in the file, so the
planner's prediction of the row (tests/e2e/predicted_vs_measured.py) is for the data the run
really trained on: images per packed sequence, their patches, the attention over each sample. The
loader is deterministic (seeded stream from position 0), so this needs no GPU: run it where the
round's sample set is (.gpu-samples, built by the command at the top of gpu_round.sh).
usage: round_workloads.py MEASURED.json --moe-train build/bin/moe-train --manifest .gpu-samples/manifest.jsonl
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def merge(base, edit):
    for key, value in edit.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("measured")
    parser.add_argument("--moe-train", required=True)
    parser.add_argument("--manifest", required=True)
    parser.add_argument("--steps", type=int, default=12, help="the round's steps per row (gpu_round.sh STEPS)")
    args = parser.parse_args()
    data = json.load(open(args.measured))
    base = json.load(open(os.path.join(ROOT, data["base_config"])))
    workloads = {}
    with tempfile.TemporaryDirectory() as tmp:
        for row in data["rows"]:
            config = json.loads(json.dumps(base))
            merge(config, row["edit"])
            config["data"]["manifest"] = os.path.abspath(args.manifest)
            train = config["train"]
            count = args.steps * max(1, train["global_batch_size"] // train["micro_batch_size"])
            path = os.path.join(tmp, row["name"] + ".json")
            json.dump(config, open(path, "w"))
            r = subprocess.run([args.moe_train, "--config", path, "--data-stats", "--dump-count", str(count)],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{row['name']}: moe-train --data-stats failed: {r.stderr.strip()}", file=sys.stderr)
                return 1
            stats = json.loads(r.stdout)
            stats["manifest"] = os.path.relpath(args.manifest, ROOT)
            workloads[row["name"]] = stats
            p = stats["per_sequence"]
            print(f"{row['name']:26s} {p['images']:5.2f} images, {p['patches']:7.0f} patches, "
                  f"{p['image_tokens']:6.0f} image + {p['text_tokens']:6.0f} text + {p['pad_tokens']:5.0f} pad tokens, "
                  f"{p['samples']:5.2f} samples per sequence")
    data["workloads"] = workloads
    data["workloads_source"] = ("benchmarks/round_workloads.py: moe-train --data-stats on each row's config over the "
                                f"round's {args.steps} steps, sample set {os.path.relpath(args.manifest, ROOT)}")
    with open(args.measured, "w") as f:
        json.dump(data, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
