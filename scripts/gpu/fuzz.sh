#!/usr/bin/env bash
# scripts/gpu/fuzz.sh - long libFuzzer runs on the GPU machine's CPU cores.
#
# The harnesses are built here with `bash scripts/fuzz.sh` (build-fuzz/,
# clang, ASan + UBSan + libFuzzer) and staged by scripts/gpu/stage.sh into
# .gpu/bin (seeds of text-ir and manifest in .gpu/seeds; the import seeds are
# the shared models in .gpu/shared/models). On the device tool, carry [".gpu"]:
#   bash scripts/gpu/fuzz.sh [--seconds S] [--jobs J] [--max-len B] [HARNESS...]
# Runs each harness (default: import text-ir manifest) with J workers
# (default: cores - 2) for S seconds (default 120) on inputs of at most B
# bytes (default 65536: the import harness then runs ~10x more executions
# per second than on the 2 MB shared models; seeds: .gpu/seeds/HARNESS,
# for import the node-test models of libonnx-testdata, falling back to the
# shared models when those were not staged), then prints per harness
# the executions summed over the workers' logs and the crashes found.
# Crashing inputs and the logs go to $OUT/fuzz (OUT defaults to ./gpu-out).
# Exit status: 0 when no harness crashed, 1 otherwise.
set -uo pipefail
# env.sh unpacks the xz-compressed staged binaries (stage.sh) and sets the paths.
source "$(dirname "$0")/env.sh"
cd "$FUSEC_ROOT" || exit 1
export LD_LIBRARY_PATH=$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
seconds=120 maxlen=65536 jobs=$(( $(nproc) > 4 ? $(nproc) - 2 : 2 )) harnesses=()
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --max-len) maxlen=$2; shift 2 ;;
    import|text-ir|manifest) harnesses+=("$1"); shift ;;
    *) echo "usage: $0 [--seconds S] [--jobs J] [--max-len B] [import|text-ir|manifest]..." >&2; exit 2 ;;
  esac
done
[ ${#harnesses[@]} -eq 0 ] && harnesses=(import text-ir manifest)
OUT=${OUT:-$PWD/gpu-out}
res=$OUT/fuzz
mkdir -p "$res/crashes"
status=0
for h in "${harnesses[@]}"; do
  bin=.gpu/bin/fusec-fuzz-$h
  [ -x "$bin" ] || { echo "fuzz $h: SKIPPED (not staged)"; continue; }
  case $h in
    import) if [ -d .gpu/seeds/import ]; then seeds=(.gpu/seeds/import); else seeds=(.gpu/shared/models/*/); fi ;;
    *) seeds=(.gpu/seeds/$h) ;;
  esac
  work=$(mktemp -d)
  mkdir -p "$work/corpus"
  ( cd "$work" && "$OLDPWD/$bin" corpus "${seeds[@]/#/$OLDPWD/}" -jobs="$jobs" -workers="$jobs" \
      -max_total_time="$seconds" -seed=1 -rss_limit_mb=4096 -malloc_limit_mb=2048 -timeout=30 \
      -max_len="$maxlen" -artifact_prefix="$res/crashes/$h-" -print_final_stats=1 \
      > "$res/$h.log" 2>&1 )
  rc=$?
  cat "$work"/fuzz-*.log > "$res/$h-workers.log" 2>/dev/null
  execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$res/$h-workers.log" |
          grep -Eo '[0-9]+$' | awk '{s += $1} END {print s + 0}')
  crashes=$(ls "$res/crashes" | grep -c "^$h-" || true)
  corpus=$(ls "$work/corpus" | wc -l)
  rm -rf "$work"
  echo "fuzz $h: $execs executions, $jobs workers x ${seconds} s, corpus $corpus, crashes $crashes (rc $rc)"
  [ "$crashes" -eq 0 ] || status=1
  [ "$crashes" -eq 0 ] || grep -hE "ERROR|SUMMARY" "$res/$h-workers.log" | head -10
done
exit $status
