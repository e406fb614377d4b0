#!/bin/sh
# Stand-in for moe-train in the local-target and CLI tests: same command line and run-directory
# files (DESIGN.md §3.1-3.3), no training. FAKE_TRAIN_MODE picks the behaviour:
#   finish    write meta, FAKE_TRAIN_STEPS steps (default 3) and end; status finished; exit 0
#   graceful  write steps until SIGTERM, then status stopped; exit 5 (what moe-train does)
#   stubborn  start a grandchild that ignores SIGTERM, ignore SIGTERM itself, run forever
#   crash     write one step, then die without a status.json update (exit 1)
set -u
config= dir=
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --run-dir) dir=$2; shift 2 ;;
    --validate)  # the runtime's own checks; FAKE_VALIDATE_REJECT plays a config only it rejects
      [ -f "$2" ] || { echo "cannot read $2" >&2; exit 2; }
      if [ -n "${FAKE_VALIDATE_REJECT:-}" ]; then
        echo "model.decoder.vocab_size: 100 is below the byte tokenizer's 260 ids — fix: set vocab_size >= 260" >&2; exit 2
      fi
      exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -f "$config" ] || { echo "no config" >&2; exit 2; }
echo "stdin is $(readlink /proc/self/fd/0)"
echo "pid $$"
metrics="$dir/metrics.jsonl"
status() { # word exit_code(json) message step
  printf '{"status": "%s", "exit_code": %s, "message": "%s", "step": %s, "pid": %s, "updated": %s}\n' \
    "$1" "$2" "$3" "$4" "$$" "$(date +%s)" > "$dir/status.json.tmp" && mv "$dir/status.json.tmp" "$dir/status.json"
}
step() {
  printf '{"v":1,"type":"step","step":%s,"time":%s,"step_ms":12.5,"loss":%s,"tokens_per_s_per_gpu":1000,"mem_peak_gib":0.25}\n' \
    "$1" "$(date +%s)" "$((100 / $1)).25" >> "$metrics"
}
printf '{"v":1,"type":"meta","run_id":"fake","world_size":1,"device":"cpu","data_source":"mock"}\n' > "$metrics"
status running null "" 0
mode=${FAKE_TRAIN_MODE:-finish}
case "$mode" in
  finish)
    n=${FAKE_TRAIN_STEPS:-3}; i=1
    while [ $i -le $n ]; do
      step $i
      # FAKE_TRAIN_GPU=1: a GPU system sample after each step, as moe-train's NVML monitor writes.
      [ -n "${FAKE_TRAIN_GPU:-}" ] && printf '{"v":1,"type":"gpu","time":%s,"step":%s,"gpus":[{"index":0,"util_pct":97,"mem_used_gib":85.1,"mem_total_gib":139.8,"power_w":612,"temp_c":61,"sm_clock_mhz":1980},{"index":1,"util_pct":95,"mem_used_gib":84.0,"mem_total_gib":139.8,"power_w":null,"temp_c":64,"sm_clock_mhz":1755}]}\n' "$(date +%s)" "$i" >> "$metrics"
      i=$((i + 1))
    done
    printf '{"v":1,"type":"end","status":"finished","exit_code":0,"step":%s}\n' "$n" >> "$metrics"
    status finished 0 "done" "$n"; exit 0 ;;
  graceful)
    trap 'printf "{\"v\":1,\"type\":\"event\",\"level\":\"info\",\"msg\":\"checkpoint saved\"}\n" >> "$metrics"; status stopped 5 "stopped by signal" 1; exit 5' TERM
    step 1
    while :; do sleep 0.05; done ;;
  stubborn)
    sh -c 'trap "" TERM; echo $$ > "$0/grandchild.pid"; while :; do sleep 0.05; done' "$dir" &
    trap '' TERM
    step 1
    while :; do sleep 0.05; done ;;
  crash)
    step 1; exit 1 ;;
esac
