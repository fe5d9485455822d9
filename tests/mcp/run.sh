#!/usr/bin/env bash
# Real-client tests for `toolgate serve`: installs the Python MCP SDK into a venv and drives
# the server over stdio and Streamable HTTP. Usage: tests/mcp/run.sh [--only NAME]
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
exec "$venv/bin/python" "$here/test_serve.py" "$toolgate" "$@"
