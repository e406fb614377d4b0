#!/usr/bin/env python3
"""End-to-end: `plan --json` -> `generate` for every format -> `lint`, through the real CLI; and
plan -> generate (prediction.json) -> launch (local, the stand-in trainer) -> the store holds the
prediction -> `plan --calibrate` uses the stored runs once there are enough of them.

Checks the plan JSON shape docs/cli.md promises, bad input (unknown model, a GPU count no layout
can use), that generated scripts pass `bash -n`, that generate refuses to overwrite without
--force, and that lint reports problems with their line numbers. Each run uses its own HOME and
XDG dirs, so no user catalog leaks in.
"""
import argparse
import json
import sqlite3
import os
import subprocess
import sys
import tempfile

LAYOUT_KEYS = ["tp", "cp", "pp", "vpp", "ep", "etp", "dp", "edp", "mbs", "gbs", "recompute", "dispatcher",
               "cuda_graph_scope", "fsdp", "freeze_vision", "memory_gib", "step_ms", "tokens_per_s_per_gpu",
               "tflops_per_gpu", "mfu", "lint"]
MEMORY_KEYS = ["weights", "grads", "optimizer", "activations", "other", "total"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--trainer", required=True, help="moe-train or the stand-in tests/remote/fake_moe_train.sh")
    args = parser.parse_args()
    failures = []

    def check(condition, what):
        if not condition:
            failures.append(what)
            print("FAIL:", what, file=sys.stderr)

    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, HOME=tmp, XDG_DATA_HOME=os.path.join(tmp, "data"),
                   XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        env.pop("MOE_WORKBENCH_CATALOG", None)

        def cli(*argv):
            return subprocess.run([args.cli, *argv], env=env, cwd=tmp, capture_output=True, text=True, timeout=120)

        # 1. plan --json: the documented shape.
        r = cli("plan", "--model", "qwen3-vl-30b-a3b", "--hardware", "gb200", "--gpus", "8", "--max-results", "3", "--json")
        check(r.returncode == 0, f"plan --json exit {r.returncode}: {r.stderr}")
        plan = json.loads(r.stdout)
        check(plan["recommendation"]["path"] in ("fsdp", "3d"), "recommendation.path")
        for key in ("rules", "next_knobs", "cautions"):
            check(isinstance(plan["recommendation"][key], list), f"recommendation.{key} is a list")
        check(1 <= len(plan["layouts"]) <= 3, "1..3 layouts")
        for layout in plan["layouts"]:
            for key in LAYOUT_KEYS:
                check(key in layout, f"layout key {key}")
            for key in MEMORY_KEYS:
                check(key in layout["memory_gib"], f"memory_gib key {key}")
            check(0 < layout["mfu"] < 1, "mfu is a fraction")
        plan_path = os.path.join(tmp, "plan.json")
        with open(plan_path, "w") as f:
            f.write(r.stdout)

        # 2. The table.
        r = cli("plan", "--model", "qwen3-vl-30b-a3b", "--hardware", "gb200", "--gpus", "8", "--goal", "first-run")
        check(r.returncode == 0 and "Recommendation: FSDP first" in r.stdout, f"plan table first-run: {r.stdout[:300]}")

        # 2a. Mock against real data (issue 15 item 5): a real plan says what mock data would show
        # for layout 0, term by term; --data mock plans for Bridge's mock and says so loudly.
        r = cli("plan", "--model", "qwen3-vl-235b-a22b", "--hardware", "gb200", "--gpus", "64", "--max-results", "1", "--json")
        d = json.loads(r.stdout)
        mvr = d.get("mock_vs_real", {})
        check(r.returncode == 0 and d["request"]["data"] == "real" and mvr.get("planned_for") == "real"
              and mvr.get("mock_speedup", 0) >= 1.0 and "MockVLMSFTDatasetConfig" in mvr.get("mock", "")
              and any(t["name"] == "vision encoder" and t["real_ms"] > t["mock_ms"] for t in mvr.get("terms", [])),
              f"plan --json mock_vs_real: {mvr}")
        r = cli("plan", "--model", "qwen3-vl-235b-a22b", "--hardware", "gb200", "--gpus", "64", "--max-results", "1",
                "--data", "mock")
        check(r.returncode == 0 and "MOCK DATA, GBS" in r.stdout and "WARNING: this plan is for MOCK DATA" in r.stdout
              and "% of the gap" in r.stdout and "Mock multimodal data misleads" in r.stdout,
              f"plan --data mock warns: {r.stdout[-1500:]}")
        r = cli("plan", "--model", "qwen3-vl-235b-a22b", "--hardware", "gb200", "--gpus", "64", "--data", "fake")
        check(r.returncode == 2 and "--data needs real or mock" in r.stderr, f"--data fake: {r.stderr}")

        # 2b. The guide's answers pick the path: its family is ranked first (the goal stays the
        # ranking objective within it).
        answers = os.path.join(tmp, "answers.json")
        with open(answers, "w") as f:
            json.dump({"first_launch": True, "vision_frozen": True}, f)
        r = cli("plan", "--model", "qwen3-vl-30b-a3b", "--hardware", "h100", "--gpus", "16", "--answers", answers,
                "--max-results", "1", "--json")
        d = json.loads(r.stdout)
        check(d["recommendation"]["path"] == "fsdp" and d["layouts"] and d["layouts"][0]["family"] == "fsdp",
              f"answers -> fsdp, an FSDP-first row first: {d['recommendation']['path']} {d['layouts'][:1]}")
        check(any("answered yes" in r["text"] for r in d["recommendation"]["rules"]), "the rules say what was answered")
        # Not stable under FSDP and not a first launch: FSDP, and no rule claims the opposite.
        with open(answers, "w") as f:
            json.dump({"first_launch": False, "stable_under_fsdp": False}, f)
        r = cli("plan", "--model", "qwen3-vl-235b-a22b", "--hardware", "gb200", "--gpus", "64", "--answers", answers)
        check(r.returncode == 0 and "Recommendation: FSDP first" in r.stdout and "runs stably under FSDP. (answered no" in r.stdout
              and "rule  3d-" not in r.stdout, f"answered no is not read as yes: {r.stdout[:900]}")
        check(d["layouts"] and d["layouts"][0]["freeze_vision"], "vision_frozen freezes the vision module")
        with open(answers, "w") as f:
            json.dump({"first_lunch": True}, f)
        r = cli("plan", "--model", "qwen3-vl-30b-a3b", "--hardware", "h100", "--gpus", "16", "--answers", answers)
        check(r.returncode == 2 and "first_launch" in r.stderr, f"unknown answer lists the known ones: {r.stderr}")

        # 3. Bad input.
        r = cli("plan", "--model", "nope", "--hardware", "gb200", "--gpus", "8")
        check(r.returncode == 2 and "qwen3-vl-30b-a3b" in r.stderr, f"unknown model lists the known ones: {r.stderr}")
        r = cli("plan", "--model", "qwen3-vl-30b-a3b", "--hardware", "tpu", "--gpus", "8")
        check(r.returncode == 2 and "gb200" in r.stderr, f"unknown hardware lists the known ones: {r.stderr}")
        r = cli("plan", "--model", "qwen3-vl-235b-a22b", "--hardware", "h100", "--gpus", "8")
        check(r.returncode == 2 and "works: " in r.stderr and "GiB" in r.stderr,
              f"no layout: nearest counts and why: {r.stderr}")

        # Issue 18 item 13: the count, not memory, when the count does not tile; per-node limits; bounds named.
        r = cli("plan", "--model", "qwen3-vl-235b-a22b", "--hardware", "gb200", "--gpus", "63")
        check(r.returncode == 2 and "the GPU count is the problem" in r.stderr and "works: 64 GPUs" in r.stderr,
              f"63 GB200: the count is the problem, 64 works: {r.stderr}")
        r = cli("plan", "--model", "qwen3-vl-30b-a3b", "--hardware", "b200", "--gpus", "18", "--nodes", "2")
        check(r.returncode == 2 and "9 GPUs per node" in r.stderr, f"9 per node on an 8-GPU node is refused: {r.stderr}")
        r = cli("plan", "--model", "qwen3-vl-30b-a3b", "--hardware", "b200", "--gpus", "15", "--nodes", "3")
        check(r.returncode == 0 and "3 nodes x 5 of their 8 GPUs" in r.stdout, f"5 of 8 per node is said: {r.stdout[:300]}")
        r = cli("plan", "--model", "qwen3-vl-30b-a3b", "--hardware", "h200", "--gpus", "8", "--seq", "100000000")
        check(r.returncode == 2 and "from 1 to 1000000" in r.stderr, f"--seq names its bound: {r.stderr}")

        # 4. generate every format from the plan.
        expected = {"runtime": ["run.json"],
                    "megatron-bridge": ["overrides.yaml", "overrides.dotlist", "env.sh", "env.slurm.sh", "perf_launch.sh"],
                    "slurm": ["run.sbatch", "run.json"],
                    "ssh": ["launch_ssh.sh", "run.json"]}
        for fmt, files in expected.items():
            out = os.path.join(tmp, "out-" + fmt)
            r = cli("generate", "--from", plan_path, "--format", fmt, "--out", out, "--hosts", "node a,node'b",
                    "--manifest", "/data/my set/manifest.jsonl")
            check(r.returncode == 0, f"generate {fmt}: {r.stderr}")
            for name in files:
                path = os.path.join(out, name)
                check(os.path.isfile(path), f"{fmt}: {name} written")
                if name.endswith(".sh") or name.endswith(".sbatch"):
                    syntax = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
                    check(syntax.returncode == 0, f"bash -n {fmt}/{name}: {syntax.stderr}")
            leftovers = [n for n in os.listdir(out) if ".tmp-" in n]
            check(not leftovers, f"{fmt}: no temporary files left: {leftovers}")

        # 4a. A model moe-train cannot build (Qwen3.5/3.6: gated DeltaNet, shared expert, MTP):
        # planned and generated for Megatron-Bridge; the moe-train formats refuse it, write nothing,
        # and name the fields and the fix.
        r = cli("plan", "--model", "qwen35-vl-35b-a3b", "--hardware", "h200", "--gpus", "8", "--max-results", "2", "--json")
        check(r.returncode == 0, f"plan qwen35: {r.stderr}")
        hybrid_plan = os.path.join(tmp, "plan-qwen35.json")
        with open(hybrid_plan, "w") as f:
            f.write(r.stdout)
        out = os.path.join(tmp, "out-qwen35-bridge")
        r = cli("generate", "--from", hybrid_plan, "--format", "megatron-bridge", "--out", out)
        check(r.returncode == 0 and os.path.isfile(os.path.join(out, "overrides.yaml")), f"qwen35 for Bridge: {r.stderr}")
        for fmt in ("runtime", "slurm", "ssh"):
            out = os.path.join(tmp, "out-qwen35-" + fmt)
            r = cli("generate", "--from", hybrid_plan, "--format", fmt, "--out", out, "--hosts", "a")
            check(r.returncode == 2 and "linear_attention_freq" in r.stderr and "mtp_num_layers" in r.stderr
                  and "--format megatron-bridge" in r.stderr, f"qwen35 {fmt} refused: {r.returncode} {r.stderr}")
            check(not os.path.exists(out) or not os.listdir(out), f"qwen35 {fmt}: nothing written")
        r = cli("plan", "--model", "qwen35-vl-35b-a3b", "--hardware", "h200", "--gpus", "8", "--for", "moe-train")
        check(r.returncode == 2 and "moe-train cannot build" in r.stderr and "shared experts" in r.stderr,
              f"plan --for moe-train refuses qwen35: {r.returncode} {r.stderr}")

        # The runtime config generated from layout 0 is clean for its world and hardware.
        run_json = os.path.join(tmp, "out-runtime", "run.json")
        r = cli("lint", run_json, "--gpus", "8", "--hardware", "gb200")
        check(r.returncode == 0, f"lint of the generated run.json: {r.stdout}{r.stderr}")
        with open(run_json) as f:
            generated = json.load(f)
        check(generated["parallel"]["expert_model_parallel_size"] == plan["layouts"][0]["ep"], "run.json carries layout 0")
        check(generated["data"]["manifest"] == "/data/my set/manifest.jsonl", "--manifest is written")

        # 5. No silent overwrite; --force replaces.
        before = open(run_json).read()
        r = cli("generate", "--from", plan_path, "--format", "runtime", "--out", os.path.join(tmp, "out-runtime"), "--layout", "1")
        check(r.returncode == 2 and "--force" in r.stderr, f"refuses to overwrite: {r.returncode} {r.stderr}")
        check(open(run_json).read() == before, "the refused run.json is unchanged")
        r = cli("generate", "--from", plan_path, "--format", "runtime", "--out", os.path.join(tmp, "out-runtime"),
                "--layout", "1", "--force")
        check(r.returncode == 0, f"--force overwrites: {r.stderr}")
        r = cli("generate", "--from", plan_path, "--format", "runtime", "--out", os.path.join(tmp, "x"), "--layout", "9")
        check(r.returncode == 2 and "layout" in r.stderr, f"--layout out of range: {r.stderr}")

        # 6. generate from a runtime config (not a plan).
        r = cli("generate", "--from", run_json, "--format", "megatron-bridge", "--out", os.path.join(tmp, "mb2"),
                "--hardware", "h100", "--gpus", "16", "--nodes", "2", "--model", "qwen3-vl-30b-a3b")
        check(r.returncode == 0, f"generate megatron-bridge from a runtime config: {r.stderr}")
        if r.returncode == 0:
            env_sh = open(os.path.join(tmp, "mb2", "env.sh")).read()
            check("export USE_MNNVL=0" in env_sh and "export NVLINK_DOMAIN_SIZE=8" in env_sh, "H100 environment")
            perf = open(os.path.join(tmp, "mb2", "perf_launch.sh")).read()
            check("-ng 16" in perf and "-g h100" in perf, "perf launcher world and GPU")
        r = cli("generate", "--from", run_json, "--format", "megatron-bridge", "--out", os.path.join(tmp, "mb3"))
        check(r.returncode == 2 and "--hardware" in r.stderr, f"megatron-bridge from a config needs --hardware: {r.stderr}")

        # 7. lint: every problem with its line.
        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w") as f:
            f.write('{\n  "name": "bad",\n  "train": {\n    "micro_batch_size": 0,\n    "seq_lenght": 4096\n  },\n'
                    '  "parallel": {\n    "expert_model_parallel_size": 3\n  }\n}\n')
        r = cli("lint", bad)
        check(r.returncode == 2, f"lint bad config exits 2: {r.returncode}")
        for needle in ("bad.json:4: error", "bad.json:5: error", "seq_length", "bad.json:8: error: [ep-divides-experts]"):
            check(needle in r.stdout, f"lint output has {needle!r}: {r.stdout}")
        r = cli("lint", bad, "--json")
        findings = json.loads(r.stdout)["findings"]
        check(any(f["line"] == 8 and f["rule"] == "ep-divides-experts" for f in findings), "lint --json lines and rules")

        # 8. lint of Megatron-Bridge files: the generated ones are clean, a broken one names its lines.
        for name in ("overrides.yaml", "overrides.dotlist"):
            r = cli("lint", os.path.join(tmp, "out-megatron-bridge", name), "--model", "qwen3-vl-30b-a3b",
                    "--gpus", "8", "--hardware", "gb200")
            check(r.returncode == 0, f"lint generated {name}: {r.stdout}{r.stderr}")
        bad_yaml = os.path.join(tmp, "bad.yaml")
        with open(bad_yaml, "w") as f:
            f.write("model:\n  expert_model_parallel_size: 3\n  recompute_granularty: full\n")
        r = cli("lint", bad_yaml, "--model", "qwen3-vl-30b-a3b", "--gpus", "8")
        check(r.returncode == 2 and "bad.yaml:2: error: [ep-divides-experts]" in r.stdout
              and "bad.yaml:3: warning: [bridge-field]" in r.stdout, f"lint bad YAML: {r.stdout}")
        r = cli("lint", bad_yaml)
        check(r.returncode == 2 and "--model" in r.stderr, f"a Bridge file needs --model: {r.stderr}")

        # 9. A perf launcher command names its model, GPU and world: lint needs no options.
        perf = os.path.join(tmp, "out-megatron-bridge", "perf_launch.sh")
        r = cli("lint", perf)
        check(r.returncode == 0 and "8 GPU" in r.stdout, f"lint perf_launch.sh: {r.stdout}{r.stderr}")
        with open(perf) as f:
            broken = f.read().replace("-ep ", "-ep 3 -x ", 1)
        bad_perf = os.path.join(tmp, "bad_perf.sh")
        with open(bad_perf, "w") as f:
            f.write(broken)
        r = cli("lint", bad_perf)
        check(r.returncode == 2 and "[ep-divides-experts]" in r.stdout, f"lint broken perf command: {r.stdout}{r.stderr}")

        # 9b. predict: any given layout in the formats lint reads, with every term; bad input is exit 2.
        r = cli("predict", run_json, "--hardware", "gb200", "--gpus", "8", "--json")
        check(r.returncode == 0, f"predict a runtime config: {r.stderr}")
        if r.returncode == 0:
            p = json.loads(r.stdout)
            check(p["for"] == "moe-train" and p["gpus"] == 8 and p["step_ms"] > 0 and p["memory"]["total_gib"] > 0
                  and any(t["name"] == "weight casts (autocast)" for t in p["step_terms"])
                  and all(t["assumption"] for t in p["step_terms"]), f"predict --json of a runtime config: {p}")
            total = sum(t["ms"] for t in p["step_terms"])
            check(abs(total - p["step_ms"]) < 1e-6 * p["step_ms"], "the step terms add up to the step")
        r = cli("predict", os.path.join(tmp, "out-megatron-bridge", "overrides.yaml"), "--model", "qwen3-vl-30b-a3b",
                "--gpus", "8", "--hardware", "gb200")
        check(r.returncode == 0 and "predicted for megatron-bridge" in r.stdout and "memory, most-loaded rank" in r.stdout
              and "MFU" in r.stdout, f"predict Bridge YAML: {r.stdout}{r.stderr}")
        # A Bridge YAML that names Bridge's mock dataset (as a resolved ConfigContainer does, lists
        # as block sequences) is predicted as that mock, says so, and is faster than the real file.
        with open(os.path.join(tmp, "out-megatron-bridge", "overrides.yaml")) as f:
            real_yaml = f.read()
        mock_yaml = real_yaml.replace("dataset:\n", "dataset:\n  _target_: megatron.bridge.data.vlm_datasets.mock_provider."
                                      "MockVLMSFTDatasetConfig\n  num_images: 1\n  image_size:\n  - 256\n  - 256\n", 1)
        mock_yaml = mock_yaml.replace("model:\n", "model:\n  moe_router_force_load_balancing: true\n", 1)
        mock_path = os.path.join(tmp, "mock-overrides.yaml")
        with open(mock_path, "w") as f:
            f.write(mock_yaml)
        steps = {}
        for name, path in (("real", os.path.join(tmp, "out-megatron-bridge", "overrides.yaml")), ("mock", mock_path)):
            r = cli("predict", path, "--model", "qwen3-vl-30b-a3b", "--gpus", "8", "--hardware", "gb200", "--json")
            check(r.returncode == 0, f"predict {name} Bridge YAML --json: {r.stderr}")
            steps[name] = json.loads(r.stdout)["step_ms"] if r.returncode == 0 else 0
        check(0 < steps["mock"] < steps["real"], f"Bridge mock predicted faster than real: {steps}")
        # The Bridge file generated from layout 0 is predicted as the plan predicted layout 0 (the
        # same sample: a Bridge file says nothing of image sizes, so the plan's default is taken).
        check(abs(steps["real"] - plan["layouts"][0]["step_ms"]) < 1e-3 * steps["real"],
              f"predict of the generated Bridge YAML = the plan's layout 0: {steps['real']} vs {plan['layouts'][0]['step_ms']}")
        r = cli("predict", mock_path, "--model", "qwen3-vl-30b-a3b", "--gpus", "8", "--hardware", "gb200")
        check(r.returncode == 0 and "MOCK DATA" in r.stdout and "force-balanced" in r.stdout, f"predict mock YAML says so: {r.stdout[:600]}")
        r = cli("predict", perf, "--json")  # the perf command names model, GPU and world itself
        check(r.returncode == 0 and json.loads(r.stdout)["gpus"] == 8, f"predict perf_launch.sh: {r.stdout}{r.stderr}")
        r = cli("predict", run_json, "--gpus", "8")
        check(r.returncode == 2 and "--hardware is needed" in r.stderr, f"predict without --hardware: {r.stderr}")
        r = cli("predict", run_json, "--hardware", "gb200", "--gpus", "3")
        check(r.returncode == 2 and "world size 3 is not a multiple" in r.stderr and "fix:" in r.stderr,
              f"predict a layout that does not tile 3 GPUs: {r.stderr}")
        r = cli("predict", bad_yaml, "--hardware", "gb200")
        check(r.returncode == 2 and "--model" in r.stderr, f"predict a Bridge file without --model: {r.stderr}")
        r = cli("predict", bad_yaml, "--hardware", "gb200", "--model", "qwen9-vl")
        check(r.returncode == 2 and "qwen3-vl-30b-a3b" in r.stderr, f"predict an unknown model lists the known ones: {r.stderr}")
        r = cli("predict", os.path.join(tmp, "nope.json"), "--hardware", "gb200")
        check(r.returncode == 2 and "cannot read" in r.stderr, f"predict a missing file: {r.stderr}")
        r = cli("predict", run_json, "--hardware", "gb200", "--gpus", "8", "--workload", run_json)
        check(r.returncode == 2 and "--data-stats" in r.stderr, f"predict with a file that is not a workload: {r.stderr}")

        # 9c. Hostile numbers (issue 20, items 1 and 2): a number beyond double range in a runtime
        # config, and a parallel or batch size of 0 in Bridge input, are exit 2 naming the field and
        # the fix in every command that reads them, never SIGABRT / SIGFPE.
        with open(run_json) as f:
            overflow = f.read().replace('"lr": ', '"lr": 1e999, "lr_was": ', 1)
        overflow_json = os.path.join(tmp, "overflow.json")
        with open(overflow_json, "w") as f:
            f.write(overflow)
        for argv in (("lint", overflow_json), ("predict", overflow_json, "--hardware", "gb200", "--gpus", "8"),
                     ("generate", "--from", overflow_json, "--format", "runtime", "--hardware", "gb200",
                      "--gpus", "8", "--out", os.path.join(tmp, "out-overflow"))):
            r = cli(*argv)
            check(r.returncode == 2 and "beyond the range of a double" in r.stdout + r.stderr,
                  f"{argv[0]} of a config with 1e999: rc {r.returncode} {r.stdout}{r.stderr}")
        check(not os.path.exists(os.path.join(tmp, "out-overflow", "run.json")), "no config written for 1e999")
        zero_cases = [("bad-tp0.yaml", "model:\n  tensor_model_parallel_size: 0\n", "model.tensor_model_parallel_size"),
                      ("bad-ep0.yaml", "model:\n  expert_model_parallel_size: 0\n", "model.expert_model_parallel_size"),
                      ("bad-mbs0.yaml", "train:\n  micro_batch_size: 0\n", "train.micro_batch_size"),
                      ("bad-gbs0.yaml", "train:\n  global_batch_size: 0\n", "train.global_batch_size"),
                      ("bad-vpp0.yaml", "model:\n  virtual_pipeline_model_parallel_size: 0\n",
                       "model.virtual_pipeline_model_parallel_size")]
        perf_text = open(perf).read()
        for flag in ("-tp 0", "-pp 0", "-ep 0", "-et 0", "-et -0", "-mb 0"):
            check(f" {flag.split()[0]} " in perf_text, f"perf_launch.sh has {flag.split()[0]}: {perf_text}")
            zero_cases.append((f"bad-perf{len(zero_cases)}.sh", perf_text.replace(f" {flag.split()[0]} ", f" {flag} -x ", 1),
                               flag.split()[0]))
        for name, text, field in zero_cases:
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                f.write(text)
            extra = () if name.endswith(".sh") else ("--model", "qwen3-vl-30b-a3b", "--gpus", "8", "--hardware", "h200")
            r = cli("lint", path, *extra)
            check(r.returncode == 2 and ">= 1" in r.stdout and field in r.stdout,
                  f"lint {name} names {field} and '>= 1': rc {r.returncode} {r.stdout}{r.stderr}")
            r = cli("predict", path, *(extra or ("--hardware", "h200")))
            check(r.returncode == 2, f"predict {name}: rc {r.returncode} {r.stdout}{r.stderr}")

        # 9d. Inputs that are not regular files (issue 20 item 7): a FIFO blocked every command and
        # /dev/zero ended lint in bad_alloc; a directory was "not valid JSON". Each is exit 2 at once,
        # saying what the path is; a file over the size limit names the limit.
        fifo = os.path.join(tmp, "config.fifo")
        os.mkfifo(fifo)
        huge = os.path.join(tmp, "huge.json")
        with open(huge, "wb") as f:
            f.truncate(17 << 20)
        for path, says in ((fifo, "FIFO"), ("/dev/zero", "a device"), (tmp, "a directory"), (huge, "16 MiB")):
            for argv in (("lint", path), ("predict", path, "--hardware", "h200"),
                         ("generate", "--from", path, "--format", "runtime", "--out", os.path.join(tmp, "out-bad-file")),
                         ("plan", "--model", "qwen3-vl-30b-a3b", "--hardware", "h200", "--gpus", "8", "--answers", path)):
                r = cli(*argv)
                check(r.returncode == 2 and says in r.stderr, f"{argv[0]} {path}: rc {r.returncode} {r.stdout}{r.stderr}")

        # 9e. A file of only comments or nothing (issue 20 item 13) said "invalid literal '#'" or
        # "unexpected end of input": it says it has no settings and what it should hold.
        for name, content in (("comments.dotlist", "# only a comment\n\n   # another\n"), ("empty.yaml", "")):
            path = os.path.join(tmp, name)
            open(path, "w").write(content)
            for argv in (("lint", path), ("predict", path, "--hardware", "h200")):
                r = cli(*argv)
                check(r.returncode == 2 and "no settings (only blank lines and comments)" in r.stderr
                      and "fix:" in r.stderr, f"{argv[0]} {name}: rc {r.returncode} {r.stderr}")

        # 10. Predictions travel with runs: plan -> generate runtime (prediction.json) -> launch.
        db = os.path.join(tmp, "runs.db")
        runs_root = os.path.join(tmp, "runs")

        def store_cli(*argv, steps="40"):
            e = dict(env, FAKE_TRAIN_MODE="finish", FAKE_TRAIN_STEPS=steps)
            return subprocess.run([args.cli, "--db", db, "--runs-root", runs_root, "--moe-train", args.trainer, *argv],
                                  env=e, cwd=tmp, capture_output=True, text=True, timeout=300)

        # A sequence too short for one sample (196 image tokens + 64 caption + 2) is refused up front,
        # as the runtime would refuse the generated config.
        r = cli("plan", "--model", "sample-tiny", "--hardware", "h200", "--gpus", "1", "--seq", "256", "--gbs", "8")
        check(r.returncode == 2 and "raise seq to at least 262" in r.stderr, f"seq too short for a sample: {r.stderr}")
        # Planned for moe-train (--for): the rows are the runtime's own prediction, so the one the
        # generated run carries is its row's. A plan for Megatron-Bridge says that it is not.
        r = cli("plan", "--model", "sample-tiny", "--hardware", "h200", "--gpus", "1", "--seq", "512",
                "--gbs", "8", "--max-results", "2", "--json")
        check(r.returncode == 0 and json.loads(r.stdout)["request"]["for"] == "megatron-bridge",
              f"plan sample-tiny for Megatron-Bridge: {r.stderr}")
        bridge_plan = os.path.join(tmp, "bridge_plan.json")
        with open(bridge_plan, "w") as f:
            f.write(r.stdout)
        r = cli("generate", "--from", bridge_plan, "--format", "runtime", "--out", os.path.join(tmp, "bridge-runtime"))
        check(r.returncode == 0 and "prediction.json is for moe-train" in r.stderr,
              f"generate runtime from a Megatron-Bridge plan says whose prediction it writes: {r.stderr}")
        r = cli("plan", "--model", "sample-tiny", "--hardware", "h200", "--gpus", "1", "--seq", "512",
                "--gbs", "8", "--max-results", "2", "--for", "moe-train", "--json")
        check(r.returncode == 0 and json.loads(r.stdout)["request"]["for"] == "moe-train", f"plan sample-tiny --for moe-train: {r.stderr}")
        tiny_plan = os.path.join(tmp, "tiny_plan.json")
        with open(tiny_plan, "w") as f:
            f.write(r.stdout)
        bad = cli("plan", "--model", "sample-tiny", "--hardware", "h200", "--gpus", "1", "--for", "deepspeed")
        check(bad.returncode == 2 and "--for needs megatron-bridge or moe-train" in bad.stderr, f"--for deepspeed: {bad.stderr}")
        check(json.loads(r.stdout)["calibration"] is None, "plan --json without --calibrate: calibration null")
        out = os.path.join(tmp, "tiny-runtime")
        r = cli("generate", "--from", tiny_plan, "--format", "runtime", "--out", out)
        check(r.returncode == 0, f"generate runtime from the tiny plan: {r.stderr}")
        prediction_path = os.path.join(out, "prediction.json")
        check(os.path.isfile(prediction_path), "generate --format runtime writes prediction.json")
        prediction = json.load(open(prediction_path))
        check(prediction["hardware"] == "h200" and prediction["gpus"] == 1 and prediction["step_ms"] > 0
              and prediction["calibration"] == "", f"prediction.json figures: {prediction}")
        check(abs(prediction["step_ms"] - json.loads(open(tiny_plan).read())["layouts"][0]["step_ms"]) < 1e-2,
              "prediction.json is layout 0's step time")
        run_ids = []
        for i in range(3):
            r = store_cli("launch", "--target", "local", "--config", os.path.join(out, "run.json"), "--name", f"planned-{i}")
            check(r.returncode == 0, f"launch the generated config: {r.stderr}")
            run_id = r.stdout.strip()
            run_ids.append(run_id)
            w = store_cli("watch", run_id, "--interval-ms", "100")
            check(w.returncode == 0, f"watch {run_id}: {w.stderr}")
            if i == 0:
                # One run: a calibration needs three.
                r = store_cli("plan", "--model", "sample-tiny", "--hardware", "h200", "--gpus", "1", "--seq", "512",
                              "--gbs", "8", "--max-results", "2", "--for", "moe-train", "--calibrate")
                check(r.returncode == 0 and "not calibrated: 1 usable h200 run(s), 3 needed" in r.stdout
                      and run_id in r.stdout, f"plan --calibrate with one run says so: {r.stdout}{r.stderr}")
                # A Megatron-Bridge plan is not calibrated by a run predicted for moe-train.
                r = store_cli("plan", "--model", "sample-tiny", "--hardware", "h200", "--gpus", "1", "--seq", "512",
                              "--gbs", "8", "--max-results", "2", "--calibrate")
                check(r.returncode == 0 and "predicted for moe-train, this plan is for megatron-bridge" in r.stdout,
                      f"plan --calibrate for Megatron-Bridge skips moe-train's predictions: {r.stdout}{r.stderr}")
        # predict --calibrate-run needs the run's time split; the stand-in trainer writes none.
        r = store_cli("predict", os.path.join(out, "run.json"), "--hardware", "h200", "--gpus", "1",
                      "--calibrate-run", run_ids[0])
        check(r.returncode == 2 and "no time split" in r.stderr, f"predict --calibrate-run without a split: {r.stderr}")
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        rows = con.execute("SELECT run_id, hardware, gpus, step_ms FROM predictions").fetchall()
        con.close()
        check(sorted(r[0] for r in rows) == sorted(run_ids), f"every launched run has its prediction: {rows}")
        check(all(r[1] == "h200" and r[2] == 1 and abs(r[3] - prediction["step_ms"]) < 1e-6 for r in rows),
              f"the stored prediction is prediction.json's: {rows}")

        # 10b. A plain config generated into that folder without --hardware/--gpus has no prediction:
        # the old prediction.json would be stored with the wrong run, so generate refuses, and
        # --force removes it.
        r = cli("generate", "--from", os.path.join(out, "run.json"), "--format", "runtime", "--out", out)
        check(r.returncode == 2 and "prediction.json (from an earlier plan" in r.stderr, f"stale prediction refused: {r.stderr}")
        check(os.path.isfile(prediction_path), "the refused generate left prediction.json as it was")
        r = cli("generate", "--from", os.path.join(out, "run.json"), "--format", "runtime", "--out", out, "--force")
        check(r.returncode == 0 and not os.path.exists(prediction_path), f"--force removes the stale prediction: {r.stderr}")
        r = cli("generate", "--from", os.path.join(out, "run.json"), "--format", "runtime", "--out", out, "--force",
                "--hardware", "h200", "--gpus", "1", "--model", "sample-tiny")
        check(r.returncode == 0 and os.path.isfile(prediction_path), f"a config with --hardware/--gpus is predicted: {r.stderr}")
        if os.path.isfile(prediction_path):
            again = json.load(open(prediction_path))
            check(again["gpus"] == 1 and again["hardware"] == "h200" and again["step_ms"] > 0,
                  f"prediction of a plain config: {again}")

        # 11. Three runs with a steady state (the stand-in's 12.5 ms steps): calibrated.
        r = store_cli("plan", "--model", "sample-tiny", "--hardware", "h200", "--gpus", "1", "--seq", "512",
                      "--gbs", "8", "--max-results", "2", "--for", "moe-train", "--calibrate", "--json")
        check(r.returncode == 0, f"plan --calibrate --json: {r.stderr}")
        calibrated = json.loads(r.stdout) if r.returncode == 0 else {"calibration": None, "layouts": []}
        cal = calibrated["calibration"]
        check(cal is not None and cal["applied"] and len(cal["runs"]) == 3 and cal["hardware"] == "h200",
              f"calibration from three runs: {cal}")
        if cal and cal["applied"]:
            factor = 12.5 / prediction["step_ms"]
            check(abs(cal["step_time_factor"] - factor) < 1e-3 * max(1.0, factor),
                  f"factor = measured / predicted: {cal['step_time_factor']} vs {factor}")
            plain = json.loads(open(tiny_plan).read())["layouts"][0]
            mine = [l for l in calibrated["layouts"] if l["describe"] == plain["describe"]]
            check(mine and abs(mine[0]["step_ms"] - 12.5) < 0.05, f"calibrated step time ≈ measured: {mine[:1]}")
            # A prediction generated from the calibrated plan says so and keeps the model's own figure.
            cal_plan = os.path.join(tmp, "cal_plan.json")
            with open(cal_plan, "w") as f:
                f.write(r.stdout)
            r = cli("generate", "--from", cal_plan, "--format", "runtime", "--out", os.path.join(tmp, "cal-runtime"))
            p2 = json.load(open(os.path.join(tmp, "cal-runtime", "prediction.json")))
            check(p2["calibration"].startswith("step time ×") and
                  abs(p2["detail"]["uncalibrated_step_ms"] - p2["step_ms"] / cal["step_time_factor"]) < 1e-2 * p2["step_ms"],
                  f"calibrated prediction.json: {p2['calibration']} {p2['step_ms']}")

        # 10. Megatron-Bridge runs calibrate Megatron-Bridge plans (issue 16 item 4): three imported
        # logs (30 iterations each, Megatron's exact line format) with the fixture's resolved
        # config get the planner's prediction on import; `plan --calibrate` then scales by their
        # median measured/predicted step time. A per-term calibration needs moe-train's time split
        # and says to use --calibrate instead.
        bridge_env = dict(env, XDG_DATA_HOME=os.path.join(tmp, "bridge-data"))
        fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "core", "fixtures", "bridge",
                               "qwen3_vl_30b_a3b_config.yaml")
        imported = []
        for n, ms in enumerate((6200.0, 6500.0, 6000.0)):
            log = os.path.join(tmp, f"bridge{n}.log")
            with open(log, "w") as f:
                for it in range(1, 31):
                    f.write(f" [2026-11-20 10:01:10] iteration {it:8d}/      30 | consumed samples: {it * 128:12d} | "
                            f"elapsed time per iteration (ms): {ms + (it % 3):.1f} | throughput per GPU (TFLOP/s/GPU): "
                            "301.0 | learning rate: 1.666667E-06 | global batch size:   128 | lm loss: 2.400000E+00 | "
                            "loss scale: 1.0 | grad norm: 1.210 | number of skipped iterations:   0 | "
                            "number of nan iterations:   0 |\n")
            r = subprocess.run([args.cli, "import", "--bridge", log, "--config", fixture, "--name", f"bridge{n}",
                                "--model", "qwen3-vl-30b-a3b", "--hardware", "h200", "--gpus", "16", "--json"],
                               env=bridge_env, cwd=tmp, capture_output=True, text=True, timeout=120)
            check(r.returncode == 0, f"import --bridge {n}: {r.stderr}")
            if r.returncode == 0:
                imported.append(json.loads(r.stdout))
        r = subprocess.run([args.cli, "plan", "--model", "qwen3-vl-30b-a3b", "--hardware", "h200", "--gpus", "16",
                            "--max-results", "1", "--calibrate", "--json"],
                           env=bridge_env, cwd=tmp, capture_output=True, text=True, timeout=120)
        cal = json.loads(r.stdout)["calibration"] if r.returncode == 0 else None
        check(cal is not None and cal["applied"] and len(cal["runs"]) == 3,
              f"plan --calibrate from three imported Bridge runs: {r.stdout[:400]}{r.stderr}")
        if cal and cal["applied"]:
            ratios = sorted(run["measured_step_ms"] / run["predicted_step_ms"] for run in cal["runs"])
            check(abs(cal["step_time_factor"] - ratios[1]) < 2e-3, f"Bridge calibration = median ratio: {cal}")
        if imported:
            run_id = imported[0].get("id") or imported[0].get("run_id")
            r = subprocess.run([args.cli, "plan", "--model", "qwen3-vl-30b-a3b", "--hardware", "h200", "--gpus", "16",
                                "--calibrate-run", str(run_id)],
                               env=bridge_env, cwd=tmp, capture_output=True, text=True, timeout=120)
            check(r.returncode == 2 and "plan --calibrate" in r.stderr, f"--calibrate-run on a Bridge run: {r.stderr}")

    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("planner e2e: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
