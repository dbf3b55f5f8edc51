#!/usr/bin/env python3
"""A rank that dies or stops answering mid-step must not hang the others: `mpirun -np 3 vramlab
train` is started, rank 1 is sent SIGKILL (killed) or SIGSTOP (stopped: alive but silent) while
the ranks are training, and the job must end non-zero within 30 s with a message naming the lost
rank (and, for a stopped rank, the collective the others waited in: the communicator's watchdog,
VRAMLAB_COLLECTIVE_TIMEOUT=10 here), leaving no vramlab process behind, stopped ones included.

usage: mpi_train_faults.py VRAMLAB MPIEXEC [kill|stop]
"""
import os
import re
import signal
import subprocess
import sys
import time


vramlab, mpiexec = sys.argv[1], sys.argv[2]
fault = sys.argv[3] if len(sys.argv) > 3 else "kill"
if fault not in ("kill", "stop"):
    sys.exit(f"unknown fault {fault!r}: kill or stop")
cmd = [mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", "3", vramlab, "train",
       "--layers", "2", "--hidden", "64", "--heads", "4", "--vocab", "256", "--seq", "32",
       "--batch", "2", "--steps", "100000", "--device", "sim:1GiB", "--threads", "1",
       "--zero", "3"]
env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1", VRAMLAB_COLLECTIVE_TIMEOUT="10")
job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                       start_new_session=True)


def ranks():
    """pid of each vramlab rank of this job, by its OMPI_COMM_WORLD_RANK."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if not argv or not argv[0].endswith(b"vramlab") or b"100000" not in argv:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                for item in f.read().split(b"\0"):
                    if item.startswith(b"OMPI_COMM_WORLD_RANK="):
                        found[int(item.split(b"=")[1])] = int(pid)
        except OSError:
            continue
    return found


deadline = time.time() + 60
while len(ranks()) < 3:
    if time.time() > deadline or job.poll() is not None:
        job.kill()
        sys.exit(f"the 3 ranks did not start: {job.communicate()[0]}")
    time.sleep(0.2)
time.sleep(3)  # well inside the training loop
victim = ranks()[1]
os.kill(victim, signal.SIGKILL if fault == "kill" else signal.SIGSTOP)
killed_at = time.time()
try:
    out, _ = job.communicate(timeout=30)
except subprocess.TimeoutExpired:
    os.killpg(job.pid, signal.SIGKILL)
    out = job.communicate()[0]
    for pid in ranks().values():
        os.kill(pid, signal.SIGKILL)
    sys.exit(f"HANG: the job was still running 30 s after rank 1 (pid {victim}) got {fault}:\n{out}")
elapsed = time.time() - killed_at
print(out[-2000:])
print(f"job exited {job.returncode} {elapsed:.1f} s after rank 1 got {fault}")
if job.returncode == 0:
    sys.exit("the job exited 0 although a rank failed")
if "rank 1" not in out:
    sys.exit("the output does not name the lost rank ('rank 1')")
# A stopped rank is named by the watchdog of the ranks waiting for it, with the collective.
named = re.search(r"mpi (all_reduce|reduce_scatter|all_gather|broadcast|send|recv|barrier) of "
                  r"\d+ \w+ on rank [02] of 3, call #\d+: (.*; )?rank 1 did not (arrive|answer)", out)
if fault == "stop" and not named:
    sys.exit("no rank's message names rank 1 and the collective it waited in")
time.sleep(1)
left = ranks()
if left:
    for pid in left.values():
        os.kill(pid, signal.SIGKILL)
    sys.exit(f"ranks left running after the job ended: {left}")
print(f"ok: rank 1 ({fault}) was named, the job ended non-zero in {elapsed:.1f} s, "
      "nothing was left running")
