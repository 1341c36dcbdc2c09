#!/usr/bin/env bash
# scripts/families/check_families.sh - runs every exported model family
# (scripts/families/export_families.py) through fusec and prints, per
# family: imports | reference | fp32 | bf16 | cpu (project issue 11).
#
#   imports    fusec MODEL --shape ... --emit=ir > /dev/null
#   reference  fusec-run --reference MODEL --data DIR   (the C++ interpreter)
#   fp32       fusec MODEL --shape ... -o WORK/<f>.fp32, then
#              fusec-run WORK/<f>.fp32 --data DIR        (on the GPU)
#   bf16       the same with --precision bf16 for fusec and fusec-run
#   cpu        fusec ... --target cpu -o WORK/<f>.cpu, fusec-run on the host;
#              SKIPPED when this fusec was built without the cpu backend
#              (or with --no-cpu)
#
# --shape flags come from OUTDIR/<f>/shapes.txt (written by the export
# script: one NAME=DIMS line per input with a dynamic dim).
# Verdicts: PASS; FAIL (wrong numbers, crash, a compile error that is not a
# clean refusal); REFUSED (fusec rejected the model with an error: an
# unsupported op or dtype, something not implemented, a dim that must be
# static); TIMEOUT; SKIPPED
# (fp32/bf16 without a GPU: nvidia-smi finds none; the model is then still
# compiled, with --no-nvcc when there is no nvcc, and the column says
# "SKIPPED (compiles)" or the compile's REFUSED/FAIL). The first error line
# of each non-PASS follows the table.
#
# Compiles and reference runs of different families run in parallel (-j);
# the artifact runs (GPU, cpu thread pool) one at a time afterwards.
#
# Usage: scripts/families/check_families.sh [-j N] [--work DIR]
#            [--only a,b] [--no-cpu] OUTDIR
#   FUSEC_BIN   folder with fusec and fusec-run (default: build/bin of this repo)
#   OUT         where families.txt is written (default: WORK)
#   FAMILIES_TIMEOUT_S  per-command limit (default 300)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FUSEC_BIN=${FUSEC_BIN:-$ROOT/build/bin}
JOBS=$(( $(nproc 2>/dev/null || echo 2) / 2 ))
[ "$JOBS" -lt 1 ] && JOBS=1
WORK=${FAMILIES_WORK:-/tmp/fusec-families}
ONLY=""
CPU=1
DIR=""
while [ $# -gt 0 ]; do
  case $1 in
    -j) JOBS=$2; shift 2 ;;
    -j*) JOBS=${1#-j}; shift ;;
    --work) WORK=$2; shift 2 ;;
    --only) ONLY=",$2,"; shift 2 ;;
    --no-cpu) CPU=0; shift ;;
    -h|--help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check_families.sh: unknown option $1" >&2; exit 2 ;;
    *) DIR=$1; shift ;;
  esac
done
[ -n "$DIR" ] || { echo "usage: $0 [-j N] [--work DIR] [--only a,b] [--no-cpu] OUTDIR" >&2; exit 2; }
DIR=$(cd "$DIR" && pwd) || exit 2
for b in fusec fusec-run; do
  [ -x "$FUSEC_BIN/$b" ] || { echo "check_families.sh: no $FUSEC_BIN/$b (set FUSEC_BIN)" >&2; exit 2; }
done
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
OUT=${OUT:-$WORK}
mkdir -p "$OUT"
TMO=${FAMILIES_TIMEOUT_S:-300}

GPU=0
if command -v nvidia-smi > /dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then GPU=1; fi
NVCC_FLAG=""
if [ $GPU = 0 ] && ! command -v nvcc > /dev/null; then NVCC_FLAG=--no-nvcc; fi

FAMS=() NOEXPORT=()
for d in "$DIR"/*/; do
  f=$(basename "$d")
  [ -n "$ONLY" ] && case $ONLY in *",$f,"*) ;; *) continue ;; esac
  if [ -f "$d/model.onnx" ] && [ ! -f "$d/FAILED" ]; then FAMS+=("$f")
  elif [ -f "$d/FAILED" ]; then NOEXPORT+=("$f"); fi
done
[ ${#FAMS[@]} -gt 0 ] || { echo "check_families.sh: no OUTDIR/<family>/model.onnx under $DIR" >&2; exit 2; }

# step NAME LOG CMD...: runs CMD under the time limit, output to LOG, exit
# status to LOG.rc.
step() {
  local log=$1; shift
  timeout "$TMO" "$@" > "$log" 2>&1
  echo $? > "$log.rc"
}

# Phase 1, per family (in parallel): import, compiles, reference.
family_jobs() {
  local f=$1 m=$DIR/$1/model.onnx w=$WORK/$1
  rm -rf "$w" && mkdir -p "$w"
  local shapes=()
  if [ -f "$DIR/$f/shapes.txt" ]; then
    while read -r s; do [ -n "$s" ] && shapes+=(--shape "$s"); done < "$DIR/$f/shapes.txt"
  fi
  # --emit=ir prints the whole graph on stdout: only stderr is kept.
  timeout "$TMO" "$FUSEC_BIN/fusec" "$m" "${shapes[@]}" --emit=ir > /dev/null 2> "$w/import.log"
  echo $? > "$w/import.log.rc"
  step "$w/fp32.compile.log" "$FUSEC_BIN/fusec" "$m" "${shapes[@]}" $NVCC_FLAG -o "$w/art.fp32"
  step "$w/bf16.compile.log" "$FUSEC_BIN/fusec" "$m" "${shapes[@]}" $NVCC_FLAG --precision bf16 -o "$w/art.bf16"
  if [ "$CPU" = 1 ]; then
    step "$w/cpu.compile.log" "$FUSEC_BIN/fusec" "$m" "${shapes[@]}" --target cpu -o "$w/art.cpu"
  fi
  step "$w/reference.log" "$FUSEC_BIN/fusec-run" --reference "$m" --data "$DIR/$f/test_data_set_0"
}
export -f family_jobs step
export DIR WORK FUSEC_BIN TMO NVCC_FLAG CPU
echo "families: ${FAMS[*]}"
echo "binaries $FUSEC_BIN; GPU: $([ $GPU = 1 ] && echo yes || echo "none (fp32/bf16 runs SKIPPED)"); -j $JOBS; work $WORK"
T0=$(date +%s)
printf '%s\n' "${FAMS[@]}" | xargs -P "$JOBS" -I{} bash -c 'family_jobs "$1"; echo "  $1 compiled and referenced"' _ {}

# Phase 2, one at a time: the artifact runs.
for f in "${FAMS[@]}"; do
  w=$WORK/$f
  data=$DIR/$f/test_data_set_0
  if [ $GPU = 1 ]; then
    [ "$(cat "$w/fp32.compile.log.rc")" = 0 ] &&
      step "$w/fp32.run.log" "$FUSEC_BIN/fusec-run" "$w/art.fp32" --data "$data"
    [ "$(cat "$w/bf16.compile.log.rc")" = 0 ] &&
      step "$w/bf16.run.log" "$FUSEC_BIN/fusec-run" "$w/art.bf16" --data "$data" --precision bf16
  fi
  if [ "$CPU" = 1 ] && [ "$(cat "$w/cpu.compile.log.rc")" = 0 ]; then
    step "$w/cpu.run.log" "$FUSEC_BIN/fusec-run" "$w/art.cpu" --data "$data"
  fi
done

# first_error LOG: the line that says what went wrong (a line ending in ':',
# such as "model uses 2 unsupported ops:", gets the next line appended).
first_error() {
  awk '
    want { sub(/^[ \t]+/, ""); print line " " $0; found = 1; exit }
    tolower($0) ~ /error|unsupported|not implemented|not supported|abort|assert|segmentation|terminate|what\(\)/ {
      line = $0; if (line ~ /:[ \t]*$/) { want = 1; next } print line; found = 1; exit }
    END { if (want && !found) print line }
  ' "$1" 2>/dev/null | head -1 | cut -c1-400 | grep . && return
  { grep -m1 MISMATCH "$1" || grep -m1 '^FAIL' "$1" || grep -v '^\s*$' "$1" | tail -1; } 2>/dev/null | cut -c1-400
}
REFUSAL='unsupported|not implemented|not supported|unimplemented|refus|built without|must be static|must have static'
# verdict_compile LOG: PASS, TIMEOUT, REFUSED or FAIL for a fusec command.
verdict_compile() {
  local rc
  rc=$(cat "$1.rc" 2>/dev/null || echo missing)
  if [ "$rc" = 0 ]; then echo PASS
  elif [ "$rc" = 124 ]; then echo TIMEOUT
  elif [ "$rc" = 1 ] && grep -E '^fusec[a-z-]*: error' "$1" | grep -qiE "$REFUSAL"; then echo REFUSED
  else echo FAIL; fi
}
# verdict_run LOG: for fusec-run: PASS only with exit 0 and a final PASS
# line; REFUSED when it stopped on an "error: ... unsupported" before running.
verdict_run() {
  local rc
  rc=$(cat "$1.rc" 2>/dev/null || echo missing)
  if [ "$rc" = 0 ] && grep -q '^PASS' "$1"; then echo PASS
  elif [ "$rc" = 124 ]; then echo TIMEOUT
  elif [ "$rc" = 1 ] && grep -E '^fusec[a-z-]*: error' "$1" | grep -qiE "$REFUSAL"; then echo REFUSED
  else echo FAIL; fi
}

TABLE=$OUT/families.txt
DETAILS=$WORK/details.txt
: > "$DETAILS"
LAST_FAM="" LAST_ERR=""
note() {  # note FAMILY COLUMN VERDICT LOG; an error repeated within a family: "as above"
  [ "$3" = PASS ] && return
  case $3 in SKIPPED*) return ;; esac
  local e k
  e=$(first_error "$4")
  k=${e#fusec-run: }; k=${k#fusec: }
  if [ "$1" = "$LAST_FAM" ] && [ "$k" = "$LAST_ERR" ]; then e="(the same error as above)"; else
    LAST_FAM=$1 LAST_ERR=$k; fi
  printf '  %-16s %-9s %-8s %s\n' "$1" "$2" "$3" "$e" >> "$DETAILS"
}
{
  echo "fusec model families ($(date -u +%Y-%m-%dT%H:%MZ); $FUSEC_BIN; GPU: $([ $GPU = 1 ] && nvidia-smi --query-gpu=name --format=csv,noheader | head -1 || echo none))"
  printf '%-16s | %-8s | %-9s | %-18s | %-18s | %-8s\n' family imports reference fp32 bf16 cpu
  printf '%s\n' "-----------------+----------+-----------+--------------------+--------------------+---------"
} > "$TABLE"
for f in "${FAMS[@]}"; do
  w=$WORK/$f
  imp=$(verdict_compile "$w/import.log"); note "$f" imports "$imp" "$w/import.log"
  ref=$(verdict_run "$w/reference.log"); note "$f" reference "$ref" "$w/reference.log"
  cols=()
  for p in fp32 bf16 cpu; do
    if [ $p = cpu ] && [ "$CPU" = 0 ]; then cols+=(SKIPPED); continue; fi
    c=$(verdict_compile "$w/$p.compile.log")
    if [ $p = cpu ] && grep -q 'built without the cpu backend' "$w/cpu.compile.log" 2>/dev/null; then
      cols+=("SKIPPED"); continue
    fi
    if [ "$c" != PASS ]; then
      cols+=("$c"); note "$f" "$p" "$c (compile)" "$w/$p.compile.log"; continue
    fi
    if [ $p != cpu ] && [ $GPU = 0 ]; then cols+=("SKIPPED (compiles)"); continue; fi
    r=$(verdict_run "$w/$p.run.log"); cols+=("$r"); note "$f" "$p" "$r" "$w/$p.run.log"
  done
  printf '%-16s | %-8s | %-9s | %-18s | %-18s | %-8s\n' "$f" "$imp" "$ref" "${cols[0]}" "${cols[1]}" "${cols[2]}" >> "$TABLE"
done
for f in "${NOEXPORT[@]}"; do  # export_families.py wrote OUTDIR/<f>/FAILED
  printf '%-16s | export FAILED: %s\n' "$f" "$(grep -v '^\s*$' "$DIR/$f/FAILED" | tail -1 | cut -c1-200)" >> "$TABLE"
done
{
  echo
  if [ -s "$DETAILS" ]; then
    echo "first error line of each non-PASS (logs in $WORK/<family>/):"
    cat "$DETAILS"
  else
    echo "every column passed"
  fi
  echo
  echo "total $(( $(date +%s) - T0 )) s"
} >> "$TABLE"
echo
cat "$TABLE"
