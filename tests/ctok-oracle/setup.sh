#!/usr/bin/env bash
# Installs ctok 1.3.0 (Sander Land, MIT), the offline reconstruction of Claude's count_tokens that
# shake's Claude tokenizer is checked against (tests/cli/claude_tokenizer.rs), from PyPI into
# ./lib, pinned with its one dependency. ctok asks for Python 3.12; its code runs on 3.11, which
# is what CI has, so the version check is waived. --target keeps it out of the system's packages
# (and --break-system-packages lets a Debian pip that guards them install there all the same).
set -euo pipefail
cd "$(dirname "$0")"
python3 -m pip install --quiet --disable-pip-version-check --ignore-requires-python \
  --break-system-packages --root-user-action=ignore --upgrade --target lib ctok==1.3.0 regex==2026.12.2
PYTHONPATH=lib python3 -c 'import ctok; assert ctok.token_count("hello, world") == 10'
touch lib/.ctok-oracle-ready
