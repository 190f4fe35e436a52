#!/usr/bin/env bash
# Installs what the tests need into ./.venv and runs lint, the type checker and the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
# System packages the tests start themselves: Redis (the shared hot cache) and
# Chromium (the web page, driven by Playwright through /usr/bin/chromium).
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v chromium >/dev/null || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "the tests need: ${missing[*]} (sudo apt-get install ${missing[*]})" >&2
        exit 1
    fi
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]' 2>&1 \
    | grep -v "^WARNING: Location" || true
.venv/bin/ruff check src tests
.venv/bin/ruff format --check src tests
.venv/bin/mypy
.venv/bin/python -m pytest -n 2 -q "$@"
