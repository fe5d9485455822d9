#!/usr/bin/env bash
# toolgate's main job on a bundled example: an agent session of 25 tool calls in acceptEdits mode (reads, a
# search, a bug fix, a schema error, a path escape attempt, a malformed line, …) runs through
# `toolgate exec` against a scratch copy of examples/workspace; then the audit log is
# verified and summarised.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cargo build -q -p toolgate --manifest-path "$here/../Cargo.toml"
# Ask cargo where it put the binary: CARGO_TARGET_DIR or a config may move target/.
target_dir="$(cargo metadata --format-version 1 --no-deps --manifest-path "$here/../Cargo.toml" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
bin="$target_dir/debug/toolgate"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cp -R "$here/workspace" "$scratch/workspace"

echo "== toolgate exec: $(wc -l < "$here/session.jsonl") lines from examples/session.jsonl"
"$bin" exec --workspace "$scratch/workspace" --mode acceptEdits --audit "$scratch/audit.jsonl" --session-id demo \
  < "$here/session.jsonl" > "$scratch/results.jsonl"

python3 - "$scratch/results.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    g = r["toolgate"]
    content = r["content"]
    text = content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)
    first = text.strip().splitlines()[0] if text.strip() else ""
    status = "error " + g["code"] if r["is_error"] else "ok"
    print(f'{r["tool_use_id"] or "-":10} {status:24} {first[:90]}')
PY

echo
echo "== the fixed file"
sed -n '/def remove/,/have - count/p' "$scratch/workspace/app/inventory.py"
echo
echo "== toolgate audit verify"
"$bin" audit verify "$scratch/audit.jsonl"
echo
echo "== toolgate audit stats"
"$bin" audit stats "$scratch/audit.jsonl"
