#!/usr/bin/env bash
# Checks that two builds print and write the same bytes: every read command's output, then on a
# copy fold, status, log, show and undo with the bytes each write leaves in the file (and, for a
# Claude Code transcript, in its folder), with $SHAKE_TIMESTAMP fixed so new ids repeat. Prints one
# line per difference and exits 1 if there is any (docs/bench/notebook.md, "Where the dry run's
# instructions go": run it before a change to the engine's speed lands).
#
#   docs/bench/same.sh OLD NEW [SESSION.jsonl ...]   # default: every fixture in tests/fixtures
#   KEEP=1 docs/bench/same.sh ...                    # keeps the work folder, to diff by hand
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
  # What differs between two runs of one build is named once, here: the run's folder (W) and a
  # Claude Code fork's random session id (FORK), in every output and every file.
  local fork
  fork=$(cat "$out"/*.out | grep -o '"fork":{"sessionId":"[0-9a-f-]*"' | head -1 | cut -d'"' -f6)
  same() { sed -e "s#$out#W#g" ${fork:+-e "s#$fork#FORK#g"} "$@"; }
  for o in "$out"/*.out "$out"/*.err; do same -i "$o"; done
  # Sorted after the naming: a fork's file sorts by its random name before it.
  (cd "$out/home" && find . -type f | while read -r p; do echo "$p $(same "$p" | sha256sum)"; done) |
    same | sort >"$out/files"
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
      if ! cmp -s "$work/a/$n.$kind" "$work/b/$n.$kind"; then
        echo "differs: $name: step $n, $(cat "$what") ($kind)"
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
