#!/usr/bin/env bash
# Checks that two builds print and write the same bytes: every read command's output, then on a
# copy fold, status, log, show and undo with the bytes each write leaves in the file (and, for a
# Claude Code transcript, in its folder), with $SHAKE_TIMESTAMP fixed so new ids repeat. Prints one
# line per difference and exits 1 if there is any (docs/benchmarks.md: every change to the engine's
# speed is checked with it before it lands).
#
#   docs/bench/same.sh OLD NEW [SESSION.jsonl ...]   # default: every fixture in tests/fixtures
set -uo pipefail
old=$1 new=$2
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ $# = 0 ]; then
  set -- "$root"/tests/fixtures/*.jsonl "$root"/tests/fixtures/omp/*.jsonl "$root"/tests/fixtures/claude/*/transcript.jsonl
fi
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
export SHAKE_TIMESTAMP=2026-12-02T00:00:00.000Z SHAKE_QUIET=1 NO_COLOR=1

# Runs every command with binary $1 on a copy of session $2 in folder $3, one output file each.
run() {
  local shake=$1 session=$2 out=$3
  mkdir -p "$out/home"
  cp -r "$(dirname "$session")/." "$out/home/" # a transcript's folder: subagents/, tool-results/
  local f=$out/home/$(basename "$session")
  touch -d '-1 hour' "$f"
  export SHAKE_DIR=$out/store
  local i=0
  step() {
    i=$((i + 1))
    "$shake" "$@" >"$out/$i.out" 2>"$out/$i.err"
    echo "exit $?" >>"$out/$i.out"
    echo "$*" | sed "s#$f#SESSION#" >"$out/$i.what"
  }
  step project --json "$f"
  step fold --dry-run --json "$f"
  step meter --json "$f"
  step meter --json --tokenizer pi "$f"
  step regions --json "$f"
  step count-tokens "$f"
  step ls-entries "$f"
  step fold --json "$f"
  step status --json "$f"
  step log --json "$f"
  step show "$f"
  step undo --json "$f"
  step status --json "$f"
  # A Claude Code fork's session id is random: name it FORK in every output and file.
  local fork
  fork=$(grep -o '"fork":{"sessionId":"[0-9a-f-]*"' "$out/8.out" | cut -d'"' -f6)
  (cd "$out/home" && find . -type f | sort | while read -r p; do
    echo "$p $(sed "s#${fork:-^\$}#FORK#g; s#$out#W#g" "$p" | sha256sum)"
  done) | sed "s#${fork:-^\$}#FORK#g; s#$out#W#g" >"$out/files"
  [ -z "$fork" ] || sed -i "s#$fork#FORK#g" "$out"/*.out "$out"/*.err
}

status=0
for session in "$@"; do
  name=${session#"$root"/}
  rm -rf "$work"/a "$work"/b
  run "$old" "$session" "$work/a"
  run "$new" "$session" "$work/b"
  for what in "$work"/a/*.what; do
    n=$(basename "$what" .what)
    for kind in out err; do
      # A path in a message names the run's folder, which differs between the two runs.
      if ! cmp -s <(sed "s#$work/a#W#g" "$work/a/$n.$kind") <(sed "s#$work/b#W#g" "$work/b/$n.$kind"); then
        echo "differs: $name: $(cat "$what") ($kind)"
        status=1
      fi
    done
  done
  if ! cmp -s "$work/a/files" "$work/b/files"; then
    echo "differs: $name: the files left after the writes"
    status=1
  fi
done
[ $status = 0 ] && echo "same: $# sessions"
exit $status
