#!/usr/bin/env bash
# The replica-kill tests (a replica killed mid-write; the lease holder killed under the
# writes the other replica sends it), N times in a row with every core kept busy (issue 40:
# "50 of 50 under load"): bash benchmarks/replicas/kill_loop.sh [N].
# Prints each run's outcome, the passes and the load; exits non-zero if any run failed.
set -u
runs=${1:-50}
tests=(
  'tests/object_storage/test_replicas.py::test_a_replica_killed_mid_write_loses_no_acknowledged_item'
  'tests/object_storage/test_replicas.py::test_the_holder_killed_under_forwarded_writes_loses_none_of_them'
)
cores=$(nproc)
burners=()
for _ in $(seq "$cores"); do
  (while :; do :; done) &
  burners+=($!)
done
trap 'kill "${burners[@]}" 2>/dev/null' EXIT
passed=0
for n in $(seq "$runs"); do
  if .venv/bin/python -m pytest -q -p no:cacheprovider "${tests[@]}" >"/tmp/kill_loop_$n.log" 2>&1; then
    passed=$((passed + 1))
    echo "run $n: passed (load $(cut -d' ' -f1-3 /proc/loadavg))"
  else
    echo "run $n: FAILED (log /tmp/kill_loop_$n.log)"
  fi
done
echo "kill loop: $passed of $runs passed with $cores busy loops beside, load $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$passed" -eq "$runs" ]
