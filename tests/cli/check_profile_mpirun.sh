#!/bin/sh
# `mpirun -np 2 vramlab train --profile DIR`: each rank writes its own DIR/rankR with the six
# files, nothing lands in DIR itself, and `vramlab profile` reads every rank's snapshot.
# Usage: check_profile_mpirun.sh MPIEXEC VRAMLAB OUT_DIR
set -eu
mpiexec=$1
vramlab=$2
dir=$3
rm -rf "$dir"
mkdir -p "$dir"
"$mpiexec" --allow-run-as-root --oversubscribe -np 2 "$vramlab" train --layers 1 --hidden 24 \
  --heads 2 --vocab 29 --seq 7 --batch 2 --steps 2 --device sim --zero 1 \
  --profile "$dir/prof" >"$dir/train.out" 2>&1 || {
  cat "$dir/train.out"
  echo "FAIL: mpirun vramlab train --profile exited non-zero"
  exit 1
}
for rank in rank0 rank1; do
  for file in snapshot.pickle snapshot.json trace.json ops.txt ops.json timeline.html; do
    if [ ! -s "$dir/prof/$rank/$file" ]; then
      echo "FAIL: $dir/prof/$rank/$file missing or empty"
      exit 1
    fi
  done
  "$vramlab" profile "$dir/prof/$rank/snapshot.pickle" --json >"$dir/$rank.json" || {
    echo "FAIL: vramlab profile could not read $rank's snapshot"
    exit 1
  }
done
if [ -e "$dir/prof/snapshot.pickle" ]; then
  echo "FAIL: a rank wrote into the shared directory itself"
  exit 1
fi
grep -q "profile of rank 0" "$dir/train.out" || {
  cat "$dir/train.out"
  echo "FAIL: rank 0 did not say where the profiles are"
  exit 1
}
echo "PASS: each of 2 mpirun ranks wrote and read back its own profile"
