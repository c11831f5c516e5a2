#!/usr/bin/env python3
"""Data-parallel `tandem train --distributed` over MPI on CPU ranks,
started by Open MPI's own `mpirun` as users start it:

  - 2 ranks with --batch 32 give, step by step for 20 steps, the losses of
    one process with --batch 64 (the same global batches; LeNet-5, which
    has no batch norm, whose statistics are each rank's own);
  - a run checkpointed by 2 ranks at step 10 and resumed by one process
    (the same global batch) continues with the losses of a run never
    stopped;
  - a rank killed mid-run (SIGKILL) ends the whole run within seconds,
    with a non-zero status and a message naming the rank: no hang;
  - an Error on one rank (rank 0 cannot write its checkpoint) ends every
    rank, the message naming the rank and the file.

With --device cuda (on a GPU host; the ranks share its GPUs):
  - one rank sums through NCCL and gives the losses of a run without
    --distributed;
  - 2 ranks x 32 give the losses of 1 process x 64 in fp32, in fp16 with
    loss scaling (the same steps skipped on both), and with the CPU/GPU
    split (--device hetero), through NCCL where each rank has a GPU of its
    own, else through MPI on the host.

  train_distributed.py TANDEM_BINARY [--device cuda]
  exit 0: passed, 1: failures, 77: skipped
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tag_cli  # noqa: E402  (its check() and failure count)

check = tag_cli.check
FASHION = os.path.join(os.environ.get("TANDEM_FASHION_MNIST_DIR") or "/usr/share/datasets/fashion-mnist",
                       "train-images-idx3-ubyte.gz")
# Open MPI refuses root unless told (CI runs as root); on a 2-core machine
# two ranks plus the loader threads oversubscribe; copies through shared
# memory without CMA, which containers often forbid.
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none", OMPI_MCA_rmaps_base_oversubscribe="1")
COMMON = ["train", "--arch", "lenet5", "--data", "fashion-mnist", "--limit-train", "4096",
          "--limit-test", "256", "--threads", "1", "--workers", "1", "--seed", "7", "--log-steps"]


def run(args, ranks=0, timeout=600):
    cmd = ([shutil.which("mpirun"), "-np", str(ranks)] if ranks else []) + [TANDEM, *args, "--epochs", "1"]
    return subprocess.run(cmd, capture_output=True, text=True, env=MPI_ENV, timeout=timeout)


def losses(log):
    return {e["step"]: e["loss"] for e in map(json.loads, open(log)) if "step" in e}


def skipped(log):
    return {e["step"]: e["skipped_steps"] for e in map(json.loads, open(log)) if "step" in e}


def same_losses(a, b, steps, what, rtol=1e-4):
    worst = max((abs(a[s] - b[s]) / max(abs(a[s]), 1e-6) for s in steps if s in a and s in b), default=float("inf"))
    ok = all(s in a and s in b for s in steps) and worst <= rtol
    check(ok, "%s: steps %d-%d, largest relative difference %.2e (at most %.0e)" % (what, min(steps), max(steps),
                                                                                  worst, rtol))


def two_ranks_match_one_process(d):
    one, two = os.path.join(d, "one.jsonl"), os.path.join(d, "two.jsonl")
    r = run(COMMON + ["--batch", "64", "--max-steps", "20", "--log", one])
    if not check(r.returncode == 0, "one process trains 20 steps: " + r.stderr[-400:]):
        return None
    r = run(COMMON + ["--batch", "32", "--max-steps", "20", "--log", two, "--distributed"], ranks=2)
    if not check(r.returncode == 0, "mpirun -np 2 trains 20 steps: " + r.stderr[-600:]):
        return None
    check("64 (2 ranks x 32)" in r.stdout, "rank 0 alone prints the plan, with the global batch")
    check(r.stdout.count("training lenet5") == 1, "one plan line for two ranks")
    a = losses(one)
    same_losses(a, losses(two), range(1, 21), "2 ranks x 32 against 1 process x 64")
    return a


def resumes_on_fewer_ranks(d, uninterrupted):
    ckpt, first, rest = (os.path.join(d, n) for n in ("c.ckpt", "first.jsonl", "rest.jsonl"))
    r = run(COMMON + ["--batch", "32", "--max-steps", "10", "--checkpoint", ckpt, "--log", first, "--distributed"],
            ranks=2)
    if not check(r.returncode == 0 and os.path.exists(ckpt), "2 ranks checkpoint at step 10: " + r.stderr[-400:]):
        return
    r = run(COMMON + ["--batch", "64", "--max-steps", "20", "--checkpoint", ckpt, "--resume", "--log", rest])
    if not check(r.returncode == 0, "one process resumes the 2-rank checkpoint: " + r.stderr[-400:]):
        return
    check("at epoch 1, batch 10 (step 10)" in r.stdout, "resumed at batch 10: " + r.stdout[:300])
    same_losses(uninterrupted, losses(rest), range(11, 21), "resumed on 1 rank against never stopped")


def killed_rank_ends_the_run(d):
    log = os.path.join(d, "long.jsonl")
    cmd = [shutil.which("mpirun"), "-np", "2", TANDEM, *COMMON, "--batch", "16", "--epochs", "50", "--log", log,
           "--distributed"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=MPI_ENV)
    deadline = time.time() + 120
    while time.time() < deadline and p.poll() is None and not (os.path.exists(log) and os.path.getsize(log) > 0):
        time.sleep(0.2)
    if not check(p.poll() is None, "a long 2-rank run is under way: " + (p.poll() is not None and p.stderr.read()[-400:] or "")):
        return
    victims = subprocess.run(["pgrep", "-P", str(p.pid), "-f", "tandem"], capture_output=True, text=True).stdout.split()
    if not check(len(victims) == 2, "two rank processes under mpirun: %s" % victims):
        p.kill()
        return
    start = time.time()
    os.kill(int(victims[-1]), signal.SIGKILL)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        check(False, "the run ends within 60 s of a rank's death (it hung)")
        return
    took = time.time() - start
    check(p.returncode != 0, "mpirun exits non-zero after a rank died (%d)" % p.returncode)
    check(took < 60, "the surviving rank stopped %.1f s after the kill" % took)
    check("rank" in err and ("signal 9" in err or "Killed" in err), "the message names the dead rank: " + err[-400:])


def failing_rank_ends_the_run(d):
    bad = os.path.join(d, "missing", "c.ckpt")
    start = time.time()
    r = run(COMMON + ["--batch", "16", "--max-steps", "3", "--checkpoint", bad, "--distributed"], ranks=2, timeout=120)
    check(r.returncode != 0 and time.time() - start < 60, "a rank's Error ends the run (%d)" % r.returncode)
    check("tandem: rank 0 of 2: " + bad in r.stderr, "the message names the rank and the file: " + r.stderr[:300])


# GPU runs: cuDNN picks its algorithms per batch size, and fp32 convolutions
# may use TF32 on the tensor cores, so the halves of a batch are not summed
# as the whole is; fp16 rounds every activation.
GPU_RTOL = {"fp32": 2e-3, "fp16": 2e-2}


def gpu_ranks_match_one_process(d, device, precision):
    what = "%s %s" % (device, precision)
    args = COMMON + ["--device", device, "--precision", precision, "--max-steps", "20"]
    one, two = os.path.join(d, "one-%s-%s.jsonl" % (device, precision)), os.path.join(d, "two-%s-%s.jsonl" % (device, precision))
    r = run(args + ["--batch", "64", "--log", one])
    if not check(r.returncode == 0, "%s: one process trains 20 steps: %s" % (what, r.stderr[-400:])):
        return
    r = run(args + ["--batch", "32", "--log", two, "--distributed"], ranks=2)
    if not check(r.returncode == 0, "%s: mpirun -np 2 trains 20 steps: %s" % (what, r.stderr[-600:])):
        return
    way = [l for l in r.stdout.splitlines() if l.startswith("gradients of 2 ranks summed")]
    check(len(way) == 1, "%s: rank 0 says how the gradients are summed: %s" % (what, way))
    print("%s: %s" % (what, way[0] if way else "?"))
    same_losses(losses(one), losses(two), range(1, 21), "%s: 2 ranks x 32 against 1 process x 64" % what,
                GPU_RTOL[precision])
    if precision == "fp16":
        check(skipped(one) == skipped(two), "%s: the same steps skipped for overflow: %s against %s" % (
            what, skipped(one), skipped(two)))


def one_gpu_rank_over_nccl(d):
    plain, dist = os.path.join(d, "plain.jsonl"), os.path.join(d, "dist1.jsonl")
    args = COMMON + ["--device", "cuda", "--batch", "64", "--max-steps", "10"]
    r = run(args + ["--log", plain])
    if not check(r.returncode == 0, "cuda: one process trains 10 steps: " + r.stderr[-400:]):
        return
    r = run(args + ["--log", dist, "--distributed"], ranks=1)
    if not check(r.returncode == 0, "cuda: mpirun -np 1 --distributed trains 10 steps: " + r.stderr[-600:]):
        return
    check("gradients of 1 ranks summed on the GPUs (NCCL)" in r.stdout, "one GPU rank sums through NCCL: " +
          r.stdout[:400])
    same_losses(losses(plain), losses(dist), range(1, 11), "cuda: 1 NCCL rank against no --distributed", 1e-6)


def gpu_cases(d):
    one_gpu_rank_over_nccl(d)
    gpu_ranks_match_one_process(d, "cuda", "fp32")
    gpu_ranks_match_one_process(d, "cuda", "fp16")
    gpu_ranks_match_one_process(d, "hetero", "fp32")


def main():
    global TANDEM
    TANDEM = os.path.abspath(sys.argv[1])
    device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cpu"
    if not os.path.exists(FASHION):
        print("skipped: Fashion-MNIST is not installed (dataset-fashion-mnist)")
        return 77
    if not shutil.which("mpirun"):
        print("skipped: no mpirun (Debian's openmpi-bin)")
        return 77
    probe = run(COMMON + ["--batch", "8", "--max-steps", "1", "--distributed"], ranks=1, timeout=120)
    if "built without MPI" in probe.stderr:
        print("skipped: this tandem was built without MPI")
        return 77
    with tempfile.TemporaryDirectory() as d:
        if device != "cpu":
            gpu_cases(d)
            return 1 if tag_cli.failures else 0
        uninterrupted = two_ranks_match_one_process(d)
        if uninterrupted:
            resumes_on_fewer_ranks(d, uninterrupted)
        killed_rank_ends_the_run(d)
        failing_rank_ends_the_run(d)
    return 1 if tag_cli.failures else 0


if __name__ == "__main__":
    sys.exit(main())
