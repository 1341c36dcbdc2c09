#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/) in build-fuzz/ with clang and runs
# each one from a seed corpus. Usage:
#   bash scripts/fuzz.sh [--runs N | --seconds S] [--jobs J] [--build-dir DIR] [HARNESS...]
# HARNESS is import, text-ir or manifest (default: all three).
#   --runs N     stop each harness after N executions (default 2000; CI uses
#                this with a fixed seed, so a run is repeatable)
#   --seconds S  stop each harness after S seconds instead (long runs)
#   --jobs J     parallel fuzzing processes per harness (default 1)
#   --build-dir DIR  build the harnesses in DIR, an existing build configured
#                with clang and -DFUSEC_FUZZ=ON (tests included, say);
#                default: configure build-fuzz/ here (libraries only, no cpu
#                backend)
# Seeds: the shared and bundled models and libonnx-testdata's node-test
# models (import), the lit tests' .fir files (text-ir), and the manifest of
# the bundled model compiled with --no-nvcc (manifest). New inputs found are
# kept in build-fuzz/corpus/HARNESS; crashes in build-fuzz/crashes/.
# Exit status: 0 when no harness found a crash, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=2000 seconds="" jobs=1 harnesses=() bdir=""
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --build-dir) bdir=${2%/}; shift 2 ;;
    import|text-ir|manifest) harnesses+=("$1"); shift ;;
    *) echo "usage: $0 [--runs N | --seconds S] [--jobs J] [--build-dir DIR] [import|text-ir|manifest]..." >&2
       exit 2 ;;
  esac
done
[ ${#harnesses[@]} -eq 0 ] && harnesses=(import text-ir manifest)

if ! command -v clang++ > /dev/null; then
  echo "fuzz: SKIPPED: clang++ not found (install clang and libclang-rt-14-dev)"
  exit 0
fi
if [ -z "$bdir" ]; then
  bdir=build-fuzz
  # The import harness compiles for cuda and nki: the cpu backend (LLVM) is left out.
  CC=clang CXX=clang++ cmake -S . -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DFUSEC_FUZZ=ON -DFUSEC_WERROR=OFF -DFUSEC_BUILD_TESTS=OFF -DFUSEC_CPU_BACKEND=OFF > /dev/null
elif ! grep -q '^FUSEC_FUZZ:BOOL=ON' "$bdir/CMakeCache.txt" 2>/dev/null; then
  echo "fuzz: $bdir is not a build configured with -DFUSEC_FUZZ=ON (and clang)" >&2
  exit 2
fi
targets=()
for h in "${harnesses[@]}"; do targets+=("fusec-fuzz-$h"); done
cmake --build "$bdir" --target "${targets[@]}"

work=$bdir
mkdir -p "$work/crashes"
seed_dir() {  # seed_dir HARNESS: a folder of seed files for HARNESS
  local h=$1 d=$work/seeds/$1
  rm -rf "$d" && mkdir -p "$d"
  case $h in
    import)
      for m in ../shared/models/*/model.onnx examples/models/*/model.onnx; do
        [ -f "$m" ] && cp "$m" "$d/$(basename "$(dirname "$m")").onnx"
      done
      # Debian's libonnx-testdata (the older path is that of other packagings).
      local td=/usr/share/libonnx-testdata/data/node i=0
      [ -d "$td" ] || td=/usr/share/onnx/backend/test/data/node
      if [ -d "$td" ]; then
        for m in "$td"/*/model.onnx; do
          i=$((i + 1)); [ $((i % 8)) -eq 0 ] && cp "$m" "$d/node_$i.onnx"
        done
      fi ;;
    text-ir)
      find test/lit -name '*.fir' -exec cp {} "$d/" \; ;;
    manifest)
      if [ -x build/bin/fusec ]; then
        local tmp
        tmp=$(mktemp -d)
        build/bin/fusec examples/models/attn_causal_sdpa/model.onnx --shape x=2x24x128 \
          -o "$tmp/a" --no-nvcc > /dev/null 2>&1 && cp "$tmp/a/manifest.json" "$d/sdpa.json"
        rm -rf "$tmp"
      fi
      printf '{"format":"fusec-artifact","version":1}' > "$d/minimal.json" ;;
  esac
  echo "$d"
}

status=0
for h in "${harnesses[@]}"; do
  bin=$bdir/bin/fusec-fuzz-$h
  [ -x "$bin" ] || { echo "fuzz $h: SKIPPED (not built)"; continue; }
  seeds=$(seed_dir "$h")
  corpus=$work/corpus/$h
  mkdir -p "$corpus"
  limit=(-runs="$runs")
  [ -n "$seconds" ] && limit=(-max_total_time="$seconds")
  log=$work/fuzz-$h.log
  set +e
  "$bin" "$corpus" "$seeds" "${limit[@]}" -seed=1 -jobs="$jobs" -workers="$jobs" \
    -rss_limit_mb=4096 -malloc_limit_mb=2048 -timeout=30 -max_len=1048576 \
    -artifact_prefix="$work/crashes/$h-" -print_final_stats=1 > "$log" 2>&1
  rc=$?
  set -e
  # With -jobs, libFuzzer writes each worker's log to ./fuzz-N.log (and the
  # main log repeats nothing of it); without, the main log has the stats.
  # Count the workers' logs when there are any, else the main log, never both.
  count_from=$log
  if ls fuzz-*.log > /dev/null 2>&1; then
    cat fuzz-*.log > "$log.workers"; rm -f fuzz-*.log
    count_from=$log.workers
    cat "$log.workers" >> "$log"
  fi
  execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$count_from" | grep -Eo '[0-9]+$' |
          awk '{s += $1} END {print s + 0}')
  rm -f "$log.workers"
  if [ $rc -eq 0 ]; then
    echo "fuzz $h: ok, $execs executions, 0 crashes"
  else
    echo "fuzz $h: FAILED (rc $rc) after $execs executions; see $log and $work/crashes/"
    grep -E "ERROR|SUMMARY|==[0-9]+==|Test unit written" "$log" | head -20
    status=1
  fi
done
exit $status
