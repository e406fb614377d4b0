#!/usr/bin/env bash
# The .deb as a user installs it (issue 22): build it from this build tree (cpack), check it
# (lintian: no error; desktop-file-validate; appstreamcli validate), install it (dpkg -i), run the
# installed programs from a folder with no build tree — the CLI's version and a plan (the catalog
# found under /usr/share), the sample-set builder, a short moe-train run of the installed sample
# config, the GUI's version and an offscreen screenshot — then remove it (dpkg -r) and check that
# nothing of it is left and that the user's data (store, runs) lived outside the package's paths.
# It changes the machine's /usr, so it runs only as root with WB_TEST_INSTALL_PACKAGE=1 (.ci/run
# sets it) and only when no moe-workbench package is installed already; otherwise exit 77 (skip).
# Usage: package_e2e.sh BUILD_DIR
set -u
BUILD=$1
skip() { echo "skipped: $*"; exit 77; }
fail() { echo "FAILED: $*"; exit 1; }
[ "${WB_TEST_INSTALL_PACKAGE:-0}" = 1 ] || skip "installs into /usr: set WB_TEST_INSTALL_PACKAGE=1 (CI does)"
[ "$(id -u)" = 0 ] || skip "dpkg -i needs root"
if dpkg-query -W -f='${Status}' moe-workbench 2>/dev/null | grep -q "install ok installed"; then
  skip "a moe-workbench package is installed here already; not touching it"
fi
work=$(mktemp -d /tmp/wb-package.XXXXXX)
installed=0
cleanup() { [ $installed = 1 ] && dpkg -r moe-workbench >/dev/null 2>&1; rm -rf "$work"; }
trap cleanup EXIT

echo "==> cpack -G DEB"
(cd "$BUILD" && cpack -G DEB -B "$work/pkg" >"$work/cpack.log" 2>&1) || { tail -20 "$work/cpack.log"; fail "cpack"; }
deb=$(ls "$work"/pkg/moe-workbench_*_amd64.deb 2>/dev/null | head -1)
[ -n "$deb" ] || fail "cpack made no .deb"
echo "    $(basename "$deb"): $(stat -c %s "$deb") bytes"

if command -v lintian >/dev/null; then
  echo "==> lintian"
  lintian --tag-display-limit 0 "$deb" 2>&1 | grep -v "running with root privileges" | tee "$work/lintian.txt"
  grep -q "^E: " "$work/lintian.txt" && fail "lintian reports errors"
  echo "    lintian: $(grep -c '^W: ' "$work/lintian.txt") warning(s), no error"
fi
mkdir -p "$work/x" && dpkg-deb -x "$deb" "$work/x"
if command -v desktop-file-validate >/dev/null; then
  desktop-file-validate "$work/x/usr/share/applications/moe-workbench.desktop" || fail "desktop-file-validate"
  echo "    desktop-file-validate: ok"
fi
if command -v appstreamcli >/dev/null; then
  appstreamcli validate --no-net "$work"/x/usr/share/metainfo/*.metainfo.xml || fail "appstreamcli validate"
fi
for page in moe-workbench moe-workbench-cli moe-train moe-sample-set; do
  [ -s "$work/x/usr/share/man/man1/$page.1.gz" ] || fail "no man page for $page"
done

echo "==> dpkg -i"
dpkg -i "$deb" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg -i (are the Depends installed?)"; }
installed=1
dpkg -L moe-workbench | sort >"$work/files.txt"

# From a folder with no build tree, a fresh HOME: what a user runs.
mkdir -p "$work/user"
cd "$work/user" || fail "cd"
export HOME="$work/user/home" XDG_DATA_HOME="$work/user/data" XDG_CACHE_HOME="$work/user/cache" XDG_CONFIG_HOME="$work/user/config"
mkdir -p "$HOME"
/usr/bin/moe-workbench-cli --version | grep -q "^moe-workbench-cli [0-9]" || fail "moe-workbench-cli --version"
/usr/bin/moe-workbench-cli plan --model qwen3-vl-30b-a3b --hardware h200 --gpus 8 >plan.txt 2>&1 || { cat plan.txt; fail "plan"; }
grep -q "Recommendation" plan.txt || { head -20 plan.txt; fail "plan printed no recommendation"; }
echo "    plan: $(grep -m1 'Recommendation' plan.txt)"
/usr/bin/moe-sample-set --from /usr/share/openclipart/png --out samples --count 16 >/dev/null 2>&1 || fail "moe-sample-set"
[ -s samples/manifest.jsonl ] || fail "moe-sample-set wrote no manifest"
python3 - "$work/user" <<'PY' || fail "writing the short sample config"
import json, sys
c = json.load(open("/usr/share/moe-workbench/configs/sample-tiny.json"))
c["data"]["manifest"] = sys.argv[1] + "/samples/manifest.jsonl"
c["train"]["train_iters"] = 3
c["train"]["lr_warmup_iters"] = 1
json.dump(c, open(sys.argv[1] + "/short.json", "w"))
PY
timeout 300 /usr/bin/moe-train --config short.json --run-dir run >train.log 2>&1 || { tail -20 train.log; fail "moe-train"; }
steps=$(grep -c '"type":"step"' run/metrics.jsonl)
[ "$steps" = 3 ] || fail "moe-train wrote $steps steps, not 3"
echo "    moe-train: 3 steps of the installed sample config"
/usr/bin/moe-workbench --version | grep -q "^moe-workbench [0-9]" || fail "moe-workbench --version"
QT_QPA_PLATFORM=offscreen timeout 60 /usr/bin/moe-workbench --db "$work/user/runs.sqlite" --screenshot shot.png \
  --screenshot-after-ms 500 --quit-after-screenshot >gui.log 2>&1 || { tail -5 gui.log; fail "moe-workbench screenshot"; }
[ -s shot.png ] || fail "no screenshot"
echo "    moe-workbench: screenshot $(stat -c %s shot.png) bytes"
# The user's data is the user's: nothing the programs wrote is inside the package's paths.
grep -q "^$work" "$work/files.txt" && fail "the package lists a file under the user's folder"
if grep -q -E '^/(home|root|var/lib/moe|tmp)' "$work/files.txt"; then fail "the package installs into a user or data path"; fi

echo "==> dpkg -r"
dpkg -r moe-workbench >"$work/dpkg-r.log" 2>&1 || { cat "$work/dpkg-r.log"; fail "dpkg -r"; }
installed=0
left=0
while read -r f; do
  [ -f "$f" ] && { echo "    left behind: $f"; left=1; }
done <"$work/files.txt"
[ $left = 0 ] || fail "dpkg -r left files behind"
echo "package_e2e: all checks passed ($(grep -c . "$work/files.txt") paths installed and removed)"
