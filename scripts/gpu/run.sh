#!/usr/bin/env bash
# scripts/gpu/run.sh - the one script to run per session on the GPU machine.
#
# On the build machine first: scripts/gpu/stage.sh (builds build-gpu/, stages
# binaries, libraries and shared models into .gpu/). Then, with the device
# tool, from the repo root there:  carry [".gpu"], command
#   bash scripts/gpu/run.sh
# (carrying build-gpu/bin and build-gpu/lib as well also works).
#
# Steps, each under a time cap so the whole stays within ~9 minutes
# (FUSEC_GPU_BUDGET_S, default 540):
#   1. nvidia-smi;
#   2. GPU test binaries (RuntimeTest, CodegenGpuTest, ArtifactGpuTest,
#      AttentionKernelTest and AttentionCodegenTest when staged);
#   3. compute-sanitizer memcheck, racecheck and initcheck over real launches
#      of every kernel kind (chosen cases of each test binary);
#   4. all shared models compiled in fp32, bf16 and bf16 with --arch sm_90a (fusec -o, in parallel),
#      run and checked (fusec-run OUT --data DIR --bench N), then a few under
#      memcheck;
#   4b. dynamic shapes: every shared model compiled once with its symbolic
#      dims left dynamic (1..64) and checked at three shapes, fp32 and bf16
#      (test/run_shared_model.py ... cuda dynamic), one under memcheck;
#   5. bench/e2e/run_e2e.sh (GPT-2 small, BERT-base vs PyTorch);
#   6. bench/attention's benchmark, when present;
#   7. model families (scripts/families: real-world exports of YOLOv8,
#      DBNet, MobileNetV3, MTCNN, Silero VAD, int8 CRNN, BLOOM, OPT,
#      DeBERTa-v2, ... with torch on the device; imports / reference /
#      fp32 / bf16 per family, $OUT/families.txt); last, so that it takes
#      what is left of the budget: for the whole step alone, run with
#      --skip tests,sanitizer,models,e2e,attention;
#   8. $OUT/summary.txt (also printed last).
# Output: $OUT/run.log (everything), $OUT/summary.txt, $OUT/e2e.json; OUT
# defaults to ./gpu-out. Options: --skip STEP[,STEP] with STEP in tests,
# sanitizer, models, dynamic, e2e, attention, families; FUSEC_E2E_ARGS passes options to
# e2e.py, FUSEC_FAMILIES_ARGS to scripts/families/export_families.py.
set -uo pipefail
source "$(dirname "$0")/env.sh"
cd "$FUSEC_ROOT" || exit 1

OUT=${OUT:-$FUSEC_ROOT/gpu-out}
mkdir -p "$OUT"
WORK=${FUSEC_GPU_WORK:-/tmp/fusec-gpu}
mkdir -p "$WORK"
BUDGET=${FUSEC_GPU_BUDGET_S:-540}
T0=$(date +%s)
SKIP=","
while [ $# -gt 0 ]; do
  case $1 in
    --skip) SKIP=",$2,"; shift 2 ;;
    --skip=*) SKIP=",${1#--skip=},"; shift ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
skipped() { case $SKIP in *",$1,"*) return 0 ;; esac; return 1; }

exec > >(tee "$OUT/run.log") 2>&1
TEE_PID=$!
SUMMARY=$WORK/summary.txt
: > "$SUMMARY"
sum() { printf '%s\n' "$*" >> "$SUMMARY"; }
elapsed() { echo $(( $(date +%s) - T0 )); }
# cap SECONDS: the smaller of SECONDS and what is left of the budget (>= 10).
cap() {
  local left=$(( BUDGET - $(elapsed) ))
  local c=$1
  [ "$left" -lt "$c" ] && c=$left
  [ "$c" -lt 10 ] && c=10
  echo "$c"
}
section() { echo; echo "=== [$(elapsed) s] $*"; }

section "device"
nvidia-smi || echo "nvidia-smi failed"
echo "root $FUSEC_ROOT, binaries $FUSEC_BIN"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
echo "nvcc: $(command -v nvcc || echo none); compute-sanitizer: $(command -v compute-sanitizer || echo none)"
sum "fusec GPU session $(date -u +%Y-%m-%dT%H:%MZ) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
sum "commit $(cat "$FUSEC_ROOT/.gpu/COMMIT" 2>/dev/null ||
              git -C "$FUSEC_ROOT" log -1 --format=%h 2>/dev/null || echo unknown)"
sum ""

# The attention tests compile their kernels with nvcc into this cache in the
# plain run; the sanitizer runs reuse them (nvcc run from a process under
# memcheck/initcheck crashed the test: rc 139).
export FUSEC_ATTN_KERNEL_CACHE=$WORK/attention-kernels
TESTS=()
for t in RuntimeTest RuntimeRobustnessTest CodegenGpuTest ArtifactGpuTest DynamicGpuTest AttentionKernelTest AttentionCodegenTest; do
  [ -x "$FUSEC_BIN/$t" ] && TESTS+=("$t")
done

# gtest_result LOG: "N passed, M failed, K skipped" from a gtest log.
gtest_result() {
  local p f s
  p=$(grep -Eo '^\[  PASSED  \] [0-9]+' "$1" | grep -Eo '[0-9]+$' | tail -1)
  f=$(grep -Eo '^\[  FAILED  \] [0-9]+ test' "$1" | grep -Eo '[0-9]+' | tail -1)
  s=$(grep -Eo '^\[  SKIPPED \] [0-9]+ test' "$1" | grep -Eo '[0-9]+' | tail -1)
  echo "${p:-0} passed, ${f:-0} failed, ${s:-0} skipped"
}

# --- 2. GPU tests -----------------------------------------------------------
if ! skipped tests; then
  section "GPU tests"
  sum "tests:"
  for t in "${TESTS[@]}"; do
    log=$WORK/$t.log
    timeout "$(cap 150)" "$FUSEC_BIN/$t" > "$log" 2>&1
    rc=$?
    grep -E '^\[  (FAILED|SKIPPED) |^\[==========\]|^\[  PASSED' "$log" | sed "s/^/  $t: /"
    [ $rc -ne 0 ] && tail -40 "$log" | sed "s/^/  $t| /"
    verdict=PASS
    [ $rc -ne 0 ] && verdict="FAIL (rc $rc$([ $rc -eq 124 ] && echo ', timed out'))"
    echo "$t: $verdict"
    sum "  $(printf '%-22s %-24s %s' "$t" "$verdict" "$(gtest_result "$log")")"
  done
fi

# --- 3. compute-sanitizer ---------------------------------------------------
# memcheck, racecheck and initcheck over real launches of every kernel kind:
# elementwise, layout, row reductions (f32 and bf16 rows), the tiled
# attention paths (mma.sync, sm_90a TMA + wgmma, fp32 SIMT, masks, one-row
# and padded cases),
# the runtime's own steps and threads; a whole model follows in step 4.
sanitizer_filter() {  # sanitizer_filter BINARY TOOL: the gtest filter to run under TOOL
  case $1 in
    RuntimeTest) echo '*' ;;  # small: all of it
    RuntimeRobustnessTest)  # not the 10^4-run soak; racecheck is too slow for 4 x 200 runs
      if [ "$2" = racecheck ]; then echo '*Twice*'; else echo '*Threads*:*Twice*'; fi ;;
    CodegenGpuTest)
      local c=Corpus/GpuRunTest.MatchesInterpreter
      echo "$c/unary:$c/layout:$c/concat:$c/reduce:$c/ln_stats:$c/softmax_f32_1000:$c/softmax_bf16_4096:$c/softmax_bf16_7:$c/float8:$c/u64_ops:$c/bool_int_minmax:$c/empty_tensors:$c/mod_float" ;;
    ArtifactGpuTest) echo '*mlp_ln_gelu*:*gpt2_tiny*' ;;
    DynamicGpuTest) echo "*gpt2_tiny*" ;;
    AttentionKernelTest)
      local c=Cases/AttentionKernelTest.MatchesCpuReferenceOnGpu
      # sm80 and sm90a (TMA + wgmma, ping-pong + overlap) paths alike.
      echo "$c/bf16_plain_d64:$c/bf16_causal_d64_s200:$c/bf16_padding_mask:$c/bf16_window256_d128:$c/f32_s1:$c/bf16_s7:$c/*key_mask*:$c/sm90a_bf16_plain_d64:$c/sm90a_bf16_causal_d64_s200:$c/sm90a_ppov_bf16_causal_d64_s200:$c/sm90a_bf16_window256_d128:$c/sm90a_bf16_s7:$c/sm90a_bf16_plain_d256:$c/sm90a_ppov_bf16_sq_ne_sk" ;;
    AttentionCodegenTest)  # memcheck: all; the slower tools: one case of each mask and tile path
      local c=Variants/AttentionGpu.MatchesInterpreter
      if [ "$2" = memcheck ]; then echo '*'; else
        echo "$c/plain:$c/causal:$c/padding_mask:$c/fully_masked_rows:$c/bf16_causal_gqa:$c/head_dim_80:$c/sq_ne_sk"; fi ;;
    *) echo '*' ;;
  esac
}
if ! skipped sanitizer && command -v compute-sanitizer > /dev/null; then
  for tool in memcheck racecheck initcheck; do
    section "compute-sanitizer $tool (real launches of each kernel kind)"
    sum "$tool:"
    for t in "${TESTS[@]}"; do
      [ "$tool" != memcheck ] && { [ "$t" = ArtifactGpuTest ] || [ "$t" = DynamicGpuTest ]; } && continue  # nvcc-heavy; model below
      filter=$(sanitizer_filter "$t" "$tool")
      log=$WORK/$t.$tool.log
      # application-only: the tests run nvcc as child processes, which need
      # no instrumenting (the default, all processes, made the slower tools
      # time out on the nvcc-compiling tests).
      timeout "$(cap 100)" compute-sanitizer --tool "$tool" --error-exitcode 99 \
        --target-processes application-only \
        --print-limit 20 "$FUSEC_BIN/$t" --gtest_filter="$filter" > "$log" 2>&1
      rc=$?
      errs=$(grep -Eo '(ERROR|RACECHECK) SUMMARY: [0-9]+ (error|hazard)' "$log" | grep -Eo '[0-9]+' | tail -1)
      ran=$(grep -Eo '^\[  PASSED  \] [0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1)
      verdict="clean (${ran:-0} tests)"
      [ $rc -eq 99 ] && verdict="ERRORS (${errs:-?})"
      [ $rc -eq 124 ] && verdict="timed out"
      [ $rc -ne 0 ] && [ $rc -ne 99 ] && [ $rc -ne 124 ] && verdict="test failed (rc $rc)"
      echo "$t [$tool]: $verdict"
      [ $rc -ne 0 ] && grep -E '=========|FAILED' "$log" | head -30 | sed "s/^/  $t| /"
      sum "  $(printf '%-22s %-24s %s' "$t" "$verdict" "filter $filter")"
    done
  done
fi

# --- 4. shared models, fp32 and bf16 ---------------------------------------
MODELS_DIR=$FUSEC_SHARED_MODELS
if ! skipped models && [ -d "$MODELS_DIR" ]; then
  section "shared models: compile (parallel), run, check"
  BF16_TOL=${FUSEC_BF16_TOL:---atol 0.05 --rtol 0.05}
  python3 - "$MODELS_DIR" > "$WORK/model-shapes.txt" <<'PY'
import json, os, sys
d = sys.argv[1]
man = json.load(open(os.path.join(d, "manifest.json")))
for name in sorted(os.listdir(d)):
    if not os.path.exists(os.path.join(d, name, "model.onnx")):
        continue
    ins = man.get(name, {}).get("inputs", {})
    flags = " ".join("--shape %s=%s" % (k, "x".join(str(x) for x in v)) for k, v in ins.items())
    print(name, flags)
PY
  mkdir -p "$WORK/models"
  # One compile job per line: name precision flags...
  while read -r name flags; do
    # bf16a: bf16 with --arch sm_90a (the TMA + wgmma attention kernel).
    for p in fp32 bf16 bf16a; do echo "$name $p $flags"; done
  done < "$WORK/model-shapes.txt" > "$WORK/compile-jobs.txt"
  compile_one() {
    local name=$1 p=$2; shift 2
    local out=$WORK/models/$name.$p t0 t1 rc
    t0=$(date +%s%N)
    local prec=$p arch=()
    [ "$p" = bf16a ] && { prec=bf16; arch=(--arch sm_90a); }
    "$FUSEC_BIN/fusec" "$FUSEC_SHARED_MODELS/$name/model.onnx" "$@" --precision "$prec" "${arch[@]}" \
      -o "$out" > "$out.compile.log" 2>&1
    rc=$?
    t1=$(date +%s%N)
    echo "$rc $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", (b - a) / 1e9}')" \
      > "$out.compile.rc"
  }
  export -f compile_one
  export WORK FUSEC_BIN FUSEC_SHARED_MODELS
  timeout "$(cap 150)" xargs -P 8 -L 1 bash -c 'compile_one "$@"' _ < "$WORK/compile-jobs.txt"
  sum "shared models (fusec-run OUT --data DIR --bench 50; bf16 with $BF16_TOL):"
  sum "  $(printf '%-20s %-5s %-28s %8s %10s' model prec result compile_s p50_ms)"
  while read -r name p flags; do
    out=$WORK/models/$name.$p
    read -r crc csec < "$out.compile.rc" 2>/dev/null || { crc=timeout; csec='?'; }
    if [ "$crc" != 0 ]; then
      msg=$(grep -v '^$' "$out.compile.log" 2>/dev/null | tail -1 | cut -c1-160)
      if echo "$msg" | grep -qi 'not implemented'; then
        result="SKIP (not implemented)"
      else
        result="FAIL (compile)"
      fi
      echo "$result $name $p: $msg"
      sum "  $(printf '%-20s %-5s %-28s %8s %10s' "$name" "$p" "$result" "$csec" -)"
      continue
    fi
    tol=""
    [ "$p" != fp32 ] && tol=$BF16_TOL
    # shellcheck disable=SC2086
    timeout "$(cap 60)" "$FUSEC_BIN/fusec-run" "$out" --data "$MODELS_DIR/$name/test_data_set_0" \
      --bench 50 $tol > "$out.run.log" 2>&1
    rc=$?
    sed "s/^/  $name.$p| /" "$out.run.log" | grep -Ev '^\s*$' | tail -8
    p50=$(sed -n 's/.*latency ms: p50 \([0-9.]*\).*/\1/p' "$out.run.log" | head -1)
    if [ $rc -eq 0 ] && grep -q '^PASS' "$out.run.log"; then result=PASS; else result="FAIL (rc $rc)"; fi
    echo "$result $name $p (compile ${csec}s, p50 ${p50:-?} ms)"
    sum "  $(printf '%-20s %-5s %-28s %8s %10s' "$name" "$p" "$result" "$csec" "${p50:--}")"
  done < "$WORK/compile-jobs.txt"

  if ! skipped sanitizer && command -v compute-sanitizer > /dev/null; then
    section "compute-sanitizer on whole generated models (fusec-run, no bench)"
    sum "sanitizers on generated artifacts:"
    # initcheck runs on f32 artifacts only: in bf16 it reports reads of GEMM
    # outputs as uninitialised (seen on gpt2_tiny.bf16: the Split kernel
    # reading the c_attn GEMM's D), because it does not see the stores of
    # cuBLASLt's sm_90 bf16 kernels. The same artifact PASSes from a
    # NaN-poisoned arena (step 4: fusec-run poisons by default), which it
    # could not if any element it reads were unwritten.
    for a in gpt2_tiny.fp32 bert_tiny.fp32 vit_tiny_dynamo.fp32 gpt2_tiny.bf16 llama_tiny_dynamo.bf16 \
             racecheck:gpt2_tiny.bf16 initcheck:gpt2_tiny.fp32 initcheck:llama_tiny_dynamo.fp32 \
             racecheck:attn_alibi.fp32; do
      tool=memcheck
      case $a in *:*) tool=${a%%:*}; a=${a#*:} ;; esac
      [ -f "$WORK/models/$a/manifest.json" ] || continue
      name=${a%.*}
      log=$WORK/models/$a.$tool.log
      tol=""
      [ "${a##*.}" = bf16 ] && tol=$BF16_TOL
      # shellcheck disable=SC2086
      # initcheck: no poison fill (it would count as initialising the arena).
      np=""
      [ "$tool" = initcheck ] && np=--no-poison
      timeout "$(cap 60)" compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 10 \
        "$FUSEC_BIN/fusec-run" "$WORK/models/$a" --data "$MODELS_DIR/$name/test_data_set_0" \
        $tol $np > "$log" 2>&1
      rc=$?
      verdict=clean
      [ $rc -eq 99 ] && verdict="ERRORS"
      [ $rc -eq 124 ] && verdict="timed out"
      [ $rc -ne 0 ] && [ $rc -ne 99 ] && [ $rc -ne 124 ] && verdict="run failed (rc $rc)"
      echo "$a [$tool]: $verdict"
      [ $rc -ne 0 ] && grep -E '=========' "$log" | head -20 | sed "s/^/  $a| /"
      sum "  $(printf '%-28s %-10s %s' "$a" "$tool" "$verdict")"
    done
  fi
fi

# --- 4b. dynamic shapes: each shared model compiled once, three shapes --------
if ! skipped dynamic && [ -d "$MODELS_DIR" ]; then
  section "dynamic shapes: each shared model compiled once (no --shape), run at three shapes"
  sum "dynamic shapes (test/run_shared_model.py ... cuda dynamic: test data + two generated shapes):"
  dyn_one() {
    local name=$1 p=$2
    local out=$WORK/dynamic/$name.$p tol=""
    [ "$p" != fp32 ] && tol=$BF16_TOL
    FUSEC_RUN_ARGS="$tol" python3 test/run_shared_model.py "$FUSEC_BIN/fusec" "$FUSEC_BIN/fusec-run" \
      "$FUSEC_SHARED_MODELS/$name" "$p" "$out" cuda dynamic > "$out.log" 2>&1
    echo $? > "$out.rc"
  }
  export -f dyn_one
  BF16_TOL=${FUSEC_BF16_TOL:---atol 0.05 --rtol 0.05}
  export BF16_TOL WORK FUSEC_BIN FUSEC_SHARED_MODELS
  mkdir -p "$WORK/dynamic"
  for f in "$MODELS_DIR"/*/model.onnx; do
    for p in fp32 bf16; do echo "$(basename "$(dirname "$f")") $p"; done
  done > "$WORK/dynamic-jobs.txt"
  timeout "$(cap 200)" xargs -P 8 -L 1 bash -c 'dyn_one "$@"' _ < "$WORK/dynamic-jobs.txt"
  while read -r name p; do
    out=$WORK/dynamic/$name.$p
    rc=$(cat "$out.rc" 2>/dev/null || echo timeout)
    sed "s/^/  dyn.$name.$p| /" "$out.log" 2>/dev/null | grep -E 'PASS|FAIL|error|rror:' | tail -6
    if [ "$rc" = 0 ]; then result=PASS; else result="FAIL (rc $rc)"; fi
    echo "$result dynamic $name $p"
    sum "  $(printf '%-20s %-5s %s' "$name" "$p" "$result")"
  done < "$WORK/dynamic-jobs.txt"
  if ! skipped sanitizer && command -v compute-sanitizer > /dev/null && [ -f "$WORK/dynamic/gpt2_tiny.bf16/manifest.json" ]; then
    log=$WORK/dynamic/gpt2_tiny.bf16.memcheck.log
    # shellcheck disable=SC2086
    timeout "$(cap 90)" compute-sanitizer --tool memcheck --error-exitcode 99 --print-limit 10 \
      "$FUSEC_BIN/fusec-run" "$WORK/dynamic/gpt2_tiny.bf16" --data "$MODELS_DIR/gpt2_tiny/test_data_set_0" \
      --data "$WORK/dynamic/gpt2_tiny.bf16.data_a" --data "$WORK/dynamic/gpt2_tiny.bf16.data_b" $BF16_TOL > "$log" 2>&1
    rc=$?
    verdict=clean
    [ $rc -eq 99 ] && verdict=ERRORS
    [ $rc -ne 0 ] && [ $rc -ne 99 ] && verdict="run failed (rc $rc)"
    echo "dynamic gpt2_tiny.bf16 [memcheck, three shapes]: $verdict"
    [ $rc -ne 0 ] && grep -E '=========|FAIL' "$log" | head -20
    sum "  $(printf '%-28s %-10s %s' "dynamic gpt2_tiny.bf16" memcheck "$verdict")"
  fi
fi

# --- 5. end to end ----------------------------------------------------------
if ! skipped e2e && [ -f bench/e2e/run_e2e.sh ]; then
  section "bench/e2e"
  # shellcheck disable=SC2086
  OUT=$OUT timeout "$(cap 330)" bash bench/e2e/run_e2e.sh --work "$WORK/e2e" ${FUSEC_E2E_ARGS:-}
  rc=$?
  sum "e2e (bench/e2e, rc $rc$([ $rc -eq 124 ] && echo ', timed out')):"
  if [ -f "$OUT/e2e.json" ]; then
    python3 - "$OUT/e2e.json" >> "$SUMMARY" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = d["ceilings"]
print("  ceilings: copy %.0f GB/s, cuBLAS bf16 %.0f TFLOP/s" % (c["copy_gbps"], c["gemm_tflops"]))
print("  %-5s %-5s %8s %8s %8s %8s %10s %8s %9s %s" % ("model", "prec", "fusec", "eager", "sdpa",
      "compile", "fusec/comp", "floor", "compile_s", "numerics"))
for r in d["results"]:
    if "error" in r:
        print("  %-5s ERROR %s" % (r["model"], r["error"][:150]))
        continue
    t = r["times"]
    comp = t.get("compile", {}).get("ms")
    print("  %-5s %-5s %8.3f %8.3f %8.3f %8s %10s %8.3f %9.1f %s" % (
        r["model"], r["precision"], t["fusec"]["ms"], t["eager"]["ms"], t["sdpa"]["ms"],
        "%.3f" % comp if comp else "-", "%.2f" % (t["fusec"]["ms"] / comp) if comp else "-",
        r["floor_ms"], r["compile_s"], "PASS" if r["numerics_ok"] else "FAIL"))
PY
  fi
fi

# --- 6. attention benchmark (owned by the attention engineer) ---------------
if ! skipped attention; then
  if [ -x bench/attention/run.sh ] || [ -f bench/attention/run.sh ]; then
    section "bench/attention/run.sh"
    OUT=$OUT timeout "$(cap 120)" bash bench/attention/run.sh
    rc=$?
    sum "attention (bench/attention/run.sh): rc $rc"
  elif [ -f bench/attention/bench_attention.py ] && [ -x "$FUSEC_BIN/fusec-emit-attention" ]; then
    section "bench/attention/bench_attention.py"
    rm -rf "$WORK/attention" && mkdir -p "$WORK/attention"
    "$FUSEC_BIN/fusec-emit-attention" "$WORK/attention" > /dev/null &&
      timeout "$(cap 150)" python3 bench/attention/bench_attention.py "$WORK/attention" \
        > "$WORK/attention.log" 2>&1
    rc=$?
    cat "$WORK/attention.log" 2>/dev/null
    sum "attention (bench/attention/bench_attention.py): rc $rc$([ $rc -eq 124 ] && echo ', timed out')"
    [ -f "$WORK/attention.log" ] && tail -15 "$WORK/attention.log" | sed 's/^/  /' >> "$SUMMARY"
  fi
fi

# --- 7. model families (scripts/families) -----------------------------------
if ! skipped families && [ -f scripts/families/export_families.py ]; then
  section "model families: export (torch), then scripts/families/check_families.sh"
  FAM=$WORK/families
  rm -rf "$FAM" && mkdir -p "$FAM"
  # shellcheck disable=SC2086
  timeout "$(cap 120)" python3 scripts/families/export_families.py --out "$FAM/models" \
    ${FUSEC_FAMILIES_ARGS:-} > "$FAM/export.log" 2>&1
  rc=$?
  cat "$FAM/export.log"
  cp "$FAM/export.log" "$OUT/families-export.log"
  sum "model families (scripts/families; export rc $rc; table in \$OUT/families.txt):"
  grep -E '^\S+ +(exported|failed|skipped)' "$FAM/export.log" | grep -v ' exported ' | sed 's/^/  export: /' >> "$SUMMARY"
  if ls "$FAM"/models/*/model.onnx > /dev/null 2>&1; then
    left=$(cap 400)
    OUT=$OUT FUSEC_BIN=$FUSEC_BIN FAMILIES_TIMEOUT_S=$(( left < 240 ? left : 240 )) \
      timeout "$left" bash scripts/families/check_families.sh -j 8 --work "$FAM/work" "$FAM/models"
    rc=$?
    if [ -f "$OUT/families.txt" ]; then
      sed 's/^/  /' "$OUT/families.txt" >> "$SUMMARY"
    else
      sum "  check_families.sh: rc $rc$([ $rc -eq 124 ] && echo ', timed out'), no table"
    fi
  fi
fi

sum ""
sum "total $(elapsed) s (budget $BUDGET s)"
cp "$SUMMARY" "$OUT/summary.txt"
section "summary ($OUT/summary.txt)"
cat "$SUMMARY"
exec 1>&- 2>&-
wait "$TEE_PID" 2>/dev/null || true
