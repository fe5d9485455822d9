#!/usr/bin/env bash
# Runs fuzz targets one after another, each for SECONDS with a single job, then minimises
# its corpus (fuzz/corpus/TARGET, committed). Needs a nightly toolchain and cargo-fuzz
# (`cargo install cargo-fuzz`); see docs/fuzzing.md.
# Usage: fuzz/run.sh [SECONDS] [TARGET...]   (default: 600 s, every target)
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-600}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(analyze settings rules hook_output exec_jsonl mcp_stdio mcp_http)
fi
mkdir -p fuzz/logs
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t"
  echo "== $t: ${secs} s"
  # -timeout: one input taking 30 s is a hang; -rss_limit_mb: 4 GiB is a runaway allocation.
  if cargo +nightly fuzz run --codegen-units 16 "$t" "fuzz/corpus/$t" -- \
      -max_total_time="$secs" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
      >"fuzz/logs/$t.log" 2>&1; then
    echo "   clean: $(grep -E '^Done [0-9]+ runs' "fuzz/logs/$t.log" | tail -1)"
  else
    echo "   FOUND A CRASH: see fuzz/logs/$t.log and fuzz/artifacts/$t/"
  fi
  cargo +nightly fuzz cmin --codegen-units 16 "$t" "fuzz/corpus/$t" >"fuzz/logs/$t.cmin.log" 2>&1 \
    || echo "   cmin failed: see fuzz/logs/$t.cmin.log"
done
