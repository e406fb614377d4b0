#!/usr/bin/env bash
# Set up (install missing packages, build) and start the workbench on its embedded default:
# the local target, the sample set built from Debian's openclipart-png, and its own SQLite store
# under ~/.local/share/moe-workbench. Extra arguments go to moe-workbench.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
wb_install_missing
wb_build

data=${XDG_DATA_HOME:-$HOME/.local/share}/moe-workbench
if [ ! -f "$data/samples/openclipart/manifest.jsonl" ]; then
  echo "==> building the sample set (real PNG/JPEG images) in $data/samples/openclipart"
  "$WB_BUILD/bin/moe-sample-set" --from /usr/share/openclipart/png --out "$data/samples/openclipart" --count 2000
fi

if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  echo "No display found (DISPLAY and WAYLAND_DISPLAY are unset)." >&2
  echo "Run this from a desktop session, or under a virtual display: xvfb-run -a $0 $*" >&2
  exit 2
fi
echo "==> starting moe-workbench"
exec "$WB_BUILD/bin/moe-workbench" --start-sample "$@"
