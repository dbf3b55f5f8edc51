#!/bin/sh
# Runs BINARY ARGS under mpirun with 3 ranks, where one rank fails (dies, stops answering, calls
# another collective), and checks what the others do: mpirun exits non-zero within 30 s (an outer
# 60 s timeout catches a hang), the output matches EXPECT (an extended regex naming the rank and
# the collective), and no process of the job is left, not even a zombie.
# Usage: run_fault.sh MPIEXEC EXPECT BINARY [ARGS...]
# (the binary prints "rank R pid P" for every rank before the fault, for the last check)
set -u
mpiexec=$1
expect=$2
shift 2
fail() { echo "FAIL: $*"; exit 1; }

start=$(date +%s)
output=$(timeout -k 5 60 "$mpiexec" -np 3 "$@" 2>&1)
status=$?
elapsed=$(( $(date +%s) - start ))
echo "$output"
echo "--- mpirun exited with $status after ${elapsed} s"

[ "$status" -ne 124 ] && [ "$status" -ne 137 -o "$elapsed" -lt 60 ] \
  || fail "mpirun did not end the job: the 60 s timeout killed it"
[ "$status" -ne 0 ] || fail "mpirun exited 0 although a rank failed"
[ "$elapsed" -le 30 ] || fail "mpirun took ${elapsed} s (more than 30) to end the job"
echo "$output" | grep -Eq -- "$expect" || fail "the output does not match '$expect'"

# Every rank printed its pid before the loop. They are reaped asynchronously: give them 5 s, then
# none may be left, zombies and stopped ranks included.
pids=$(echo "$output" | sed -n 's/^rank [0-9]* pid \([0-9]*\)$/\1/p')
[ "$(echo "$pids" | wc -w)" -eq 3 ] || fail "expected 3 'rank R pid P' lines, got: $pids"
for _ in 1 2 3 4 5 6 7 8 9 10; do
  left=$(ps -o pid=,stat=,comm= -p "$(echo $pids | tr ' ' ',')")
  [ -z "$left" ] && break
  sleep 0.5
done
[ -z "$left" ] || fail "processes of the job are left: $left"
echo "PASS: the job ended in ${elapsed} s, non-zero, naming the fault ('$expect'), nothing left behind"
