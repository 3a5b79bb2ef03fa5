#!/usr/bin/env bash
# Runs every libFuzzer target in DIR for SECONDS each, two at a time, seeded from tests/fuzz/corpus/NAME.
set -euo pipefail
dir=$1; secs=${2:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fail=0
run_one() {
  local bin=$1 name; name=$(basename "$bin"); name=${name#fuzz_}
  mkdir -p "$work/$name"
  local seeds=()
  [ -d "$root/tests/fuzz/corpus/$name" ] && seeds=("$root/tests/fuzz/corpus/$name")
  if "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=0 \
       "$work/$name" "${seeds[@]}" >"$work/$name.log" 2>&1; then
    echo "fuzz $name: ok ($(grep -c . "$work/$name.log") log lines, $(ls "$work/$name" | wc -l) corpus files)"
  else
    echo "fuzz $name: FAILED"; tail -40 "$work/$name.log"; return 1
  fi
}
bins=("$dir"/fuzz_*)
i=0
for b in "${bins[@]}"; do
  run_one "$b" & pids[i++]=$!
  if (( i % 2 == 0 )); then for p in "${pids[@]}"; do wait "$p" || fail=1; done; pids=(); fi
done
for p in "${pids[@]:-}"; do [ -n "$p" ] && { wait "$p" || fail=1; }; done
exit $fail
