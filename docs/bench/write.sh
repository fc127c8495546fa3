#!/usr/bin/env bash
# One parse per write (issue 12.2): `shake fold` against `shake fold --dry-run`, and `shake import`
# after a 2 KB append, on a 200 MiB generated session, 3 runs each (wall, user+system CPU, max
# RSS from /usr/bin/time), then fold, undo, fold and `shake fsck` on the result. Not a test.
#
#   docs/bench/write.sh [SHAKE_BIN] [WORK_DIR]     # default target/release/shake, /tmp/shake-write
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${1:-$ROOT/target/release/shake}
W=${2:-/tmp/shake-write}
BASE=$W/base-200M.jsonl
mkdir -p "$W"
[ -f "$BASE" ] || "$BIN" generate-session --seed 1 --size 200M -o "$BASE" >/dev/null
export SHAKE_QUIET=1 SHAKE_DIR=$W/store
t() { /usr/bin/time -f "%e s wall, %U+%S s CPU, %M KB" "$@" >/dev/null 2>"$W/time" || { cat "$W/time"; exit 1; }; tail -1 "$W/time"; }
# A private copy imported into a private store, its mtime a minute back (a session pi is not
# writing right now; the command's implicit import then re-checks the file, as after any touch).
fresh() { rm -rf "$W/store"; cp -p "$BASE" "$W/s.jsonl"; "$BIN" import "$W/s.jsonl" >/dev/null; touch -d '1 min ago' "$W/s.jsonl"; }
for _ in 1 2 3; do
  fresh; echo "fold --dry-run: $(t "$BIN" fold --dry-run "$W/s.jsonl")"
  fresh; echo "fold:           $(t "$BIN" fold "$W/s.jsonl")"
  fresh; python3 "$ROOT/docs/bench/shapes.py" append "$W/s.jsonl"; echo "import + 2 KB:  $(t "$BIN" import "$W/s.jsonl")"
done
fresh; "$BIN" fold "$W/s.jsonl" >/dev/null; "$BIN" undo "$W/s.jsonl" >/dev/null; "$BIN" fold "$W/s.jsonl" >/dev/null
echo "fsck after fold, undo, fold: $("$BIN" fsck 2>&1 | tail -1)"
