#!/bin/sh
# Every C++ line changed since the project adopted .clang-format (the commit in .clang-format-since)
# is laid out as clang-format lays it out; older lines keep their layout until they are touched.
# Prints the reformatting a failing change needs (apply it: the same command piped into
# `patch -p0`, or `clang-format -i FILE` on a file of your own).
# usage: check_format.sh SOURCE_DIR        (ctest: format_check; exit 77 = nothing to check here)
set -eu
cd "$1"
git rev-parse --git-dir >/dev/null 2>&1 || { echo "not a git checkout: nothing to check"; exit 77; }
base=$(cat .clang-format-since)
git cat-file -e "$base^{commit}" 2>/dev/null || { echo "$base is not in this history (a shallow clone?)"; exit 77; }
diff=$(command -v clang-format-diff-14 || command -v clang-format-diff || true)
format=$(command -v clang-format-14 || command -v clang-format || true)
[ -n "$diff" ] && [ -n "$format" ] || { echo "clang-format is not installed (apt-get install clang-format)"; exit 77; }
out=$(git diff -U0 --no-color "$base" -- '*.cpp' '*.h' | "$diff" -p1 -binary "$format")
if [ -n "$out" ]; then
  echo "FAIL: lines changed since $base are not laid out as .clang-format says:"
  printf '%s\n' "$out" | head -n 200
  exit 1
fi
echo "every C++ line changed since $base is formatted"
