#!/usr/bin/env bash
# The benchmark of docs/benchmarks.md in one run: generates every input (seeded, pi-accepted:
# a 40 MB session of large entries, 12.5k-100k tiny entries, a 1,000,000-entry chain, one 100 MB
# line, 1 GiB, 125-500 leaves, 25-200 folds, 1,000 small files), runs every shake command on
# each, and pi 1.6.0's own code on the same bytes in the same run, then prints the tables with
# the ratios and the targets of issue 12. Not a test: read the figures.
#
#   docs/bench/run.sh                    # everything, full size (~30 min on 2 idle cores)
#   docs/bench/run.sh --quick            # inputs at a tenth of their size, one repeat
#   docs/bench/run.sh --only tiny,large  # some sections; --scale 0.25, --repeats 5, --work DIR, -v
#   docs/bench/run.sh --only tiny,folds --instructions  # the doubling tables in instructions too
#   docs/bench/run.sh --help
#
# Needs a release build and pi installed in tests/oracle; this script makes both when missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x target/release/shake ] || cargo build --release --bin shake
[ -d tests/oracle/node_modules ] || (cd tests/oracle && npm ci --no-audit --no-fund)
command -v /usr/bin/time >/dev/null || { echo "run.sh: needs /usr/bin/time (GNU time) for RSS" >&2; exit 1; }
case " $* " in *" --instructions "*) command -v valgrind >/dev/null || { echo "run.sh: --instructions needs valgrind" >&2; exit 1; } ;; esac
exec nice -n "${BENCH_NICE:-0}" python3 docs/bench/bench.py "$@"
