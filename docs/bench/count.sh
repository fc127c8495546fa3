#!/usr/bin/env bash
# The instructions (valgrind's cachegrind) of each main command on one session, in a fresh
# private store with the token cache warm: project --json, fold --dry-run, then on a copy fold,
# status, log, undo. Deterministic, so two builds compare on a loaded machine (docs/bench/notebook.md,
# "Counting instructions").
#
#   docs/bench/count.sh SHAKE SESSION.jsonl WORKDIR     # WORKDIR is emptied first
set -euo pipefail
S=$1 F=$2 W=$3
rm -rf "$W" && mkdir -p "$W" && cp "$F" "$W/s.jsonl"
# Copies dated an hour back: a file written within the last second is "racy" to the store's
# import state, whose next reader then hashes the whole file again, and whether a command runs
# within that second of the copy depends on the clock (two runs of main differed by 180 M).
touch -d '-1 hour' "$W/s.jsonl"
export SHAKE_DIR=$W/store SHAKE_QUIET=1
count() {
  valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
    awk '/I *refs/ { gsub(",", "", $NF); printf "%.1f M\n", $NF / 1e6 }'
}
"$S" import "$W/s.jsonl" >/dev/null
"$S" fold --dry-run "$W/s.jsonl" >/dev/null # warms the token cache
echo "project --json $(count "$S" project --json "$W/s.jsonl")"
echo "fold --dry-run $(count "$S" fold --dry-run "$W/s.jsonl")"
cp "$W/s.jsonl" "$W/f.jsonl" && touch -d '-1 hour' "$W/f.jsonl" && "$S" import "$W/f.jsonl" >/dev/null
echo "fold $(count "$S" fold "$W/f.jsonl")"
# The fold's import state is racy (mtime 0) when it was recorded within a second of the write,
# and the next command then proves the whole file again (130 M on tiny-100k): whether it does
# depended on how long valgrind took between the two (status of one build read 1,953 and
# 2,092 M). A second later an import proves it once, uncounted, so status counts status alone.
sleep 1.1 && "$S" import "$W/f.jsonl" >/dev/null
echo "status $(count "$S" status "$W/f.jsonl")"
echo "log $(count "$S" log "$W/f.jsonl")"
echo "undo $(count "$S" undo "$W/f.jsonl")"
