#!/bin/sh
# Every user-visible string of the GUI has its Simplified Chinese (issue 18 item 11): lupdate reads
# ui/ and app/gui/ into a copy of resources/translations/moe_workbench_zh_CN.ts; a string that is
# new (never translated) or whose English changed comes out "unfinished", and this test names it.
# usage: translations_complete.sh LUPDATE SOURCE_DIR      (ctest: zh_cn_translations_complete)
set -eu
lupdate=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$src/resources/translations/moe_workbench_zh_CN.ts" "$tmp/zh.ts"
cd "$src"
# The refresh command of docs/user-guide.md ("Languages"), on the copy.
"$lupdate" -no-obsolete -locations relative -I . ui/*.h ui/*.cpp app/gui/main.cpp -ts "$tmp/zh.ts" >"$tmp/log" 2>&1 || {
  cat "$tmp/log"; exit 1; }
missing=$(grep -c 'type="unfinished"' "$tmp/zh.ts" || true)
if [ "$missing" -ne 0 ]; then
  echo "FAIL: $missing string(s) of the GUI have no Chinese translation (or their English changed):"
  # The source of each unfinished message: the <source> line before it.
  awk '/<name>/ {ctx=$0} /<source>/ {src=$0} /type="unfinished"/ {gsub(/ *<\/?name>/,"",ctx); gsub(/ *<\/?source>/,"",src); print "  " ctx ": " src}' "$tmp/zh.ts"
  echo "Refresh and translate: docs/user-guide.md, \"Languages\"."
  exit 1
fi
echo "every GUI string has its zh_CN translation ($(grep -c '<source>' "$tmp/zh.ts") strings)"
