#!/usr/bin/env python3
"""End-to-end tests of moe-workbench-cli: launch, watch, runs, show, cancel, against a real child.

usage: cli_e2e.py --cli PATH --trainer PATH [--sample-set PATH] [--real]

--trainer is moe-train (with --real: a tiny real training run on a sample set built by
moe-sample-set) or tests/remote/fake_moe_train.sh (same command line and run-directory files; it
exercises the CLI and store without LibTorch). Every case runs in its own temp HOME / XDG dirs and
passes --db explicitly. Exit 0 = pass, 77 = skipped (ctest SKIP_RETURN_CODE), 1 = fail.
"""
import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

FAILURES = []


def check(condition, what):
    if not condition:
        FAILURES.append(what)
        print("FAIL:", what, flush=True)
    return condition


class Env:
    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp
        self.db = os.path.join(tmp, "store", "runs.sqlite")
        self.runs_root = os.path.join(tmp, "runs")
        self.env = dict(os.environ)
        self.env.update({
            "HOME": os.path.join(tmp, "home"),
            "XDG_DATA_HOME": os.path.join(tmp, "xdg-data"),
            "XDG_CACHE_HOME": os.path.join(tmp, "xdg-cache"),
        })
        os.makedirs(self.env["HOME"], exist_ok=True)

    def cli(self, *argv, timeout=300, db=None):
        cmd = [self.args.cli, "--db", db or self.db, "--runs-root", self.runs_root,
               "--moe-train", self.args.trainer, *argv]
        p = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout)
        print("$", " ".join(argv), "->", p.returncode, flush=True)
        if p.returncode != 0 or os.environ.get("E2E_VERBOSE"):
            sys.stdout.write(p.stdout[-3000:])
            sys.stdout.write(p.stderr[-3000:])
        return p


def tiny_config(env, manifest=None, steps=6):
    data = {"source": "mock", "mock_image_size": 32, "caption_max_tokens": 32}
    if manifest:
        data = {"source": "real", "manifest": manifest, "min_pixels": 32 * 32, "max_pixels": 64 * 64, "caption_max_tokens": 32}
    config = {
        "name": "e2e-tiny",
        "model": {
            "vision": {"num_layers": 1, "hidden_size": 32, "ffn_hidden_size": 64,
                       "num_attention_heads": 2, "patch_size": 16, "spatial_merge_size": 2},
            "decoder": {"num_layers": 1, "hidden_size": 32, "num_attention_heads": 2,
                        "num_query_groups": 1, "kv_channels": 16, "num_moe_experts": 4,
                        "moe_router_topk": 2, "moe_ffn_hidden_size": 32, "vocab_size": 320},
        },
        "train": {"train_iters": steps, "micro_batch_size": 2, "global_batch_size": 2,
                  "seq_length": 128, "lr_warmup_iters": 1},
        "data": data,
    }
    path = os.path.join(env.tmp, "tiny.json")
    with open(path, "w") as f:
        json.dump(config, f, indent=2)
    return path


def metrics_steps(run_dir):
    steps = []
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return steps
    with open(path, "rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                continue  # torn last line: not a step yet
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            if rec.get("type") == "step":
                steps.append(rec)
    return steps


def case_launch_watch(env, manifest):
    config = tiny_config(env, manifest)
    p = env.cli("launch", "--target", "local", "--config", config, "--name", "e2e")
    if not check(p.returncode == 0, "launch exits 0"):
        return
    run_id = p.stdout.strip()
    check(len(run_id.splitlines()) == 1 and len(run_id) == 20, "launch prints the run id alone")
    w = env.cli("watch", run_id, "--interval-ms", "100", timeout=600)
    check(w.returncode == 0, "watch exits 0 for a finished run")
    step_lines = [l for l in w.stdout.splitlines() if l.startswith("step ")]
    run_dir = os.path.join(env.runs_root, run_id)
    file_steps = metrics_steps(run_dir)
    check(len(file_steps) > 0, "metrics.jsonl has steps")
    check(len(step_lines) == len(file_steps), "watch printed one line per step (%d vs %d)"
          % (len(step_lines), len(file_steps)))
    # The store holds exactly the file's steps: same numbers, same values.
    con = sqlite3.connect(env.db)
    rows = con.execute("SELECT step, loss, step_ms, tokens_per_s_per_gpu, mem_peak_gib FROM steps "
                       "WHERE run_id = ? ORDER BY step", (run_id,)).fetchall()
    want = [(s["step"], s.get("loss"), s.get("step_ms"), s.get("tokens_per_s_per_gpu"),
             s.get("mem_peak_gib")) for s in file_steps]
    check(rows == want, "store steps equal metrics.jsonl step lines\n  store %r\n  file  %r"
          % (rows[:3], want[:3]))
    offset, size = con.execute("SELECT stream_offset, 0 FROM runs WHERE id = ?", (run_id,)).fetchone()
    check(offset == os.path.getsize(os.path.join(run_dir, "metrics.jsonl")),
          "stream offset is at the end of metrics.jsonl")
    con.close()
    r = env.cli("runs", "--json")
    runs = json.loads(r.stdout) if r.returncode == 0 else []
    mine = [x for x in runs if x["id"] == run_id]
    check(len(mine) == 1 and mine[0]["status"] == "finished" and mine[0]["exit_code"] == 0
          and mine[0]["steps"] == len(file_steps), "runs --json shows the run finished: %r" % mine)
    table = env.cli("runs")
    check(run_id in table.stdout and "finished" in table.stdout, "runs table lists the run")
    # A unique prefix works; ids made in the same second share digits, so take one no other run has.
    others = [x["id"] for x in runs if x["id"] != run_id]
    prefix = next((run_id[:n] for n in range(17, len(run_id) + 1)
                   if not any(o.startswith(run_id[:n]) for o in others)), run_id)
    s = env.cli("show", prefix, "--json")
    shown = json.loads(s.stdout) if s.returncode == 0 else {}
    check(shown.get("id") == run_id and shown.get("meta") is not None
          and shown.get("last_step", {}).get("step") == file_steps[-1]["step"],
          "show --json has meta and the last step")
    # A second watch of a finished run prints the stored steps and ends at once.
    again = env.cli("watch", run_id)
    check(again.returncode == 0 and
          len([l for l in again.stdout.splitlines() if l.startswith("step ")]) == len(file_steps),
          "re-watching a finished run replays the stored steps")


def case_bad_config(env):
    bad = os.path.join(env.tmp, "bad.json")
    with open(bad, "w") as f:
        f.write('{"train": {"micro_batch_size": -1, "no_such_key": 1}, "model": {"decoder": {"num_moe_experts": 0}}}')
    before = set(os.listdir(env.runs_root)) if os.path.isdir(env.runs_root) else set()
    p = env.cli("launch", "--target", "local", "--config", bad)
    check(p.returncode == 2, "malformed config exits 2")
    check("micro_batch_size" in p.stderr and "no_such_key" in p.stderr,
          "every problem of the config is printed")
    check(p.stdout == "", "nothing on stdout for a refused launch")
    after = set(os.listdir(env.runs_root)) if os.path.isdir(env.runs_root) else set()
    check(before == after, "no run directory created for a malformed config")
    missing = env.cli("launch", "--config", os.path.join(env.tmp, "nope.json"))
    check(missing.returncode == 2, "missing config file exits 2")
    usage = env.cli("launch")
    check(usage.returncode == 2 and "--config" in usage.stderr, "launch without --config exits 2")
    unknown = env.cli("frobnicate")
    check(unknown.returncode == 2, "unknown command exits 2")


def case_runtime_rejects(env):
    """A config core accepts but the runtime does not (vocab below the byte tokenizer's ids) is
    refused before anything exists: exit 2, the runtime's message, no run directory, no store row."""
    path = tiny_config(env)
    with open(path) as f:
        config = json.load(f)
    config["model"]["decoder"]["vocab_size"] = 100
    with open(path, "w") as f:
        json.dump(config, f)
    env.env["FAKE_VALIDATE_REJECT"] = "1"  # read only by the stand-in trainer
    before_dirs = set(os.listdir(env.runs_root)) if os.path.isdir(env.runs_root) else set()
    before_runs = env.cli("runs", "--json")
    p = env.cli("launch", "--target", "local", "--config", path)
    del env.env["FAKE_VALIDATE_REJECT"]
    check(p.returncode == 2, "a config the runtime rejects exits 2")
    check("vocab_size" in p.stderr, "the runtime's problem is shown")
    check("moe-workbench-validate" not in p.stderr, "the message does not name the private temp file: %r" % p.stderr)
    after_dirs = set(os.listdir(env.runs_root)) if os.path.isdir(env.runs_root) else set()
    check(before_dirs == after_dirs, "no run directory for a config the runtime rejects")
    check(env.cli("runs", "--json").stdout == before_runs.stdout, "no store row for a config the runtime rejects")


def case_refused_stores(env):
    # A store from a newer workbench: exit 1, clear message, file untouched.
    newer = os.path.join(env.tmp, "newer.sqlite")
    con = sqlite3.connect(newer)
    con.execute("CREATE TABLE x(y)")
    con.execute("PRAGMA user_version = 9")
    con.commit()
    con.close()
    before = open(newer, "rb").read()
    p = env.cli("runs", db=newer)
    check(p.returncode == 1 and "version 9" in p.stderr and "--db" in p.stderr,
          "newer store refused with exit 1 and a message naming the fix")
    check(open(newer, "rb").read() == before, "newer store byte-identical")
    # A store locked by another writer.
    env.cli("runs")  # make sure the normal store exists
    holder = sqlite3.connect(env.db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    p = env.cli("launch", "--config", tiny_config(env))
    check(p.returncode == 1 and "locked" in p.stderr, "locked store refused with exit 1")
    holder.execute("ROLLBACK")
    holder.close()
    case_read_only_store(env)
    case_damaged_store(env)


def case_damaged_store(env):
    """A store whose steps table is damaged accepted `launch` (issue 20 item 10): launch checks
    the store first and refuses it (exit 1, "damaged", how to recover), writing nothing."""
    store = os.path.join(env.tmp, "damaged.sqlite")
    p = env.cli("launch", "--config", tiny_config(env, steps=3), "--name", "before-damage", db=store)
    if not check(p.returncode == 0, "launch a run into the store to damage: %r" % p.stderr[-300:]):
        return
    env.cli("watch", p.stdout.strip(), "--interval-ms", "100", db=store)
    con = sqlite3.connect(store)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = con.execute("PRAGMA page_size").fetchone()[0]
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = 'steps'").fetchone()[0]
    con.close()
    with open(store, "r+b") as f:  # the steps table's root page: garbage, as a bad sector leaves it
        f.seek((root - 1) * page_size)
        f.write(bytes([0xA5]) * page_size)
    before = open(store, "rb").read()
    p = env.cli("launch", "--config", tiny_config(env, steps=3), "--name", "into-damage", db=store)
    check(p.returncode == 1 and "run store is damaged" in p.stderr and ".recover" in p.stderr,
          "a damaged store is refused at launch: rc %d %r" % (p.returncode, p.stderr[-400:]))
    check(open(store, "rb").read() == before, "the damaged store was left as it was")


def case_read_only_store(env):
    """A store this user cannot write (issue 20 item 5): `watch` retried its writes forever; now
    every command says so at once (exit 1, naming the file and the permission) and leaves the
    file as it was. As root a mode does not stop writes, so the commands run as nobody there."""
    p = env.cli("launch", "--config", tiny_config(env, steps=2), "--name", "for-read-only")
    if not check(p.returncode == 0, "launch a run to watch from a read-only store"):
        return
    run_id = p.stdout.strip()
    env.cli("watch", run_id, "--interval-ms", "100")
    shared = tempfile.mkdtemp(prefix="wb-ro-")
    os.chmod(shared, 0o755)
    try:
        store = os.path.join(shared, "runs.sqlite")
        shutil.copy(env.db, store)
        for suffix in ("-wal", "-shm"):
            if os.path.exists(env.db + suffix):
                shutil.copy(env.db + suffix, store + suffix)
        prefix = []
        if os.geteuid() == 0:
            if not shutil.which("setpriv"):
                print("SKIP read-only store: root without setpriv", flush=True)
                return
            prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        else:
            os.chmod(store, 0o444)
            os.chmod(shared, 0o555)
        before = open(store, "rb").read()
        for argv in (["watch", run_id], ["runs"]):
            cmd = prefix + [env.args.cli, "--db", store, "--runs-root", env.runs_root, *argv]
            started = time.time()
            try:
                q = subprocess.run(cmd, env=dict(env.env, HOME=shared), capture_output=True, text=True, timeout=60)
            except subprocess.TimeoutExpired:
                check(False, "%s on a read-only store ends (it hung for 60 s)" % argv[0])
                continue
            print("$", " ".join(argv), "(read-only store) ->", q.returncode, flush=True)
            check(q.returncode == 1 and "cannot be written by this user" in q.stderr and store in q.stderr
                  and "Permission denied" in q.stderr,
                  "%s on a read-only store: exit 1 naming the file and the permission: rc %d %r"
                  % (argv[0], q.returncode, q.stderr))
            check(time.time() - started < 20, "%s on a read-only store fails at once" % argv[0])
        check(open(store, "rb").read() == before, "the read-only store is left as it was")
    finally:
        os.chmod(shared, 0o755)
        shutil.rmtree(shared, ignore_errors=True)


def case_cancel(env):
    if "fake_moe_train" not in env.args.trainer:
        config = tiny_config(env, steps=100000)  # real trainer: long enough to cancel mid-run
    else:
        config = tiny_config(env)
        env.env["FAKE_TRAIN_MODE"] = "graceful"
    p = env.cli("launch", "--config", config, "--name", "to-cancel")
    env.env.pop("FAKE_TRAIN_MODE", None)
    if not check(p.returncode == 0, "launch for cancel"):
        return
    run_id = p.stdout.strip()
    run_dir = os.path.join(env.runs_root, run_id)
    deadline = time.time() + 120
    while time.time() < deadline and not metrics_steps(run_dir):
        time.sleep(0.1)
    pgid = int(open(os.path.join(run_dir, "pid")).read())
    c = env.cli("cancel", run_id, "--grace-s", "60")
    check(c.returncode == 0, "cancel exits 0")
    alive = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            fields = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(pid)
    check(not alive, "nothing of the run's process group is alive after cancel: %r" % alive)
    r = json.loads(env.cli("runs", "--json").stdout)
    mine = [x for x in r if x["id"] == run_id]
    check(mine and mine[0]["status"] == "cancelled", "runs shows the run cancelled: %r" % mine)
    # A run that is over keeps its state (issue 20 item 9): cancelling it again, or cancelling a
    # run that finished or crashed, is exit 2 saying so, and the store's state and exit code stay.
    ended = [(run_id, mine[0]["status"] if mine else "cancelled")]
    for mode, state in (("finish", "finished"), ("crash", "failed")):
        if "fake_moe_train" not in env.args.trainer:
            break  # the fake trainer's modes make these two ends; the real one is covered above
        env.env["FAKE_TRAIN_MODE"] = mode
        p = env.cli("launch", "--config", tiny_config(env), "--name", "ended-" + mode)
        env.env.pop("FAKE_TRAIN_MODE", None)
        if not check(p.returncode == 0, "launch a run that ends: " + mode):
            continue
        env.cli("watch", p.stdout.strip())
        ended.append((p.stdout.strip(), state))
    for rid, state in ended:
        before = [x for x in json.loads(env.cli("runs", "--json").stdout) if x["id"] == rid]
        c = env.cli("cancel", rid, "--grace-s", "1")
        check(c.returncode == 2 and "already ended" in c.stderr and state in c.stderr,
              "cancel of a %s run is refused: rc %d %s" % (state, c.returncode, c.stderr))
        after = [x for x in json.loads(env.cli("runs", "--json").stdout) if x["id"] == rid]
        check(before and after and after[0]["status"] == state and after[0].get("exit_code") == before[0].get("exit_code"),
              "a %s run keeps its state and exit code after cancel: %r -> %r" % (state, before, after))


def case_hostile_names(env):
    """Run names are anyone's text (issue 20 item 12): `runs` and `watch` print control characters
    as visible escapes (a newline cannot forge a row, ESC/BEL do not reach the terminal); an
    option's value is taken before help (`--name --help` names the run); COMMAND --help is the
    command's synopsis, exit 0."""
    name = "evil\nfake-row 1 finished\x1b[31m\x07"
    p = env.cli("launch", "--config", tiny_config(env, steps=2), "--name", name)
    if not check(p.returncode == 0, "launch with a hostile --name exits 0: %s" % p.stderr):
        return
    run_id = p.stdout.strip()
    w = env.cli("watch", run_id, "--interval-ms", "100", timeout=600)
    table = env.cli("runs")
    shown = env.cli("show", run_id)
    for what, out in (("runs", table.stdout), ("watch", w.stdout), ("show", shown.stdout)):
        check("\x1b" not in out and "\x07" not in out, "%s prints no raw ESC or BEL" % what)
    for what, out in (("watch", w.stdout), ("show", shown.stdout)):  # `runs` cuts the name at 20 columns
        check("evil\\nfake-row 1 finished\\e[31m\\x07" in out, "%s shows the name's escapes: %r" % (what, out[:300]))
    rows = [l for l in table.stdout.splitlines() if "fake-row" in l]
    check(len(rows) == 1 and rows[0].startswith(run_id) and "evil\\nfake-row" in rows[0],
          "runs keeps the name on its run's row: %r" % rows)
    p = env.cli("launch", "--config", tiny_config(env, steps=1), "--name", "--help")
    check(p.returncode == 0 and len(p.stdout.strip()) == 20, "--name --help names a run: rc %d %r" % (p.returncode, p.stdout))
    if p.returncode == 0:
        env.cli("watch", p.stdout.strip(), "--interval-ms", "100", timeout=600)
        shown = env.cli("show", p.stdout.strip(), "--json")
        check(shown.returncode == 0 and json.loads(shown.stdout).get("name") == "--help", "its name is --help")
    h = env.cli("launch", "--help")
    check(h.returncode == 0 and h.stdout.startswith("usage: moe-workbench-cli launch"), "launch --help: %r" % h.stdout[:80])
    check("ssh:HOST1,HOST2" in h.stdout and "slurm:HOST" in h.stdout and "--steps" in h.stdout,
          "launch --help names every target form and --steps: %r" % h.stdout)
    v = env.cli("--version")
    check(v.returncode == 0 and v.stdout.startswith("moe-workbench-cli "), "--version: %r" % v.stdout)
    # --steps N: a quick try of a config, N steps instead of its train_iters (issue 18 item 12).
    p = env.cli("launch", "--config", tiny_config(env, steps=50), "--name", "quick-try", "--steps", "3")
    if check(p.returncode == 0, "launch --steps 3"):
        w = env.cli("watch", p.stdout.strip(), "--interval-ms", "100")
        check(w.returncode == 0 and "finished" in w.stdout, "the quick try finished: %r" % w.stdout[-200:])
        shown = env.cli("show", p.stdout.strip(), "--json")
        info = json.loads(shown.stdout) if shown.returncode == 0 else {}
        check(info.get("steps") == 3 and info.get("status") == "finished",
              "--steps 3 trained 3 steps: %r" % {k: info.get(k) for k in ("steps", "status")})
    bad = env.cli("launch", "--config", tiny_config(env), "--steps", "0")
    check(bad.returncode == 2 and "--steps needs a whole number from 1 to" in bad.stderr, "--steps 0: %r" % bad.stderr)


def case_resume_after_cancel(env):
    """A run cancelled, then resumed by hand with `moe-train --resume` in its run directory
    (issue 20 item 6): `watch` follows it to its new end, whether it starts while the resumed run
    trains or after it finished; the store says finished (not the cancel's exit 5) and holds every
    step once. Real trainer only (the fake one has no checkpoints)."""
    if "fake_moe_train" in env.args.trainer:
        return
    steps = 400
    for watch_while_running in (True, False):
        p = env.cli("launch", "--config", tiny_config(env, steps=steps), "--name", "to-resume")
        if not check(p.returncode == 0, "launch a run to cancel and resume"):
            return
        run_id = p.stdout.strip()
        run_dir = os.path.join(env.runs_root, run_id)
        deadline = time.time() + 120
        while time.time() < deadline and len(metrics_steps(run_dir)) < 2:
            time.sleep(0.05)
        c = env.cli("cancel", run_id, "--grace-s", "60")
        if not check(c.returncode == 0, "cancel before the resume"):
            return
        stopped_at = len(metrics_steps(run_dir))
        check(0 < stopped_at < steps, "the cancel stopped the run mid-way (%d of %d steps)" % (stopped_at, steps))
        # Started by hand from this process, as from a shell: DIR/pid gets this process's group,
        # which outlives the trainer (watch never ended). Bounded waits: a hang fails the case.
        resume = subprocess.Popen([env.args.trainer, "--config", os.path.join(run_dir, "run.json"),
                                   "--run-dir", run_dir, "--resume"], env=env.env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            if watch_while_running:
                # "While it trains": once the resumed trainer wrote a step past the cancel's.
                deadline = time.time() + 120
                while time.time() < deadline and resume.poll() is None and len(metrics_steps(run_dir)) <= stopped_at:
                    time.sleep(0.05)
            else:
                resume.wait(timeout=300)
            w = env.cli("watch", run_id, "--interval-ms", "100", timeout=300)
            resume.wait(timeout=300)
        except subprocess.TimeoutExpired as e:
            resume.kill()
            resume.wait()
            check(False, "resume after cancel: %s timed out after %s s" % (e.cmd if isinstance(e.cmd, str) else e.cmd[-2:], e.timeout))
            return
        how = "watch while the resumed run trains" if watch_while_running else "watch after it finished"
        check(w.returncode == 0 and "finished (exit 0)" in w.stdout,
              "%s: exit 0, finished: rc %d %r" % (how, w.returncode, w.stdout[-300:]))
        shown = env.cli("show", run_id, "--json")
        info = json.loads(shown.stdout) if shown.returncode == 0 else {}
        con = sqlite3.connect(env.db)
        stored = [r[0] for r in con.execute("SELECT step FROM steps WHERE run_id = ? ORDER BY step", (run_id,))]
        con.close()
        check(info.get("status") == "finished" and info.get("exit_code") == 0,
              "%s: the store says finished (exit 0): %r" % (how, {k: info.get(k) for k in ("status", "exit_code")}))
        check(stored == list(range(1, steps + 1)), "%s: every step stored once (%d rows, %d distinct)"
              % (how, len(stored), len(set(stored))))


def case_plan_calibrated_by_one_run(env):
    """`plan --calibrate-run RUN` (issue 15 item 4): one stored moe-train run with a time split
    calibrates each group of terms of every ranked layout; the plan says the factors and the run,
    its JSON carries them, and a config generated from it predicts with them beside the model's
    own step. Real trainer only (the fake one writes no time split)."""
    if "fake_moe_train" in env.args.trainer:
        return
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    config = json.load(open(os.path.join(root, "resources", "configs", "sample-tiny.json")))
    # Enough steps for a steady state of 10 even on a loaded 2-core machine (30 were not, once).
    config["train"].update({"train_iters": 150, "lr_warmup_iters": 2})
    config["data"] = {"source": "mock", "mock_image_size": 64, "caption_max_tokens": 32}
    cfg = os.path.join(env.tmp, "calibrate-tiny.json")
    json.dump(config, open(cfg, "w"))
    out = os.path.join(env.tmp, "calibrate-gen")
    g = env.cli("generate", "--from", cfg, "--format", "runtime", "--hardware", "h200", "--gpus", "1",
                "--model", "sample-tiny", "--out", out)
    if not check(g.returncode == 0, "generate a predicted config to calibrate from: %r" % g.stderr[-300:]):
        return
    request = ["plan", "--model", "sample-tiny", "--hardware", "h200", "--gpus", "1", "--seq", "256", "--gbs", "4",
               "--image-size", "64x64",
               "--max-results", "3", "--for", "moe-train", "--json"]
    # The run's CPU step times swing with whatever else the machine runs (the other tests under
    # ctest -j2): a run that never settled within the steady-state band is the store's correct
    # refusal, not the case under test, so up to three runs are tried for one that settled.
    for attempt in range(3):
        p = env.cli("launch", "--config", os.path.join(out, "run.json"), "--name", "calibration-run")
        if not check(p.returncode == 0, "launch the run to calibrate from"):
            return
        run_id = p.stdout.strip()
        env.cli("watch", run_id, "--interval-ms", "100")
        cal = env.cli(*request, "--calibrate-run", run_id)
        if not (cal.returncode == 2 and "no steady state" in cal.stderr):
            break
        print("note: calibration run %d did not settle (%s); another run" % (attempt + 1, cal.stderr.strip()[-120:]))
    plain = env.cli(*request)
    if not check(plain.returncode == 0 and cal.returncode == 0, "plan with and without --calibrate-run: %r" % cal.stderr[-300:]):
        return
    plain_plan, cal_plan = json.loads(plain.stdout), json.loads(cal.stdout)
    terms = cal_plan.get("term_calibration") or {}
    check(plain_plan["term_calibration"] is None and terms.get("run") == "run " + run_id
          and all(terms.get(k, 0) > 0 for k in ("compute", "vision", "optimizer")),
          "the plan carries the per-term factors and their run: %r" % terms)
    by_layout = {l["describe"]: l["step_ms"] for l in plain_plan["layouts"]}
    first = cal_plan["layouts"][0] if cal_plan["layouts"] else {}
    check(first.get("describe") in by_layout and abs(first["step_ms"] - by_layout[first["describe"]]) > 1e-3,
          "a calibrated row's step differs from the model's own: %r" % first.get("step_ms"))
    text = env.cli(*[a for a in request if a != "--json"], "--calibrate-run", run_id)
    check(text.returncode == 0 and "Calibration per term: compute ×" in text.stdout and run_id in text.stdout,
          "the table says it is calibrated per term, from which run: %r" % text.stdout[:300])
    plan_file = os.path.join(env.tmp, "calibrated-plan.json")
    open(plan_file, "w").write(cal.stdout)
    out2 = os.path.join(env.tmp, "calibrated-gen")
    g = env.cli("generate", "--from", plan_file, "--format", "runtime", "--out", out2)
    prediction = json.load(open(os.path.join(out2, "prediction.json"))) if g.returncode == 0 else {}
    check(prediction.get("calibration", "").startswith("compute ×")
          and abs(prediction.get("step_ms", 0) - first.get("step_ms", -1)) < 1e-2 * max(1.0, first.get("step_ms", 0))
          and abs(prediction["detail"]["uncalibrated_step_ms"] - by_layout.get(first.get("describe"), -1)) < 1e-2 * max(1.0, prediction["detail"]["uncalibrated_step_ms"]),
          "prediction.json from the calibrated plan: calibrated step, the model's own beside it: %r"
          % {k: prediction.get(k) for k in ("calibration", "step_ms")})
    # A Megatron-Bridge plan is not calibrated by a moe-train run: refused, naming both.
    bridge = env.cli(*[a for a in request if a not in ("--for", "moe-train")], "--calibrate-run", run_id)
    check(bridge.returncode == 2 and "was predicted for moe-train, and this prediction is for megatron-bridge" in bridge.stderr,
          "a Bridge plan refuses a moe-train run's calibration: %r" % bridge.stderr[-300:])
    both = env.cli(*request, "--calibrate", "--calibrate-run", run_id)
    check(both.returncode == 2 and "give one" in both.stderr, "--calibrate with --calibrate-run: %r" % both.stderr[-200:])


def case_runs_catch_up_and_manage(env):
    """Issue 18 items 1 and 8: a launched run nobody watches is shown as it is by `runs` and `show`
    (caught up from its run directory), then renamed and deleted with its files."""
    config = tiny_config(env, steps=8)
    p = env.cli("launch", "--target", "local", "--config", config, "--name", "unwatched")
    if not check(p.returncode == 0, "launch of the unwatched run exits 0"):
        return
    run_id = p.stdout.strip()
    run_dir = os.path.join(env.runs_root, run_id)
    mine = []
    deadline = time.time() + 240
    while time.time() < deadline:
        r = env.cli("runs", "--json")
        mine = [x for x in json.loads(r.stdout) if x["id"] == run_id] if r.returncode == 0 else []
        if mine and mine[0]["status"] != "running":
            break
        time.sleep(1)
    file_steps = metrics_steps(run_dir)
    check(mine and mine[0]["status"] == "finished" and mine[0]["steps"] == len(file_steps) > 0,
          "runs alone (no watch) shows the unwatched run finished with every step of its file: %r" % mine)
    check(mine and mine[0]["synced_at"] is not None, "runs --json says when the run was synced: %r" % mine)
    s = env.cli("show", run_id)
    last = file_steps[-1]["step"] if file_steps else -1
    check(s.returncode == 0 and "finished" in s.stdout and ("last step %d:" % last) in s.stdout,
          "show has the caught-up run")
    r = env.cli("runs", "rename", run_id, "renamed-run")
    check(r.returncode == 0, "runs rename exits 0")
    shown = json.loads(env.cli("show", run_id, "--json").stdout)
    check(shown.get("name") == "renamed-run", "the new name is stored: %r" % shown.get("name"))
    bad = env.cli("runs", "delete", "no-such-run")
    check(bad.returncode == 2 and "no run has this id" in bad.stderr, "deleting an unknown run is exit 2")
    d = env.cli("runs", "delete", run_id, "--files")
    check(d.returncode == 0 and "run directory" in d.stderr, "runs delete --files exits 0 and says what it removed")
    check(not os.path.exists(run_dir), "the run directory is gone")
    left = [x for x in json.loads(env.cli("runs", "--json").stdout) if x["id"] == run_id]
    check(not left, "the run is gone from the store")
    # A live run is refused (moe-train only: the fake trainer ends at once).
    if not env.args.real:
        return
    long_config = tiny_config(env, steps=100000)
    p = env.cli("launch", "--target", "local", "--config", long_config, "--name", "live")
    if check(p.returncode == 0, "launch of a long run"):
        live_id = p.stdout.strip()
        d = env.cli("runs", "delete", live_id)
        check(d.returncode == 2 and "Cancel it first" in d.stderr, "deleting a live run is refused: %r" % d.stderr)
        env.cli("cancel", live_id)


def case_gpu_samples(env):
    """Issue 18 item 10: "gpu" records (the fake trainer writes them as moe-train's NVML monitor
    does) reach the store; show prints the newest sample per GPU, --json carries it."""
    env.env["FAKE_TRAIN_GPU"] = "1"
    try:
        p = env.cli("launch", "--target", "local", "--config", tiny_config(env), "--name", "gpu")
        if not check(p.returncode == 0, "launch of the GPU-sampled run"):
            return
        run_id = p.stdout.strip()
        env.cli("watch", run_id, "--interval-ms", "100")
        s = env.cli("show", run_id)
        check(s.returncode == 0 and "gpu 0     97 % busy · 85.1/139.8 GiB · 612 W · 61 °C · SM 1980 MHz" in s.stdout
              and "gpu 1     95 % busy · 84.0/139.8 GiB · ? W · 64 °C · SM 1755 MHz" in s.stdout,
              "show prints the newest GPU sample per GPU:\n" + s.stdout[-600:])
        shown = json.loads(env.cli("show", run_id, "--json").stdout)
        check(shown.get("gpu_samples", 0) >= 1 and shown["last_gpu"]["gpus"][1]["power_w"] is None,
              "show --json: gpu_samples and last_gpu (a missing sensor is null): %r" % shown.get("last_gpu"))
        check(shown.get("malformed_lines") == 0, "gpu records are not malformed lines")
    finally:
        env.env.pop("FAKE_TRAIN_GPU", None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--trainer", required=True)
    ap.add_argument("--sample-set")
    ap.add_argument("--real", action="store_true")
    args = ap.parse_args()
    if not os.access(args.trainer, os.X_OK):
        print("skip: no trainer at", args.trainer)
        return 77
    with tempfile.TemporaryDirectory(prefix="wb-e2e-") as tmp:
        env = Env(args, tmp)
        manifest = None
        if args.real:
            if not args.sample_set or not os.access(args.sample_set, os.X_OK):
                print("skip: moe-sample-set not built")
                return 77
            out = os.path.join(tmp, "samples")
            subprocess.run([args.sample_set, "--from", "/usr/share/openclipart/png", "--out", out,
                            "--count", "64"], check=True, capture_output=True)
            manifest = os.path.join(out, "manifest.jsonl")
        case_bad_config(env)
        case_runtime_rejects(env)
        case_launch_watch(env, manifest)
        case_runs_catch_up_and_manage(env)
        if not args.real:
            case_gpu_samples(env)
        case_refused_stores(env)
        case_cancel(env)
        case_hostile_names(env)
        case_resume_after_cancel(env)
        case_plan_calibrated_by_one_run(env)
    print("FAILED: %d" % len(FAILURES) if FAILURES else "all passed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
