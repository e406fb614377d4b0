#!/usr/bin/env python3
"""The PyTorch-eager baseline (benchmarks/eager/qwen3vl_eager.py) against moe-train, on the CPU.

usage: eager_e2e.py --trainer MOE_TRAIN --sample-set MOE_SAMPLE_SET
Needs a Python with torch (Debian's python3-torch, 1.13); exits 77 (skipped) when none is found.
1. moe-train trains sample-tiny (real images) for 1 step and saves a checkpoint, and separately for
   3 steps; it dumps the loader's first 3 micro-batches.
2. The eager script loads the 1-step checkpoint and trains one step on dumped micro-batch 2: its
   loss, aux loss and gradient norm equal moe-train's step 2 (same weights, same data).
3. From its own initialization the eager script's first loss is about ln(vocab) and its loss
   falls over 3 steps; a text-only (mock) dump trains too; the grouped-GEMM path reports
   "unsupported" (exit 4) where torch has no _grouped_mm on CUDA.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EAGER = os.path.join(ROOT, "benchmarks", "eager", "qwen3vl_eager.py")
SKIP = 77
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def python_with_torch():
    for exe in (sys.executable, "/usr/bin/python3", shutil.which("python3")):
        if exe and os.path.exists(exe) and subprocess.run([exe, "-c", "import torch"], capture_output=True).returncode == 0:
            return exe
    return None


def run(args, ok_codes=(0,)):
    p = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if p.returncode not in ok_codes:
        print(f"command failed ({p.returncode}): {' '.join(args)}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def steps_of(metrics_path):
    with open(metrics_path) as f:
        return [r for r in (json.loads(line) for line in f if line.strip()) if r.get("type") == "step"]


def close(a, b, rel):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-12)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trainer", required=True)
    ap.add_argument("--sample-set", required=True)
    args = ap.parse_args()
    py = python_with_torch()
    if not py:
        print("SKIP: no Python with torch here (apt-get install python3-torch)")
        return SKIP
    if not os.path.isdir("/usr/share/openclipart/png"):
        print("SKIP: /usr/share/openclipart/png is missing (apt-get install openclipart-png)")
        return SKIP
    print(f"python with torch: {py}")
    tmp = tempfile.mkdtemp(prefix="wb-eager-e2e-")
    try:
        samples = os.path.join(tmp, "samples")
        if run([args.sample_set, "--from", "/usr/share/openclipart/png", "--out", samples, "--count", "24"]).returncode:
            return 1
        with open(os.path.join(ROOT, "resources", "configs", "sample-tiny.json")) as f:
            base = json.load(f)
        base["data"]["manifest"] = os.path.join(samples, "manifest.jsonl")
        # A constant learning rate: the 1-step and the 3-step run then take the same first step.
        base["train"].update(lr_decay_style="constant", lr_warmup_iters=0, log_interval=1)

        def config(name, **train):
            c = json.loads(json.dumps(base))
            c["train"].update(train)
            path = os.path.join(tmp, name + ".json")
            with open(path, "w") as f:
                json.dump(c, f, indent=1)
            return path

        one = config("one", train_iters=1, checkpoint_interval=1)
        three = config("three", train_iters=3)
        dump = os.path.join(tmp, "dump")
        for cmd in ([args.trainer, "--config", one, "--run-dir", os.path.join(tmp, "r1")],
                    [args.trainer, "--config", three, "--run-dir", os.path.join(tmp, "r3")],
                    [args.trainer, "--config", three, "--dump-batches", dump, "--dump-count", "3"]):
            if run(cmd).returncode:
                return 1
        ours = steps_of(os.path.join(tmp, "r3", "metrics.jsonl"))
        check(len(ours) == 3, "moe-train wrote 3 step records")

        # 2. Same weights (the checkpoint after step 1), same micro-batch (the second): same step.
        m = os.path.join(tmp, "eager-loaded.jsonl")
        p = run([py, EAGER, "--dump", dump, "--load-weights", os.path.join(tmp, "r1", "ckpt", "latest.pt"),
                 "--first-batch", "1", "--steps", "1", "--metrics", m])
        check(p.returncode == 0, "eager --load-weights runs")
        if p.returncode == 0:
            e = steps_of(m)[0]
            print(f"step 2: moe-train loss {ours[1]['loss']:.6f} aux {ours[1]['aux_loss']:.6f} grad "
                  f"{ours[1]['grad_norm']:.6f}; eager loss {e['loss']:.6f} aux {e['aux_loss']:.6f} grad {e['grad_norm']:.6f}")
            check(close(e["loss"], ours[1]["loss"], 1e-4), "eager loss = moe-train's step-2 loss (rel 1e-4)")
            check(close(e["aux_loss"], ours[1]["aux_loss"], 1e-4), "eager aux loss = moe-train's (rel 1e-4)")
            check(close(e["grad_norm"], ours[1]["grad_norm"], 1e-3), "eager gradient norm = moe-train's (rel 1e-3)")
            check(e["effective_tokens"] == ours[1]["effective_tokens"] and e["images"] == ours[1]["images"],
                  "same tokens and images as moe-train's step 2")

        # 3. Its own initialization: the first loss is near ln(vocab) and the loss falls.
        m = os.path.join(tmp, "eager-fresh.jsonl")
        p = run([py, EAGER, "--dump", dump, "--steps", "3", "--warmup", "1", "--metrics", m])
        check(p.returncode == 0 and "medians over steps 2..3" in p.stdout, "eager trains 3 steps from scratch")
        if p.returncode == 0:
            e = steps_of(m)
            ln_vocab = math.log(base["model"]["decoder"]["vocab_size"])
            print("eager losses " + " ".join(f"{r['loss']:.4f}" for r in e) + f"; moe-train " +
                  " ".join(f"{r['loss']:.4f}" for r in ours) + f"; ln(vocab) {ln_vocab:.4f}")
            check(abs(e[0]["loss"] - ln_vocab) < 0.15 * ln_vocab, "first loss within 15% of ln(vocab)")
            check(e[2]["loss"] < e[0]["loss"], "the loss falls over 3 steps")
            check(all(r["tflops_per_gpu"] > 0 and r["tokens_per_s_per_gpu"] > 0 for r in e), "throughput reported")

        # Text only: no patches in the dump, the vision path is skipped.
        mock = json.loads(json.dumps(base))
        mock["data"].update(source="mock", mock_image_size=0)
        mock_path = os.path.join(tmp, "mock.json")
        with open(mock_path, "w") as f:
            json.dump(mock, f)
        mock_dump = os.path.join(tmp, "mock-dump")
        if run([args.trainer, "--config", mock_path, "--dump-batches", mock_dump, "--dump-count", "1"]).returncode:
            return 1
        p = run([py, EAGER, "--dump", mock_dump, "--steps", "1"])
        check(p.returncode == 0 and "step 1/1 loss" in p.stdout, "eager trains on a text-only dump")

        p = run([py, EAGER, "--dump", dump, "--steps", "1", "--experts", "grouped", "--device", "cpu"], ok_codes=(4,))
        check(p.returncode == 4 and "_grouped_mm" in p.stderr, "grouped experts on the CPU: exit 4, says why")
        p = run([py, EAGER, "--dump", os.path.join(tmp, "nothing")], ok_codes=(1,))
        check(p.returncode != 0 and "--dump-batches" in (p.stderr + p.stdout), "a missing dump names the fix")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'FAILED: ' + '; '.join(failures) if failures else 'all checks passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
