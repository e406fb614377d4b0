#!/usr/bin/env python3
"""End-to-end test of `compare` and `export` through the real CLI binary (label e2e).

Two runs are launched with a stand-in trainer (written here: it follows moe-train's command line and
run-directory files, and writes a meta line with the config's data source plus steps with a known
warm-up), one on real data and one on mock data, into a temporary store. Then:
  compare A B            the mock-vs-real warning first, the figure rows, exit 0
  compare --json         warnings[0] is critical/data_source; the delta of the 2x faster mock run
  compare --report DIR   report.md (warning before the figures) + 4 well-formed SVG charts
  export A --csv FILE    one row per metrics.jsonl step, same values; `--csv -` prints the same
  export A B --report    the report without the printout
and the usage errors exit 2.
"""
import argparse
import csv
import io
import json
import os
import stat
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

FAILURES = []

TRAINER = r'''#!/usr/bin/env python3
import json, os, sys, time
args = sys.argv[1:]
if args and args[0] == "--validate":
    sys.exit(0)
opts = dict(zip(args[::2], args[1::2]))
config = json.load(open(opts["--config"]))
run_dir = opts["--run-dir"]
source = config.get("data", {}).get("source", "mock")
gbs = config["train"]["global_batch_size"]
steps = config["train"]["train_iters"]
step_ms = 50.0 if source == "mock" else 100.0
def status(word, code, step):
    with open(os.path.join(run_dir, "status.json.tmp"), "w") as f:
        json.dump({"status": word, "exit_code": code, "message": "", "step": step, "pid": os.getpid(),
                   "updated": int(time.time())}, f)
    os.replace(os.path.join(run_dir, "status.json.tmp"), os.path.join(run_dir, "status.json"))
status("running", None, 0)
with open(os.path.join(run_dir, "metrics.jsonl"), "w") as m:
    m.write(json.dumps({"v": 1, "type": "meta", "run_id": "stand-in", "world_size": 1, "device": "cpu",
                        "data_source": source, "peak_tflops": 10.0, "seq_length": 128,
                        "micro_batch_size": 2, "global_batch_size": gbs}) + "\n")
    t = 1.7e9
    for i in range(1, steps + 1):
        ms = step_ms * (4.0 if i <= 5 else 1.0 + 0.01 * ((i * 7919) % 11 - 5) / 5.0)
        t += ms / 1000.0
        m.write(json.dumps({"v": 1, "type": "step", "step": i, "time": t, "step_ms": ms,
                            "effective_tokens": 256 * gbs, "text_tokens": 192 * gbs, "image_tokens": 64 * gbs,
                            "images": gbs, "loss": 5.0 / i + 1.0, "tflops_per_gpu": 2.0,
                            "mem_peak_gib": 0.5 + (0.1 if i <= 5 else 0.0)}) + "\n")
    m.write(json.dumps({"v": 1, "type": "end", "status": "finished", "exit_code": 0, "step": steps}) + "\n")
status("finished", 0, steps)
'''


def check(condition, what):
    if not condition:
        FAILURES.append(what)
        print("FAIL:", what, flush=True)
    return condition


class Env:
    def __init__(self, cli, tmp):
        self.cli_path = cli
        self.tmp = tmp
        self.db = os.path.join(tmp, "store", "runs.sqlite")
        self.runs_root = os.path.join(tmp, "runs")
        self.trainer = os.path.join(tmp, "stand_in_train.py")
        with open(self.trainer, "w") as f:
            f.write(TRAINER)
        os.chmod(self.trainer, os.stat(self.trainer).st_mode | stat.S_IXUSR)
        self.env = dict(os.environ)
        self.env.update({"HOME": os.path.join(tmp, "home"), "XDG_DATA_HOME": os.path.join(tmp, "xdg-data"),
                         "XDG_CACHE_HOME": os.path.join(tmp, "xdg-cache")})
        os.makedirs(self.env["HOME"], exist_ok=True)

    def cli(self, *argv, timeout=120):
        cmd = [self.cli_path, "--db", self.db, "--runs-root", self.runs_root, "--moe-train", self.trainer, *argv]
        p = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout)
        print("$", " ".join(argv), "->", p.returncode, flush=True)
        if p.returncode != 0 or os.environ.get("E2E_VERBOSE"):
            sys.stdout.write(p.stdout[-3000:])
            sys.stdout.write(p.stderr[-3000:])
        return p


def config_file(env, name, source, steps=60):
    data = {"source": "mock", "mock_image_size": 32, "caption_max_tokens": 32}
    if source == "real":
        manifest = os.path.join(env.tmp, "manifest.jsonl")
        open(manifest, "a").close()
        data = {"source": "real", "manifest": manifest, "min_pixels": 32 * 32, "max_pixels": 64 * 64,
                "caption_max_tokens": 32}
    config = {
        "name": name,
        "model": {
            "vision": {"num_layers": 1, "hidden_size": 32, "ffn_hidden_size": 64, "num_attention_heads": 2,
                       "patch_size": 16, "spatial_merge_size": 2},
            "decoder": {"num_layers": 1, "hidden_size": 32, "num_attention_heads": 2, "num_query_groups": 1,
                        "kv_channels": 16, "num_moe_experts": 4, "moe_router_topk": 2, "moe_ffn_hidden_size": 32,
                        "vocab_size": 320},
        },
        "train": {"train_iters": steps, "micro_batch_size": 2, "global_batch_size": 2, "seq_length": 128,
                  "lr_warmup_iters": 1},
        "data": data,
    }
    path = os.path.join(env.tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(config, f, indent=2)
    return path


def launch(env, name, source, prediction=None):
    extra = ["--prediction", prediction] if prediction else []
    p = env.cli("launch", "--target", "local", "--config", config_file(env, name, source), "--name", name, *extra)
    if not check(p.returncode == 0, "launch %s exits 0" % name):
        return None
    run_id = p.stdout.strip()
    w = env.cli("watch", run_id, "--interval-ms", "50")
    check(w.returncode == 0, "watch %s exits 0" % name)
    return run_id


def file_steps(env, run_id):
    out = []
    with open(os.path.join(env.runs_root, run_id, "metrics.jsonl")) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("type") == "step":
                out.append(rec)
    return out


def case_compare(env, real, mock):
    p = env.cli("compare", real, mock)
    check(p.returncode == 0, "compare exits 0")
    out = p.stdout
    check(out.startswith("WARNINGS") and "CRITICAL" in out.splitlines()[1], "the critical warning comes first")
    check("MOCK vs REAL" in out, "compare says mock vs real")
    for label in ("effective tokens/s/GPU", "GPU-ms per 1k eff. tokens", "step time", "peak memory"):
        check(label in out, "compare prints the %s row" % label)
    check("real-run [baseline]" in out, "the first run is the baseline")

    j = env.cli("compare", real, mock, "--json")
    check(j.returncode == 0, "compare --json exits 0")
    doc = json.loads(j.stdout) if j.returncode == 0 else {}
    warnings = doc.get("warnings", [])
    check(warnings and warnings[0]["severity"] == "critical" and warnings[0]["code"] == "data_source",
          "warnings[0] is critical/data_source: %r" % warnings[:1])
    runs = doc.get("runs", [])
    if check(len(runs) == 2, "two runs in the JSON"):
        # 512 effective tokens per step; real 100 ms, mock 50 ms, one GPU: 5120 vs 10240 tokens/s.
        base = runs[0]["figures"]["tokens_per_s_per_gpu"]["value"]
        delta = runs[1]["figures"]["tokens_per_s_per_gpu"]["delta_vs_baseline"]
        check(abs(base - 5120.0) < 5120.0 * 0.02, "baseline tokens/s/GPU is 5120 (got %r)" % base)
        check(delta is not None and abs(delta - 1.0) < 0.05, "mock run +100%% tokens/s/GPU (got %r)" % delta)
        window = runs[0]["window"]
        check(window["detected"] and window["first_step"] == 6 and window["last_step"] == 60,
              "the steady window skips the 5 warm-up steps: %r" % window)

    report = os.path.join(env.tmp, "report")
    r = env.cli("compare", real, mock, "--report", report, "--log-y", "--chart-x", "tokens")
    check(r.returncode == 0, "compare --report exits 0")
    check("WARNINGS" in r.stdout, "compare --report still prints the comparison")
    check_report(report)

    html = os.path.join(env.tmp, "comparison.html")
    h = env.cli("compare", real, mock, "--report", html)
    check(h.returncode == 0, "compare --report FILE.html exits 0")
    check_html(html, ["real-run", "mock-run"])

    r2 = env.cli("export", real, mock, "--report", os.path.join(env.tmp, "report2"), "--baseline", mock)
    check(r2.returncode == 0 and r2.stdout == "", "export --report exits 0 and prints nothing on stdout")
    check_report(os.path.join(env.tmp, "report2"), baseline="mock-run")


def check_report(directory, baseline="real-run"):
    md_path = os.path.join(directory, "report.md")
    if not check(os.path.exists(md_path), "report.md written in %s" % directory):
        return
    md = open(md_path, encoding="utf-8").read()
    critical, figures = md.find("CRITICAL (data_source)"), md.find("## Figures")
    check(0 < critical < figures, "the report leads with the critical warning")
    check("| effective tokens/s/GPU (tok/s) |" in md and "| step time (ms) |" in md, "the report has the figure rows")
    check("%s (baseline)" % baseline in md, "the report names the baseline %s" % baseline)
    check("`data.source`" in md, "the config diff shows data.source")
    for stem in ("step_time", "throughput", "loss", "peak_memory"):
        svg = os.path.join(directory, stem + ".svg")
        check("(%s.svg)" % stem in md, "report.md links %s.svg" % stem)
        try:
            root = ET.parse(svg).getroot()
            check(root.tag.endswith("svg"), "%s is an SVG" % svg)
            lines = [e for e in root.iter() if e.tag.endswith("polyline") and e.get("class") == "series"]
            check(len(lines) == 2, "%s draws both runs" % svg)
        except (OSError, ET.ParseError) as e:
            check(False, "%s parses: %s" % (svg, e))


def prediction_file(env):
    # The stand-in trainer runs 100 ms steady steps on real data, 512 effective tokens per step on
    # one GPU (5120 tokens/s/GPU), 2 TFLOP/s of a 10 TFLOP/s peak (MFU 0.2), peak memory 0.6 GiB.
    path = os.path.join(env.tmp, "prediction.json")
    with open(path, "w") as f:
        json.dump({"prediction_version": 1, "source": "e2e planner", "hardware": "cpu", "gpus": 1,
                   "calibration": "", "step_ms": 80.0, "tokens_per_s_per_gpu": 6400.0,
                   "tflops_per_gpu": 2.5, "mfu": 0.25, "memory_gib": 0.9}, f)
    return path


def case_prediction(env, real, planned):
    """A run launched with --prediction: predicted vs measured in the text, the JSON and the report."""
    p = env.cli("compare", real, planned)
    check(p.returncode == 0, "compare with a planned run exits 0")
    out = p.stdout
    check("PREDICTED VS MEASURED" in out, "compare prints the predicted-vs-measured table")
    check("no prediction (not launched from a plan)" in out, "a run without a prediction says so")
    check("80.0 / " in out and "mean |error|" in out, "the planned run's step time and the mean error are printed")

    j = env.cli("compare", real, planned, "--json")
    doc = json.loads(j.stdout) if j.returncode == 0 else {}
    runs = doc.get("runs", [])
    if check(len(runs) == 2, "two runs in the prediction JSON"):
        check(runs[0]["prediction"] is None, "prediction is null for the run not launched from a plan")
        pred = runs[1]["prediction"] or {}
        fig = pred.get("figures", {})
        step = fig.get("step_ms", {})
        # Predicted 80 ms against the measured ~100 ms: about -20 %.
        check(step.get("predicted") == 80.0 and abs(step.get("measured", 0) - 100.0) < 2.0,
              "step time predicted 80 / measured ~100: %r" % step)
        check(step.get("error_pct") is not None and abs(step["error_pct"] + 20.0) < 2.0,
              "step time error about -20%%: %r" % step)
        mem = fig.get("peak_mem_gib", {})
        check(mem.get("error_pct") is not None and abs(mem["error_pct"] - 50.0) < 0.01,
              "peak memory 0.9 vs 0.6 GiB is +50%%: %r" % mem)
        tok = fig.get("tokens_per_s_per_gpu", {})
        check(tok.get("error_pct") is not None and abs(tok["error_pct"] - 25.0) < 2.5,
              "tokens/s/GPU 6400 vs ~5120 is about +25%%: %r" % tok)
        mfu = fig.get("mfu", {})
        check(mfu.get("error_pct") is not None and abs(mfu["error_pct"] - 25.0) < 2.5,
              "MFU 25%% vs ~20%% is about +25%%: %r" % mfu)
        check(pred.get("hardware") == "cpu" and pred.get("gpus") == 1, "the prediction says what it was for")
        html = os.path.join(env.tmp, "planned.html")
        h = env.cli("export", real, planned, "--report", html)
        check(h.returncode == 0 and h.stdout == "", "export --report FILE.html exits 0 and prints nothing")
        check_html(html, ["real-run", "planned-run"], critical=False)
        page = open(html, encoding="utf-8").read() if os.path.exists(html) else ""
        check("Predicted vs measured" in page and "80.0 / " in page and "no prediction (not launched from a plan)" in page,
              "the HTML report shows predicted vs measured")
        acc = doc.get("prediction_accuracy", {}).get("step_ms", {})
        check(acc.get("runs") == 1 and abs(acc.get("mean_abs_error_pct", 0) - 20.0) < 2.0,
              "mean |error| of step time over the one planned run: %r" % acc)


def check_html(path, run_names, critical=True):
    """One self-contained XHTML file: banner first, every run, the figures, four inline SVGs."""
    if not check(os.path.isfile(path), "%s written" % path):
        return
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        check(False, "%s parses as XML: %s" % (path, e))
        return
    ns = "{http://www.w3.org/1999/xhtml}"
    body = root.find(ns + "body")
    if not check(body is not None, "the HTML report has a body"):
        return
    first = list(body)[0]
    check(first.get("id") == "warnings", "the HTML report opens with the warnings banner")
    text = "".join(body.itertext())
    if critical:
        check("critical" in first.get("class", "") and "MOCK vs REAL" in "".join(first.itertext()),
              "the HTML banner is critical and says mock vs real")
    for name in run_names:
        check(name in text, "the HTML report names run %s" % name)
    check("effective tokens/s/GPU (tok/s)" in text, "the HTML report has the figure rows")
    svgs = [e for e in root.iter() if e.tag.endswith("}svg")]
    check(len(svgs) == 4, "the HTML report has four inline SVG charts (got %d)" % len(svgs))
    html_text = open(path, encoding="utf-8").read()
    check(" src=" not in html_text and " href=" not in html_text, "the HTML report links nothing outside itself")


def unique_prefix(run_id, others):
    """The shortest prefix of run_id (at least the timestamp part) that no other id starts with.
    Ids made in the same second share the timestamp and may share hex digits of the suffix."""
    for n in range(17, len(run_id) + 1):
        if not any(o.startswith(run_id[:n]) for o in others):
            return run_id[:n]
    return run_id


def case_export_csv(env, real, others):
    path = os.path.join(env.tmp, "steps.csv")
    p = env.cli("export", real, "--csv", path)
    check(p.returncode == 0 and p.stdout == "", "export --csv exits 0, nothing on stdout")
    want = file_steps(env, real)
    with open(path, newline="") as f:
        text = f.read()
    rows = list(csv.DictReader(io.StringIO(text)))
    check(len(rows) == len(want), "one CSV row per step (%d vs %d)" % (len(rows), len(want)))
    for row, rec in zip(rows, want):
        same = (int(row["step"]) == rec["step"] and float(row["step_ms"]) == rec["step_ms"]
                and float(row["time"]) == rec["time"] and float(row["loss"]) == rec["loss"]
                and int(row["effective_tokens"]) == rec["effective_tokens"])
        if not check(same, "CSV row equals the metrics.jsonl step: %r vs %r" % (row, rec)):
            break
    s = env.cli("export", unique_prefix(real, others), "--csv", "-")
    check(s.returncode == 0 and s.stdout == text, "export --csv - prints the same CSV (prefix id works)")
    check(not any(n.startswith("steps.csv.tmp") for n in os.listdir(env.tmp)), "no temporary file left")


def case_usage(env, real):
    check(env.cli("compare").returncode == 2, "compare without runs exits 2")
    check(env.cli("compare", real, "--window", "9:x").returncode == 2, "a bad --window exits 2")
    check(env.cli("compare", real, "--chart-x", "nope", "--report", env.tmp).returncode == 2, "a bad --chart-x exits 2")
    check(env.cli("export", real).returncode == 2, "export without --csv/--report exits 2")
    p = env.cli("compare", "no-such-run")
    check(p.returncode != 0 and "no-such-run" in p.stderr, "an unknown run is an error that names it")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="wb-compare-e2e-") as tmp:
        env = Env(args.cli, tmp)
        real = launch(env, "real-run", "real")
        mock = launch(env, "mock-run", "mock")
        if real and mock:
            case_compare(env, real, mock)
            case_export_csv(env, real, [mock])
            case_usage(env, real)
            planned = launch(env, "planned-run", "real", prediction=prediction_file(env))
            if planned:
                case_prediction(env, real, planned)
    print("FAILED: %d" % len(FAILURES) if FAILURES else "all passed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
