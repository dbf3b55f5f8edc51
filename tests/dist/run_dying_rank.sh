#!/bin/sh
# Runs mpi_dying_rank under mpirun with 3 ranks and checks what happens when rank 1 dies: mpirun
# exits non-zero within 30 s (an outer 60 s timeout catches a hang), its output names the lost
# rank as OpenMPI 4.1 does ("mpirun noticed that process rank 1 with PID ... exited on signal 9"),
# and no process of the job is left, not even a zombie.
# Usage: run_dying_rank.sh MPIEXEC BINARY
set -u
mpiexec=$1
binary=$2
name=$(basename "$binary")
fail() { echo "FAIL: $*"; exit 1; }

start=$(date +%s)
output=$(timeout -k 5 60 "$mpiexec" -np 3 "$binary" 2>&1)
status=$?
elapsed=$(( $(date +%s) - start ))
echo "$output"
echo "--- mpirun exited with $status after ${elapsed} s"

[ "$status" -ne 124 ] && [ "$status" -ne 137 -o "$elapsed" -lt 60 ] \
  || fail "mpirun did not end the job: the 60 s timeout killed it"
[ "$status" -ne 0 ] || fail "mpirun exited 0 although rank 1 died"
[ "$elapsed" -le 30 ] || fail "mpirun took ${elapsed} s (more than 30) to end the job"
echo "$output" | grep -Eq "process rank 1 with PID [0-9]+ on node .* exited on signal 9" \
  || fail "mpirun's output does not name rank 1 as killed by signal 9"

# Processes are reaped asynchronously: give them 5 s, then none may be left, zombies included.
for _ in 1 2 3 4 5 6 7 8 9 10; do
  left=$(ps -eo pid=,stat=,comm= | awk -v n="$name" '$3 == substr(n, 1, 15)')
  [ -z "$left" ] && break
  sleep 0.5
done
[ -z "$left" ] || fail "processes of the job are left: $left"
echo "PASS: rank 1's death ended the job in ${elapsed} s, named by mpirun, nothing left behind"
