#!/usr/bin/env bash
# Installs the Python peers of the benchmark (arq, RQ) from the committed,
# hashed lock (requirements.lock) into bench/python/.venv, which bench/
# (python.go) runs them with. Idempotent: a venv that already holds the
# lock is left as it is. ./test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")"
if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
  echo "== installing python3-venv (Debian package) for bench/python/.venv"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null
fi
stamp=.venv/.lock.sha256
want=$(sha256sum requirements.lock | cut -d' ' -f1)
if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
rm -rf .venv
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes -r requirements.lock
.venv/bin/python -m pip check --disable-pip-version-check >/dev/null
echo "$want" > "$stamp"
