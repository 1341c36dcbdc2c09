#!/usr/bin/env bash
# Compiles every node test that passes the reference interpreter with
# `fusec -o` and counts the results (the "compiled" figure of README.md).
#
#   test/conformance/compile_node_tests.sh BUILD_BIN ROOT [FILTER] [TARGET]
#
# BUILD_BIN: the folder with fusec, fusec-run and fusec-node-tests; ROOT: a
# node-test root (Debian's /usr/share/libonnx-testdata/data/node or the
# folder generate_node_tests.py writes); FILTER: a substring of test names
# (default all); TARGET: cuda (default: `--no-nvcc`, the sources and the
# manifest, no GPU needed), cuda-nvcc (builds the kernels too, then runs
# them with fusec-run: the GPU machine), cuda-nvcc-bf16 (the same with
# --precision bf16, checked at the bf16 model tolerance), or cpu (builds and
# runs with fusec-run against the test's data). Prints one line per test
# that fails and the totals; a failed run prints its error's first line.
# JOBS (environment, default 1) tests are compiled at once; the lines of
# failing tests are printed in name order whatever JOBS is. DEADLINE
# (environment, seconds since the epoch): tests not started by then are
# left out and counted as "not run (time)". SKIP_FIRST (environment, default
# 0): leave out the first N reference-passing tests (in name order), to
# finish a run that DEADLINE cut. SAMPLE (environment, default 1): keep
# every SAMPLE-th reference-passing test in name order (the first, the
# SAMPLE+1-th, ...), the CI sample of ctest onnx_node_tests_cpu. STRICT
# (environment, default 0): with 1, exit 1 when a compiled test fails its
# run (wrong numbers or a run-time error), and when fewer than MIN_COMPILED
# percent (environment, default 0) of the tests compile.
set -u
bin=$1 root=$2 filter=${3:-} target=${4:-cuda}
jobs=${JOBS:-1}
case $target in
  cuda|cuda-nvcc|cuda-nvcc-bf16|cpu) ;;
  *) echo "compile_node_tests.sh: unknown target '$target'" >&2; exit 2 ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin/fusec-node-tests" "$root" ${filter:+--filter=$filter} --verbose 2>/dev/null |
  awk '/^PASSED /{print $2}' | tail -n +$(( ${SKIP_FIRST:-0} + 1 )) |
  awk -v n="${SAMPLE:-1}" '(NR - 1) % n == 0' > "$work/passed"

# one_test NAME: compiles (and for targets that build kernels, runs) one
# test; prints "OK", "RAN", "REFUSED name: why" or "RUNFAIL name: why".
one_test() {
  local t=$1 out run_args=()
  if [ -n "${DEADLINE:-}" ] && [ "$(date +%s)" -ge "$DEADLINE" ]; then
    echo "LATE $t"
    return
  fi
  out=$(mktemp -d "$work/out.XXXXXX")
  local args=()
  case $target in
    cuda) args=(--no-nvcc) ;;
    cuda-nvcc) args=() ;;
    cuda-nvcc-bf16) args=(--precision bf16); run_args=(--atol 0.05 --rtol 0.05) ;;
    cpu) args=(--target cpu) ;;
  esac
  local msg r d bound=""
  msg=$("$bin/fusec" "$root/$t/model.onnx" "${args[@]}" -o "$out/a" 2>&1)
  local rc=$?
  if [ $rc -ne 0 ] && grep -q -- '--input-value' <<<"$msg"; then
    # fusec names the graph inputs whose values it needs at compile time
    # (axes, pads, scales, k, ... that the test feeds as inputs): bind them
    # to the values of the first data set, as a user deploying it would.
    local names n f
    names=$(grep -m1 'needs the value of graph input' <<<"$msg" |
            sed -E 's/.*graph inputs? (.*) at compile time.*/\1/' | grep -oE "'[^']*'" | tr -d "'")
    for n in $names; do
      f=$(bound_file "$root/$t/test_data_set_0" "$n") || continue
      args+=(--input-value "$n=@$f")
      bound="$bound $n"
    done
    msg=$("$bin/fusec" "$root/$t/model.onnx" "${args[@]}" -o "$out/a" 2>&1)
    rc=$?
  fi
  if [ $rc -eq 0 ]; then
    if [ "$target" != cuda ]; then
      for d in "$root/$t"/test_data_set_*; do
        if ! r=$("$bin/fusec-run" "$out/a" --data "$d" "${run_args[@]}" 2>&1) ||
           ! grep -q '^PASS' <<<"$r"; then
          echo "RUNFAIL $t: $(grep -v '^PASS' <<<"$r" | head -1)"
          rm -rf "$out"
          return
        fi
      done
      echo "RAN $t${bound:+ (bound:$bound)}"
    else
      echo "OK $t${bound:+ (bound:$bound)}"
    fi
  else
    echo "REFUSED $t: $(grep -m1 'error' <<<"$msg" || head -1 <<<"$msg")"
  fi
  rm -rf "$out"
}
# bound_file DIR NAME: the input_<i>.pb of DIR holding the tensor NAME.
bound_file() {
  python3 - "$1" "$2" <<'PY'
import glob, sys
import onnx
for f in sorted(glob.glob(sys.argv[1] + "/input_*.pb")):
    t = onnx.TensorProto()
    with open(f, "rb") as fh:
        t.ParseFromString(fh.read())
    if t.name == sys.argv[2]:
        print(f)
        sys.exit(0)
sys.exit(1)
PY
}
export -f one_test bound_file
export bin root target work DEADLINE

xargs -P "$jobs" -I{} bash -c 'one_test "$1"' _ {} < "$work/passed" | sort -k2 > "$work/results"
total=$(wc -l < "$work/passed")
ran=$(grep -c '^RAN ' "$work/results")
runfail=$(grep -c '^RUNFAIL ' "$work/results")
late=$(grep -c '^LATE ' "$work/results")
ok=$(( $(grep -c '^OK ' "$work/results") + ran + runfail ))
total=$((total - late))
grep -E '^(REFUSED|RUNFAIL) ' "$work/results"
bound=$(grep -cE '^(RAN|OK) .*\(bound:' "$work/results")
[ "$late" -gt 0 ] && echo "not run (time): $late tests (DEADLINE reached)"
if [ "$target" = cuda ]; then
  echo "compiled: $ok of $total reference-passing tests ($target); $bound of them with --input-value"
else
  echo "compiled: $ok of $total reference-passing tests ($target); $ran PASS fusec-run; $bound of them with --input-value"
fi
if [ "${STRICT:-0}" = 1 ]; then
  if [ "$runfail" -gt 0 ]; then
    echo "FAILED: $runfail compiled tests fail their run"
    exit 1
  fi
  if [ "$total" -gt 0 ] && [ $(( ok * 100 )) -lt $(( total * ${MIN_COMPILED:-0} )) ]; then
    echo "FAILED: $ok of $total compiled, fewer than ${MIN_COMPILED:-0}%"
    exit 1
  fi
fi
