#!/usr/bin/env python3
"""End-to-end: a planner layout with TP > 1 and PP > 1 is a runtime config moe-train accepts.

`plan --json` (qwen3-vl-235b-a22b on 64 H100, and on 64 GB200 where the planner's TP × PP layouts
use virtual stages) -> `generate --format runtime --layout i` for every layout with TP > 1 and
PP > 1 -> `moe-train --validate run.json --nproc-per-node 64`. Virtual stages are written as plain
1F1B over the same stages (with a warning on stderr), so they validate too. The generated config is for GPUs and real images; this CPU test machine has
neither, so exactly those three machine facts are changed before validating (runtime.device cpu,
precision fp32, mock data). Everything about the layout stays as the planner wrote it.

Expected: a layout moe-train runs (ETP 1 or ETP = TP, all-to-all dispatch, no FSDP) validates with
exit 0; any other is refused (exit 2) naming what moe-train does not run (ETP, dispatcher, FSDP),
and never for tensor and pipeline parallelism together. At least one such layout must be accepted.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--trainer", required=True, help="the real moe-train")
    args = parser.parse_args()
    args.cli, args.trainer = os.path.abspath(args.cli), os.path.abspath(args.trainer)
    failures = []

    def check(condition, what):
        if not condition:
            failures.append(what)
            print("FAIL:", what, file=sys.stderr)

    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, HOME=tmp, XDG_DATA_HOME=os.path.join(tmp, "data"),
                   XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        env.pop("MOE_WORKBENCH_CATALOG", None)
        env.pop("WORLD_SIZE", None)

        def run(*argv):
            return subprocess.run(list(argv), env=env, cwd=tmp, capture_output=True, text=True, timeout=120)

        gpus = 64
        accepted = 0
        interleaved = 0
        for hardware in ("h100", "gb200"):
            r = run(args.cli, "plan", "--model", "qwen3-vl-235b-a22b", "--hardware", hardware, "--gpus", str(gpus),
                    "--max-results", "20", "--json")
            check(r.returncode == 0, f"plan exit {r.returncode}: {r.stderr}")
            if r.returncode != 0:
                return 1
            plan_path = os.path.join(tmp, f"plan-{hardware}.json")
            with open(plan_path, "w") as f:
                f.write(r.stdout)
            layouts = json.loads(r.stdout)["layouts"]
            picked = [i for i, l in enumerate(layouts) if l["tp"] > 1 and l["pp"] > 1]
            check(picked, f"the {hardware} plan has a layout with TP > 1 and PP > 1")
            for i in picked:
                layout = layouts[i]
                what = f"{hardware} layout {i} (vpp{layout['vpp']} tp{layout['tp']} pp{layout['pp']} ep{layout['ep']} etp{layout['etp']} dp{layout['dp']})"
                out = os.path.join(tmp, f"{hardware}-layout{i}")
                r = run(args.cli, "generate", "--from", plan_path, "--format", "runtime", "--out", out, "--layout", str(i))
                check(r.returncode == 0, f"generate {what}: {r.stderr}")
                if r.returncode != 0:
                    continue
                run_json = os.path.join(out, "run.json")
                with open(run_json) as f:
                    config = json.load(f)
                p = config["parallel"]
                check(p["tensor_model_parallel_size"] == layout["tp"] and p["pipeline_model_parallel_size"] == layout["pp"],
                      f"{what}: run.json carries its TP and PP")
                if layout["vpp"] > 1:
                    interleaved += 1
                    check(p["virtual_pipeline_model_parallel_size"] == 1 and "plain 1F1B" in r.stderr,
                          f"{what}: virtual stages written as plain 1F1B, with a warning: {r.stderr}")
                # The machine, not the layout: no GPU and no image set here.
                config["runtime"]["device"] = "cpu"
                config["train"]["precision"] = "fp32"
                config["data"].update({"source": "mock", "manifest": "", "mock_image_size": 448})
                config["cuda_graph"] = {"impl": "none", "scope": [], "warmup_steps": config["cuda_graph"]["warmup_steps"]}
                with open(run_json, "w") as f:
                    json.dump(config, f, indent=2)
                r = run(args.trainer, "--validate", run_json, "--nproc-per-node", str(gpus))
                text = r.stdout + r.stderr
                runs = (p["expert_tensor_parallel_size"] in (1, p["tensor_model_parallel_size"])
                        and (p["expert_model_parallel_size"] == 1 or p["moe_token_dispatcher_type"] == "alltoall")
                        and not (p["use_megatron_fsdp"] and p["data_parallel_sharding_strategy"] != "no_shard"))
                check("tensor and pipeline" not in text, f"{what}: refused for TP with PP: {text}")
                if runs:
                    check(r.returncode == 0, f"{what}: moe-train --validate exit {r.returncode}: {text}")
                    accepted += r.returncode == 0
                else:
                    check(r.returncode == 2 and any(field in text for field in (
                        "parallel.expert_tensor_parallel_size", "parallel.moe_token_dispatcher_type", "parallel.use_megatron_fsdp")),
                          f"{what}: refused without naming what moe-train does not run: {text}")
                print(f"{what}: moe-train --validate exit {r.returncode}")
        check(accepted > 0, "at least one TP × PP layout of the plans is accepted by moe-train")
        check(interleaved > 0, "a TP × PP layout with virtual stages was generated and checked")
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("planner TP × PP layouts: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
