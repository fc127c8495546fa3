#!/usr/bin/env bash
# Installs oh-my-pi 18.2.11's agent core and native addon, its 18.2.9 coding agent (for the
# extension loader) and Bun 1.4.4 from npm, pinned by package-lock.json (about 60 s from a warm
# npm cache, 760 MB in node_modules).
#
# `npm install`, not `npm ci`: the registry here lacks pi-natives 18.2.10's optional platform
# packages, so npm leaves them out of the lock file and `npm ci` then refuses the lock as out of
# sync; `npm install --no-save` installs exactly what the lock pins and changes no file here.
# package.json overrides the versions OMP pins that the registry lacks with the nearest release,
# and the loader of pi-natives 18.2.10 is told to accept the 18.2.11 addon (it checks an exact
# version sentinel). Both are harness fixes; OMP's code is untouched.
set -euo pipefail
cd "$(dirname "$0")"
npm install --no-save --no-audit --no-fund --loglevel=error
sed -i 's/"version": "18.2.10"/"version": "18.2.11"/' node_modules/@oh-my-pi/pi-natives/package.json
./node_modules/.bin/bun --version >/dev/null
touch node_modules/.omp-oracle-ready
