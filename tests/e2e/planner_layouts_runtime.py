#!/usr/bin/env python3
"""End-to-end: the planner's multi-dimensional layouts are runtime configs moe-train accepts.

For qwen3-vl-235b-a22b on 64 H100 and on 64 GB200: `plan --json` -> `generate --format runtime
--layout i` for every layout with TP > 1 and PP > 1 (3D parallel; the GB200 ones use virtual
stages) or TP > 1 with Megatron FSDP (the TP 2 + `optim_grads_params` + EP rows) -> `moe-train
--validate run.json --nproc-per-node 64`. The generated config is for GPUs and real images; this
CPU test machine has neither, so exactly those machine facts are changed before validating
(runtime.device cpu, precision fp32, mock data, no CUDA graphs). The layout stays as the planner
wrote it, except what the runtime formats rewrite with a warning: virtual stages become plain
1F1B over the same stages, a flex dispatcher becomes alltoall (docs/planner.md).

Expected: a layout moe-train runs (ETP 1 or ETP = TP, and no FSDP together with PP) validates
with exit 0; any other is refused (exit 2) naming what moe-train does not run, and never for
tensor and pipeline parallelism together or for FSDP with TP. At least one TP × PP layout, one
with virtual stages and one TP + FSDP + EP layout must be accepted.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

GPUS = 64


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
        return condition

    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, HOME=tmp, XDG_DATA_HOME=os.path.join(tmp, "data"),
                   XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        env.pop("MOE_WORKBENCH_CATALOG", None)
        env.pop("WORLD_SIZE", None)

        def run(*argv):
            return subprocess.run(list(argv), env=env, cwd=tmp, capture_output=True, text=True, timeout=120)

        accepted = {"tp×pp": 0, "interleaved": 0, "tp+fsdp+ep": 0}
        for hardware in ("h100", "gb200"):
            r = run(args.cli, "plan", "--model", "qwen3-vl-235b-a22b", "--hardware", hardware, "--gpus", str(GPUS),
                    "--max-results", "20", "--json")
            if not check(r.returncode == 0, f"{hardware}: plan exit {r.returncode}: {r.stderr}"):
                continue
            plan_path = os.path.join(tmp, f"plan-{hardware}.json")
            with open(plan_path, "w") as f:
                f.write(r.stdout)
            for i, layout in enumerate(json.loads(r.stdout)["layouts"]):
                fsdp = layout["fsdp"] not in ("", "-", "none", "no_shard", None)
                if layout["tp"] == 1 or (layout["pp"] == 1 and not fsdp):
                    continue
                what = (f"{hardware} layout {i} (tp{layout['tp']} pp{layout['pp']} vpp{layout['vpp']} ep{layout['ep']} "
                        f"etp{layout['etp']} dp{layout['dp']} fsdp {layout['fsdp']} {layout['dispatcher']})")
                out = os.path.join(tmp, f"{hardware}-layout{i}")
                g = run(args.cli, "generate", "--from", plan_path, "--format", "runtime", "--out", out, "--layout", str(i))
                if not check(g.returncode == 0, f"generate {what}: {g.stderr}"):
                    continue
                run_json = os.path.join(out, "run.json")
                with open(run_json) as f:
                    config = json.load(f)
                p = config["parallel"]
                check(p["tensor_model_parallel_size"] == layout["tp"] and p["pipeline_model_parallel_size"] == layout["pp"]
                      and p["expert_model_parallel_size"] == layout["ep"] and p["use_megatron_fsdp"] == fsdp,
                      f"{what}: run.json carries its TP, PP, EP and FSDP")
                if layout["vpp"] > 1:
                    check(p["virtual_pipeline_model_parallel_size"] == 1 and "plain 1F1B" in g.stderr,
                          f"{what}: virtual stages written as plain 1F1B, with a warning: {g.stderr}")
                check(p["moe_token_dispatcher_type"] == "alltoall", f"{what}: the runtime formats dispatch by alltoall")
                # The machine, not the layout: no GPU and no image set here.
                config["runtime"]["device"] = "cpu"
                config["train"]["precision"] = "fp32"
                config["data"].update({"source": "mock", "manifest": "", "mock_image_size": 448})
                config["cuda_graph"] = {"impl": "none", "scope": [], "warmup_steps": config["cuda_graph"]["warmup_steps"]}
                with open(run_json, "w") as f:
                    json.dump(config, f, indent=2)
                v = run(args.trainer, "--validate", run_json, "--nproc-per-node", str(GPUS))
                text = v.stdout + v.stderr
                check("tensor and pipeline" not in text, f"{what}: refused for TP with PP: {text}")
                check("FSDP with tensor" not in text, f"{what}: refused for FSDP with TP: {text}")
                runs = p["expert_tensor_parallel_size"] in (1, p["tensor_model_parallel_size"]) and not (fsdp and layout["pp"] > 1)
                if runs:
                    if check(v.returncode == 0, f"{what}: moe-train --validate exit {v.returncode}: {text}"):
                        accepted["tp×pp"] += layout["pp"] > 1
                        accepted["interleaved"] += layout["vpp"] > 1
                        accepted["tp+fsdp+ep"] += fsdp and layout["ep"] > 1
                else:
                    check(v.returncode == 2 and any(field in text for field in (
                        "parallel.expert_tensor_parallel_size", "parallel.use_megatron_fsdp")),
                          f"{what}: refused without naming what moe-train does not run: {text}")
                print(f"{what}: moe-train --validate exit {v.returncode}")
        for kind, count in accepted.items():
            check(count > 0, f"no {kind} layout of the plans was accepted by moe-train")
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("planner layouts as runtime configs: all checks passed", accepted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
