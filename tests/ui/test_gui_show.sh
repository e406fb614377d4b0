#!/usr/bin/env bash
# moe-workbench --show: each view (import: the Megatron-Bridge import dialog) opens and is screenshotted (offscreen), an unknown one is refused
# with exit 2 naming the choices. The compare view runs over a store with no runs (it says so in
# its banner; the screenshot still comes). Usage: test_gui_show.sh MOE_WORKBENCH
set -u
GUI=$1
DIR=$(mktemp -d /tmp/wb-gui-show.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
export QT_QPA_PLATFORM=offscreen HOME="$DIR/home" XDG_DATA_HOME="$DIR/data" XDG_CACHE_HOME="$DIR/cache"
fail=0
for view in hosts launch import compare; do
  out="$DIR/$view.png"
  if ! timeout 60 "$GUI" --db "$DIR/runs.sqlite" --show "$view" --screenshot "$out" --screenshot-after-ms 300 \
       --quit-after-screenshot >"$DIR/$view.log" 2>&1; then
    echo "FAILED: --show $view exited non-zero"; tail -5 "$DIR/$view.log"; fail=1
  elif [ ! -s "$out" ]; then
    echo "FAILED: --show $view wrote no screenshot"; tail -5 "$DIR/$view.log"; fail=1
  else
    echo "--show $view: screenshot $(stat -c %s "$out") bytes"
  fi
done
rc=0
timeout 60 "$GUI" --db "$DIR/runs.sqlite" --show bogus >"$DIR/bogus.log" 2>&1 || rc=$?
if [ "$rc" != 2 ] || ! grep -q "hosts, launch, import or compare" "$DIR/bogus.log"; then
  echo "FAILED: --show bogus: exit $rc"; cat "$DIR/bogus.log"; fail=1
fi
[ $fail = 0 ] && echo "test_gui_show: all checks passed"
exit $fail
