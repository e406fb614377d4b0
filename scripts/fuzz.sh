#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang, ASan and UBSan in build-fuzz/, and runs
# each for WB_FUZZ_SECONDS (default 30) over its seeds (tests/fuzz/corpus/<target>/ and the
# repo's own files that tests/fuzz/CMakeLists.txt names), two at a time. Exits 1 when a target
# finds a crash, a leak, a failed property or an input slower than WB_FUZZ_TIMEOUT s (default 10);
# the input is kept under build-fuzz/findings/ with the command that replays it. A found input
# belongs in tests/fuzz/corpus/<target>/ once fixed: the unit tests replay it on every build.
# WB_FUZZ_SEED fixes libFuzzer's random seed: scripts/test.sh (the README's test command, CI)
# runs with seed 1, so a run there explores the same inputs each time and a green suite stays
# green until the code changes; run this script by hand (a random seed, printed) to explore more.
# Usage: scripts/fuzz.sh [TARGET...]   (default: every target)
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
FUZZ_BUILD=${WB_FUZZ_BUILD_DIR:-$WB_ROOT/build-fuzz}
SECONDS_EACH=${WB_FUZZ_SECONDS:-30}
TIMEOUT=${WB_FUZZ_TIMEOUT:-10}
SEED=${WB_FUZZ_SEED:-0}  # 0: libFuzzer picks one (printed below)

wb_install_missing "${WB_FUZZ_PACKAGES[@]}"
if [ ! -f "$FUZZ_BUILD/CMakeCache.txt" ]; then
  echo "==> configuring $FUZZ_BUILD (clang, libFuzzer + ASan + UBSan)"
  # shellcheck disable=SC2086
  CC=clang CXX=clang++ cmake -S "$WB_ROOT" -B "$FUZZ_BUILD" -G Ninja -DWB_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo ${WB_CMAKE_ARGS:-} >/dev/null
fi
echo "==> building the fuzz targets in $FUZZ_BUILD"
cmake --build "$FUZZ_BUILD" -j "$(nproc)"

mapfile -t manifest < "$FUZZ_BUILD/fuzz-targets.txt"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for line in "${manifest[@]}"; do targets+=("${line%% *}"); done
fi
work="$FUZZ_BUILD/run"
findings="$FUZZ_BUILD/findings"
rm -rf "$work"
mkdir -p "$work" "$findings"

run_one() {  # target: copies its seeds into a fresh corpus (libFuzzer adds to it), fuzzes
  local target=$1 line seeds corpus
  for line in "${manifest[@]}"; do [ "${line%% *}" = "$target" ] && seeds=${line#* }; done
  if [ -z "${seeds:-}" ]; then echo "no fuzz target '$target' (tests/fuzz/CMakeLists.txt lists them)" >&2; return 2; fi
  corpus="$work/$target.corpus"
  mkdir -p "$corpus"
  # shellcheck disable=SC2086
  find $seeds -type f -exec cp -t "$corpus" {} + 2>/dev/null || true
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 TMPDIR="$work" \
    "$FUZZ_BUILD/bin/fuzz_$target" -max_total_time="$SECONDS_EACH" -timeout="$TIMEOUT" -rss_limit_mb=2048 \
    -print_final_stats=1 -seed="$SEED" -artifact_prefix="$findings/$target-" "$corpus" > "$work/$target.log" 2>&1
}

pids=() status=0
for target in "${targets[@]}"; do
  run_one "$target" & pids+=($!)
  if [ ${#pids[@]} -ge "$(nproc)" ]; then wait "${pids[0]}" || status=1; pids=("${pids[@]:1}"); fi
done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done

echo "==> fuzzing, ${SECONDS_EACH} s per target (ASan + UBSan)"
printf '    %-16s %12s %10s %8s %11s  %s\n' target executions exec/s corpus seed result
for target in "${targets[@]}"; do
  log="$work/$target.log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  corpus=$(find "$work/$target.corpus" -type f | wc -l)
  seed=$(sed -n 's/^INFO: Seed: *//p' "$log" | head -1)
  found=$(ls "$findings" 2>/dev/null | grep "^$target-" | head -1 || true)
  result=ok
  if [ -n "$found" ]; then
    result="FOUND $findings/$found (replay: $FUZZ_BUILD/bin/fuzz_$target $findings/$found; again: WB_FUZZ_SEED=${seed:-?} scripts/fuzz.sh $target)"
    status=1
    grep -m3 -E "ERROR: |fuzz check failed|runtime error|SUMMARY" "$log" | sed 's/^/        /'
  elif ! grep -q "^Done [0-9]* runs" "$log"; then
    result="FAILED (see $log)"
    status=1
  fi
  printf '    %-16s %12s %10s %8s %11s  %s\n' "$target" "${execs:-?}" "${rate:-?}" "$corpus" "${seed:-?}" "$result"
done
exit $status
