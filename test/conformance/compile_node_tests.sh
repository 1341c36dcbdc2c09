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
# them with fusec-run: the GPU machine), or cpu (builds and runs with
# fusec-run against the test's data). Prints one line per test that fails
# and the totals; a failed run prints its error's first line.
set -u
bin=$1 root=$2 filter=${3:-} target=${4:-cuda}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin/fusec-node-tests" "$root" ${filter:+--filter=$filter} --verbose 2>/dev/null |
  awk '/^PASSED /{print $2}' > "$work/passed"
total=0 ok=0 ran=0
while read -r t; do
  total=$((total + 1))
  out="$work/out"
  rm -rf "$out"
  case $target in
    cuda) args=(--no-nvcc) ;;
    cuda-nvcc) args=() ;;
    cpu) args=(--target cpu) ;;
  esac
  if msg=$("$bin/fusec" "$root/$t/model.onnx" "${args[@]}" -o "$out" 2>&1); then
    ok=$((ok + 1))
    if [ "$target" != cuda ]; then
      for d in "$root/$t"/test_data_set_*; do
        if ! r=$("$bin/fusec-run" "$out" --data "$d" 2>&1) || ! grep -q '^PASS' <<<"$r"; then
          echo "RUNFAIL $t: $(grep -v '^PASS' <<<"$r" | head -1)"
          continue 2
        fi
      done
      ran=$((ran + 1))
    fi
  else
    echo "REFUSED $t: $(grep -m1 'error' <<<"$msg" || head -1 <<<"$msg")"
  fi
done < "$work/passed"
if [ "$target" = cuda ]; then
  echo "compiled: $ok of $total reference-passing tests ($target)"
else
  echo "compiled: $ok of $total reference-passing tests ($target); $ran PASS fusec-run"
fi
