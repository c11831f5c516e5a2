#!/usr/bin/python3
"""ResNet-50 CPU inference: tandem against peers, measured in one run.

Usage (Debian's python, which has torch/torchvision/onnx/cv2):
  /usr/bin/python3 bench/resnet50_cpu.py [--build build] [--threads T]
      [--batches 1,32] [--iterations N] [--warmup W]
      [--engines tandem,opencv,torch_eager,torch_frozen,ort] [--no-npm]

What it does, always in this order:
  1. Exports torchvision resnet50 with seeded random weights (the recipe of
     tests/models/export_torchvision.py: BN stats perturbed, BN nodes kept,
     opset 13, dynamic batch) once to BUILD/cache/models/resnet50.op13/.
  2. For each batch size (default 1 then 32), runs each engine in its own
     subprocess (so no engine's idle thread pool competes with the next),
     in the order: tandem, OpenCV DNN, PyTorch eager, PyTorch frozen
     TorchScript, ONNX Runtime. Each does W warmup runs then N timed runs
     of one batch and reports img/s (B*N / total time) and p50/p90 latency.
       tandem        `BUILD/cli/tandem bench MODEL --batch B --iterations N
                     --warmup W --threads T`, last stdout line parsed as JSON.
       opencv        cv2.dnn.readNetFromONNX(MODEL), DNN_BACKEND_OPENCV,
                     DNN_TARGET_CPU, cv2.setNumThreads(T).
       torch_eager   the PyTorch model the ONNX file came from (same seed,
                     same weights), torch.set_num_threads(T), inference_mode.
       torch_frozen  torch.jit.optimize_for_inference(torch.jit.freeze(
                     torch.jit.script(model))), no_grad.
       ort           onnxruntime-node (npm, CPU EP, intra-op threads T) via
                     bench/ort_bench.js; installed into BUILD/cache/npm on
                     first use (skipped with a note if npm/node can't).
     The ONNX engines read the SAME file. Every peer's output on the batch
     (PyTorch's reference input repeated to B) is checked against PyTorch's
     reference logits (max abs err <= 1e-3 x max|ref|), so a fast but wrong
     peer is flagged; tandem's correctness is covered by ctest -L models.
  3. Prints a markdown table, the ratio tandem img/s / best peer img/s per
     batch size (> 1 means tandem is faster), and one JSON line.
Threads default to every core (os.cpu_count()); OMP_NUM_THREADS is set to
the same value in every subprocess. Defaults: N = max(5, 64 // B), W =
max(2, 8 // B). Exit status 1 if tandem is missing or fails (after the peers
have still been measured and printed), 0 otherwise.
"""

import argparse
import fcntl
import json
import os
import platform
import shutil
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
import export_torchvision as export  # noqa: E402

MODEL, OPSET, SEED = "resnet50", 13, 0
ENGINES = ["tandem", "opencv", "torch_eager", "torch_frozen", "ort"]
CHECK_RTOL = 1e-3


# ---------------------------------------------------------------- workers
# Each runs in a fresh process: `resnet50_cpu.py --worker ENGINE ...`.

def time_runs(fn, iterations, warmup):
    """Latencies in ms of `iterations` calls after `warmup` calls; last output."""
    out = None
    for _ in range(warmup):
        out = fn()
    ms = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        out = fn()
        ms.append((time.perf_counter() - t0) * 1e3)
    return ms, out


def worker_opencv(model_path, x, a):
    import cv2
    cv2.setNumThreads(a.threads)
    net = cv2.dnn.readNetFromONNX(model_path)
    net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
    net.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)

    def run():
        net.setInput(x)
        return net.forward()
    ms, out = time_runs(run, a.iterations, a.warmup)
    return ms, out, f"OpenCV {cv2.__version__}"


def worker_torch(model_path, x, a, frozen):
    export.import_torch(a.threads)
    torch = export.torch
    model = export.build_model(MODEL, SEED)
    xt = torch.from_numpy(x)
    if frozen:
        model = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(model)))
        ctx = torch.no_grad
    else:
        ctx = torch.inference_mode
    with ctx():
        ms, out = time_runs(lambda: model(xt), a.iterations, a.warmup)
    return ms, out.numpy(), f"PyTorch {torch.__version__}"


def run_worker(a):
    folder = model_folder(a.build)
    x = bench_input(folder, a.batch)
    model_path = os.path.join(folder, "model.onnx")
    if a.worker == "opencv":
        ms, out, engine = worker_opencv(model_path, x, a)
    else:
        ms, out, engine = worker_torch(model_path, x, a, a.worker == "torch_frozen")
    np.save(a.output, np.asarray(out, dtype=np.float32))
    print(json.dumps(summary(ms, a.batch, a.threads, engine)))
    return 0


# ---------------------------------------------------------------- helpers

def model_folder(build):
    return os.path.join(build, "cache", "models", f"{MODEL}.op{OPSET}")


def bench_input(folder, batch):
    """PyTorch's reference input (2,3,224,224) repeated to `batch` samples."""
    ref_in = np.load(os.path.join(folder, "input.npy"))
    reps = -(-batch // ref_in.shape[0])
    return np.ascontiguousarray(np.concatenate([ref_in] * reps)[:batch])


def bench_reference(folder, batch):
    ref = np.load(os.path.join(folder, "ref", "logits.npy"))
    reps = -(-batch // ref.shape[0])
    return np.concatenate([ref] * reps)[:batch]


def summary(ms, batch, threads, engine):
    s = np.sort(np.asarray(ms))

    def pct(q):  # nearest-rank, as ort_bench.js
        return float(s[min(len(s) - 1, max(0, int(np.ceil(q * len(s))) - 1))])
    return {"engine": engine, "batch": batch, "threads": threads, "iterations": len(ms),
            "img_per_s": batch * len(ms) / (s.sum() / 1e3),
            "latency_ms": {"p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99), "min": float(s[0])}}


def last_json_line(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError("no JSON line in output")


def run_subprocess(cmd, threads, env_extra=None, timeout=1800):
    """(parsed last JSON line, None) or (None, error text)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), **(env_extra or {}))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"{cmd[0]}: {e}"
    if p.returncode != 0:
        tail = (p.stderr.strip() or p.stdout.strip()).splitlines()[-3:]
        return None, f"exit {p.returncode}: " + " | ".join(tail)
    try:
        return last_json_line(p.stdout), None
    except ValueError as e:
        return None, f"{e}; stdout tail: {p.stdout.strip()[-200:]!r}"


def check_output(out_path, folder, batch):
    """Text like 'ok 3.1e-06' or 'WRONG 0.5' comparing with PyTorch's logits."""
    try:
        out = np.load(out_path) if out_path.endswith(".npy") else np.fromfile(out_path, np.float32)
        ref = bench_reference(folder, batch)
        err = float(np.abs(out.reshape(ref.shape).astype(np.float64) - ref).max())
    except (OSError, ValueError) as e:
        return f"unchecked ({e})"
    rel = err / float(np.abs(ref).max())
    return f"{'ok' if rel <= CHECK_RTOL else 'WRONG'} {rel:.1e}"


# ---------------------------------------------------------------- engines

def bench_tandem(a, folder, batch, iters, warmup):
    tandem = a.tandem or os.path.join(a.build, "cli", "tandem")
    if not os.access(tandem, os.X_OK):
        return None, f"{tandem} not found (build it: cmake --build {a.build} --target tandem_cli)"
    cmd = [tandem, "bench", os.path.join(folder, "model.onnx"), "--batch", str(batch),
           "--iterations", str(iters), "--warmup", str(warmup), "--threads", str(a.threads)]
    r, err = run_subprocess(cmd, a.threads)
    if err:
        return None, f"`tandem bench` failed: {err}"
    if not isinstance(r.get("img_per_s"), (int, float)) or "p50" not in r.get("latency_ms", {}):
        return None, f"`tandem bench` JSON lacks img_per_s/latency_ms.p50: {r}"
    r["engine"] = "tandem"
    r["check"] = "see ctest -L models"
    return r, None


def bench_python_peer(a, engine, folder, batch, iters, warmup):
    out_path = os.path.join(a.build, "cache", "bench", f"{engine}.b{batch}.npy")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", engine, "--build", a.build,
           "--batch", str(batch), "--iterations", str(iters), "--warmup", str(warmup),
           "--threads", str(a.threads), "--output", out_path]
    r, err = run_subprocess(cmd, a.threads)
    if r:
        r["check"] = check_output(out_path, folder, batch)
    return r, err


def ensure_ort(a):
    """NODE_PATH holding onnxruntime-node, or (None, reason)."""
    prefix = os.path.join(a.build, "cache", "npm")
    modules = os.path.join(prefix, "node_modules")
    if os.path.isdir(os.path.join(modules, "onnxruntime-node")):
        return modules, None
    if a.no_npm:
        return None, f"onnxruntime-node not in {modules} and --no-npm given"
    if not shutil.which("npm") or not shutil.which("node"):
        return None, "node/npm not installed"
    os.makedirs(prefix, exist_ok=True)
    print(f"bench: installing onnxruntime-node into {prefix} ...", flush=True)
    # ONNXRUNTIME_NODE_INSTALL=skip: the CPU binaries ship in the npm
    # package; its postinstall would otherwise fetch CUDA ones from nuget.
    env = dict(os.environ, ONNXRUNTIME_NODE_INSTALL="skip")
    p = subprocess.run(["npm", "install", "--prefix", prefix, "--no-audit", "--no-fund",
                        "onnxruntime-node"], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return None, "npm install onnxruntime-node failed: " + p.stderr.strip()[-300:]
    return modules, None


def bench_ort(a, folder, batch, iters, warmup):
    node_path, err = ensure_ort(a)
    if err:
        return None, err
    base = os.path.join(a.build, "cache", "bench", f"ort.b{batch}")
    bench_input(folder, batch).tofile(base + ".in.f32")
    cmd = ["node", os.path.join(ROOT, "bench", "ort_bench.js"),
           os.path.join(folder, "model.onnx"), base + ".in.f32", str(batch), str(iters),
           str(warmup), str(a.threads), base + ".out.f32"]
    r, err = run_subprocess(cmd, a.threads, {"NODE_PATH": node_path})
    if r:
        r["check"] = check_output(base + ".out.f32", folder, batch)
    return r, err


def bench_engine(a, engine, folder, batch):
    iters = a.iterations or max(5, 64 // batch)
    warmup = a.warmup if a.warmup is not None else max(2, 8 // batch)
    if engine == "tandem":
        return bench_tandem(a, folder, batch, iters, warmup)
    if engine == "ort":
        return bench_ort(a, folder, batch, iters, warmup)
    return bench_python_peer(a, engine, folder, batch, iters, warmup)


# ---------------------------------------------------------------- report

def ratios(results, batches):
    """batch -> (tandem img/s / best peer img/s, best peer name) or None."""
    out = {}
    for b in batches:
        rows = [r for r in results if r["batch"] == b and "img_per_s" in r]
        tandem = [r for r in rows if r["name"] == "tandem"]
        peers = [r for r in rows if r["name"] != "tandem" and not r["check"].startswith("WRONG")]
        if tandem and peers:
            best = max(peers, key=lambda r: r["img_per_s"])
            out[b] = (tandem[0]["img_per_s"] / best["img_per_s"], best["name"])
        else:
            out[b] = None
    return out


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def print_report(results, batches, threads):
    print(f"\nResNet-50 fp32, {threads} threads, {cpu_name()}, "
          f"load average {os.getloadavg()[0]:.2f}\n")
    print("| engine | batch | img/s | p50 ms | p90 ms | output check |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for r in results:
        if "img_per_s" in r:
            lat = r["latency_ms"]
            print(f"| {r['name']} | {r['batch']} | {r['img_per_s']:.2f} | {lat['p50']:.1f} | "
                  f"{lat.get('p90', float('nan')):.1f} | {r['check']} |")
        else:
            print(f"| {r['name']} | {r['batch']} | - | - | - | skipped: {r['error']} |")
    rat = ratios(results, batches)
    print()
    for b in batches:
        if rat[b]:
            print(f"batch {b}: tandem / best peer ({rat[b][1]}) = {rat[b][0]:.2f}x")
        else:
            print(f"batch {b}: tandem / best peer = n/a (tandem or every peer missing)")
    print(json.dumps({"bench": "resnet50_cpu", "threads": threads, "cpu": cpu_name(),
                      "ratio_tandem_over_best_peer": {str(b): (rat[b][0] if rat[b] else None)
                                                      for b in batches},
                      "results": results}))


def prepare_model(a):
    """Exports once (under the model tests' lock) and returns the folder."""
    folder = model_folder(a.build)
    cache = os.path.dirname(folder)
    os.makedirs(cache, exist_ok=True)
    os.makedirs(os.path.join(a.build, "cache", "bench"), exist_ok=True)
    with open(os.path.join(cache, ".export.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not export.is_current(folder, 2, SEED):
            export.import_torch(a.threads)
            export.export_one(MODEL, OPSET, 2, SEED, folder)
    return folder


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--tandem", help="tandem binary (default BUILD/cli/tandem)")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--batches", default="1,32")
    p.add_argument("--iterations", type=int, default=0, help="timed runs (default max(5, 64/B))")
    p.add_argument("--warmup", type=int, default=None, help="warmup runs (default max(2, 8/B))")
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--no-npm", action="store_true", help="never run npm install")
    p.add_argument("--worker", choices=["opencv", "torch_eager", "torch_frozen"], help=argparse.SUPPRESS)
    p.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    p.add_argument("--output", help=argparse.SUPPRESS)
    a = p.parse_args()
    a.build = os.path.abspath(a.build)
    if a.worker:
        a.warmup = a.warmup or 0
        return run_worker(a)
    engines = a.engines.split(",")
    bad = [e for e in engines if e not in ENGINES]
    if bad:
        p.error(f"unknown engine(s) {bad}; known: {ENGINES}")
    batches = [int(b) for b in a.batches.split(",")]
    folder = prepare_model(a)
    results, tandem_failed = [], False
    for b in batches:
        for e in engines:
            print(f"bench: {e} batch {b} ...", flush=True)
            r, err = bench_engine(a, e, folder, b)
            if err:
                print(f"bench: {e} batch {b}: {err}", flush=True)
                results.append({"name": e, "batch": b, "error": err})
                tandem_failed |= e == "tandem"
                continue
            r.update(name=e, batch=b)
            results.append(r)
            print(f"bench: {e} batch {b}: {r['img_per_s']:.2f} img/s, "
                  f"p50 {r['latency_ms']['p50']:.1f} ms, check {r['check']}", flush=True)
    print_report(results, batches, a.threads)
    if tandem_failed:
        print("bench: tandem was not measured (see above); peers only", file=sys.stderr)
    return 1 if tandem_failed else 0


if __name__ == "__main__":
    sys.exit(main())
