#!/bin/sh
# `make test-real`: the tests marked `real`, against a real model server. With HEARTH_REAL_MODEL_HOST
# set, that server (nothing is started). Otherwise the real-model cache's llama-server (REALMODEL,
# made by the shared realmodel tools' setup.sh: llama.cpp built for this CPU and small GGUF models):
# started with its serve.sh for the tests and stopped after, or used as it is when it already runs.
#
#   REALMODEL           the cache (default /var/cache/hearth-realmodel)
#   HEARTH_REAL_MODEL   qwen2.5-coder:0.5b (default) or qwen2.5-coder:1.5b (needs the cache's 1.5B file)
#   THREADS             llama-server's threads when started here (default 1: on a busy 2-core box 2 spin)
#   arguments           what pytest runs (default tests/; `make test-real REAL_TESTS=...`)
#
# Exit 0 when the tests passed or there is no cache (one line says why not), 1 when a test failed,
# 2 when the cache's server cannot be used (the line says why).
set -eu
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
REALMODEL="${REALMODEL:-/var/cache/hearth-realmodel}"
MODEL="${HEARTH_REAL_MODEL:-qwen2.5-coder:0.5b}"
SHIM_PORT=11500

say() { echo "test-real: $*"; }
up() { python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' "$1" >/dev/null 2>&1; }
run_tests() {
  [ $# -gt 0 ] || set -- tests
  HEARTH_REAL_MODEL="$MODEL" "$VENV/bin/python" -m pytest -q -p no:cacheprovider -m real "$@"
}

[ -x "$VENV/bin/python" ] || { say "no $VENV: run make test (or scripts/bootstrap.sh) first"; exit 2; }
if [ -n "${HEARTH_REAL_MODEL_HOST:-}" ]; then
  say "the server HEARTH_REAL_MODEL_HOST names: $HEARTH_REAL_MODEL_HOST ($MODEL)"
  run_tests "$@"
  exit
fi

case "$MODEL" in
  qwen2.5-coder:0.5b) PORT=11501; FILE=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf ;;
  qwen2.5-coder:1.5b) PORT=11504; FILE=qwen2.5-coder-1.5b-instruct-q4_k_m.gguf; QWEN15=1; export QWEN15 ;;
  *) say "HEARTH_REAL_MODEL=$MODEL: the cache serves qwen2.5-coder:0.5b and qwen2.5-coder:1.5b"; exit 2 ;;
esac
[ -x "$REALMODEL/bin/llama-server" ] && [ -f "$REALMODEL/bin/serve.sh" ] \
  || { say "skipped: no real-model server in $REALMODEL (build the cache with the realmodel tools' setup.sh, or set HEARTH_REAL_MODEL_HOST)"; exit 0; }
[ -f "$REALMODEL/models/$FILE" ] || { say "skipped: $REALMODEL has no $FILE (setup.sh with QWEN15=1 fetches the 1.5B model)"; exit 0; }

if up "http://127.0.0.1:$PORT/health"; then
  say "using the cache's server already running on :$PORT"
elif up "http://127.0.0.1:11501/health" || up "http://127.0.0.1:$SHIM_PORT/api/tags"; then
  say "the cache's server runs without $MODEL; stop it (serve.sh $REALMODEL stop) or start it with QWEN15=1"
  exit 2
else
  say "starting the cache's server for $MODEL (stopped after; log in $REALMODEL/run/)"
  trap 'bash "$REALMODEL/bin/serve.sh" "$REALMODEL" stop' EXIT
  trap 'exit 130' INT TERM
  THREADS="${THREADS:-1}" bash "$REALMODEL/bin/serve.sh" "$REALMODEL" >/dev/null \
    || { say "the cache's server did not start; see $REALMODEL/run/*.log"; exit 2; }
fi

HEARTH_REAL_MODEL_HOST="openai+http://127.0.0.1:$PORT"
export HEARTH_REAL_MODEL_HOST
say "HEARTH_REAL_MODEL_HOST=$HEARTH_REAL_MODEL_HOST HEARTH_REAL_MODEL=$MODEL"
run_tests "$@"
