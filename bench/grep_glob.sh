#!/usr/bin/env bash
# grep_glob.sh -- Grep and Glob through `toolgate call`, against rg and fd, interleaved in one
# run, with the ratio per query; then Read of the first 2000 lines of a 1 GB file.
#
# Usage: bench/grep_glob.sh
# Env:
#   TOOLGATE  the binary to call (default target/release/toolgate; any program taking
#             `call [--workspace DIR] [--audit FILE] NAME JSON` works, e.g.
#             target/release/examples/call from `cargo build --release -p toolgate-tools --example call`)
#   ANCHORS   (default ${TMPDIR:-/tmp}/toolgate-anchors)
#   CORPUS    (default $ANCHORS/corpus; build it with /work/shared/bench/make_corpus.sh)
#   RUNS      timed runs per command (default 7; one warm-up run is not counted)
#   BIG_FILE  the 1 GB text file for the Read check (default $ANCHORS/read-1g.txt, created if missing)
#   SKIP_READ=1 skips the Read check.
#
# Targets: Grep within 1.3x of rg, Glob within 1.5x of fd (medians, warm page cache, process
# start included on both sides); Read of the first 2000 lines of a 1 GB file under 50 ms
# with bounded memory (max RSS printed).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
ANCHORS=${ANCHORS:-${TMPDIR:-/tmp}/toolgate-anchors}
CORPUS=${CORPUS:-$ANCHORS/corpus}
TOOLGATE=${TOOLGATE:-$ROOT/target/release/toolgate}
RUNS=${RUNS:-7}
BIG_FILE=${BIG_FILE:-$ANCHORS/read-1g.txt}
export LC_ALL=C

die() { echo "grep_glob.sh: $*" >&2; exit 2; }
[ -x "$TOOLGATE" ] || die "no $TOOLGATE; build it (cargo build --release -p toolgate) or set TOOLGATE"
[ -d "$CORPUS" ] || die "no corpus at $CORPUS; run /work/shared/bench/make_corpus.sh"
command -v rg >/dev/null || die "rg is not installed (apt-get install ripgrep)"
FD=$(command -v fd || command -v fdfind || true)
[ -n "$FD" ] || die "fd is not installed (apt-get install fd-find)"
[ "${BASH_VERSINFO[0]}" -ge 5 ] || die "bash 5 is needed (EPOCHREALTIME)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/grep_glob.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
AUDIT="$WORK/audit.jsonl"

tg() { "$TOOLGATE" call --workspace "$CORPUS" --audit "$AUDIT" "$@"; }

# us CMD...: runs CMD in $CORPUS with output discarded, prints wall microseconds; a failing
# command aborts the run (a benchmark of an error is worthless).
us() {
  local t0 t1
  t0=${EPOCHREALTIME/./}
  if ! (cd "$CORPUS" && "$@" >/dev/null 2>"$WORK/stderr"); then
    # rg exits 1 for "no match", which is not an error here.
    if [ "$1" != rg ] || [ -s "$WORK/stderr" ]; then
      echo "command failed: $*" >&2; cat "$WORK/stderr" >&2; exit 1
    fi
  fi
  t1=${EPOCHREALTIME/./}
  echo $((t1 - t0))
}

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# name | kind (grep|glob) | reference command | toolgate tool | toolgate JSON
QUERIES=(
  "files_with_matches|grep|rg -l unsafe .|Grep|{\"pattern\":\"unsafe\",\"head_limit\":0}"
  "content -n|grep|rg -n -e fn\\smain .|Grep|{\"pattern\":\"fn\\\\smain\",\"output_mode\":\"content\",\"-n\":true,\"head_limit\":0}"
  "count|grep|rg -c TODO .|Grep|{\"pattern\":\"TODO\",\"output_mode\":\"count\",\"head_limit\":0}"
  "case-insensitive|grep|rg -il deprecated .|Grep|{\"pattern\":\"deprecated\",\"-i\":true,\"head_limit\":0}"
  "char class|grep|rg -l -e [A-Z][a-z]+Error\\b .|Grep|{\"pattern\":\"[A-Z][a-z]+Error\\\\b\",\"head_limit\":0}"
  "glob *.h|glob|$FD -t f -g *.h .|Glob|{\"pattern\":\"**/*.h\"}"
  "glob test_*.py|glob|$FD -t f -g test_*.py .|Glob|{\"pattern\":\"**/test_*.py\"}"
)

declare -A REF TG
for q in "${QUERIES[@]}"; do IFS='|' read -r name _ _ _ _ <<<"$q"; REF[$name]=""; TG[$name]=""; done

echo "corpus: $CORPUS ($(find "$CORPUS" -type f | wc -l) files, $(du -sh "$CORPUS" | cut -f1))"
echo "toolgate: $TOOLGATE"
echo "rg: $(rg --version | head -1); fd: $("$FD" --version)"
echo "runs: $RUNS (+1 warm-up), interleaved"
for run in $(seq 0 "$RUNS"); do
  for q in "${QUERIES[@]}"; do
    IFS='|' read -r name _ ref tool json <<<"$q"
    # shellcheck disable=SC2086 # the reference command is split on purpose
    r=$(us $ref)
    t=$(us tg "$tool" "$json")
    if [ "$run" -gt 0 ]; then REF[$name]+=" $r"; TG[$name]+=" $t"; fi
  done
done

printf '\n%-20s %12s %12s %8s %8s\n' query "ref ms" "toolgate ms" ratio target
fail=0
for q in "${QUERIES[@]}"; do
  IFS='|' read -r name kind _ _ _ <<<"$q"
  r=$(median <<<"${REF[$name]}"); t=$(median <<<"${TG[$name]}")
  target=$([ "$kind" = grep ] && echo 1.3 || echo 1.5)
  ratio=$(awk -v a="$t" -v b="$r" 'BEGIN {printf "%.2f", a/b}')
  ok=$(awk -v x="$ratio" -v y="$target" 'BEGIN {print (x <= y) ? "ok" : "MISS"}')
  [ "$ok" = ok ] || fail=1
  printf '%-20s %12.1f %12.1f %8s %8s %s\n' "$name" "$(awk -v x="$r" 'BEGIN{print x/1000}')" \
    "$(awk -v x="$t" 'BEGIN{print x/1000}')" "${ratio}x" "${target}x" "$ok"
done

if [ "${SKIP_READ:-0}" != 1 ]; then
  if [ ! -f "$BIG_FILE" ] || [ "$(stat -c %s "$BIG_FILE")" -lt $((1 << 30)) ]; then
    echo; echo "creating $BIG_FILE (1 GiB of text lines)"
    # `yes` dies of SIGPIPE when head has enough; that is not a failure.
    { yes 'The quick brown fox jumps over the lazy dog; lorem ipsum dolor sit amet, 0123456789.' || true; } \
      | head -c $((1 << 30)) >"$BIG_FILE"
  fi
  DIR=$(dirname "$BIG_FILE")
  read_json="{\"file_path\":\"$BIG_FILE\",\"limit\":2000}"
  mid_json="{\"file_path\":\"$BIG_FILE\",\"offset\":6000000,\"limit\":2000}"
  times=""; mids=""
  for run in $(seq 0 "$RUNS"); do
    t=$(CORPUS=$DIR us "$TOOLGATE" call --workspace "$DIR" --audit "$AUDIT" Read "$read_json")
    m=$(CORPUS=$DIR us "$TOOLGATE" call --workspace "$DIR" --audit "$AUDIT" Read "$mid_json")
    if [ "$run" -gt 0 ]; then times+=" $t"; mids+=" $m"; fi
  done
  rss_kb=$( { /usr/bin/time -f '%M' "$TOOLGATE" call --workspace "$DIR" --audit "$AUDIT" Read "$read_json" >/dev/null; } 2>&1 | tail -1)
  mid_rss_kb=$( { /usr/bin/time -f '%M' "$TOOLGATE" call --workspace "$DIR" --audit "$AUDIT" Read "$mid_json" >/dev/null; } 2>&1 | tail -1)
  t=$(median <<<"$times"); m=$(median <<<"$mids")
  ok=$(awk -v x="$t" 'BEGIN {print (x <= 50000) ? "ok" : "MISS"}')
  [ "$ok" = ok ] || fail=1
  echo
  printf 'Read first 2000 lines of a 1 GiB file: %.1f ms (target 50 ms) %s, max RSS %d KiB\n' \
    "$(awk -v x="$t" 'BEGIN{print x/1000}')" "$ok" "$rss_kb"
  printf 'Read 2000 lines at offset 6,000,000:   %.1f ms (informational), max RSS %d KiB\n' \
    "$(awk -v x="$m" 'BEGIN{print x/1000}')" "$mid_rss_kb"
fi
exit $fail
