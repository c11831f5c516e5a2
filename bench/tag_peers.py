#!/usr/bin/env python3
"""`tandem tag` against its peers on one photo corpus, in one run, each peer
in its own process, on the same sorted file list. First the model users
run, the shipped CenterNet COCO detector (`tandem tag` with no --model):

  detector-tag      `tandem tag DIR --catalog TMP/cat.sqlite --json`, the
                    default model, fp16 on a GPU, fp32 on the CPU
  detector-decode   the same with --decode-only: decoders + the detector's
                    512x512 input, no inference
  detector-tag-nofaces
                    `tandem tag --faces off`: the default run without the
                    face stage (BlazeFace, region decodes, FaceRes), to
                    price it
  detector-tag-nokeep
                    `tandem tag --gpu-keep 0`: faces cut from region decodes
                    on the CPU for every photo, also those the GPU decoded
                    (the default cuts them from the GPU's kept decode)
  detector-tag-exact, detector-decode-exact
                    the two above with --exact-progressive (progressive
                    files decode every scan, not the default)
  torch-ssdlite     (c) what a PyTorch user writes for object tags: PIL
                    Dataset resizing to 320x320 + ToTensor, DataLoader(cores
                    workers), torchvision's ssdlite320_mobilenet_v3_large
                    (seeded random weights), fp16 on a GPU (bench/tag_workers.py)
  tfjs-node         (e) TF.js in Node as @vladmandic/human runs the same
                    detector: jpeg-js decode, tf.image.resizeBilinear to
                    512x512, the graph to its detections (tools/node/
                    tfjs_tag.js), pure-JS cpu backend; CPU machine only
  tfjs-node-wasm    the same on TF.js's wasm backend (XNNPACK, one thread)

then the network alone, on random batches (the detector's two heads, what
`tandem tag` runs; not TF.js's batch-1 post-processing):

  detector-bench    `tandem bench --outputs <heads>`: batch 64 fp16 on a
                    GPU, the TF.js batch (4) fp32 on the CPU
  tfjs-bench        tools/node/tfjs_bench.js, same heads, batch 4 (the pure-JS
                    backend takes ~5 s an image); CPU machine only
  tfjs-bench-wasm   the same on the wasm backend

and last the ImageNet classifier, ResNet-50 (torchvision's architecture
with seeded random weights, exported to ONNX here for tandem: opset 17,
input "input" [N, 3, 224, 224], dynamic batch, unless --model names one):

  tandem-tag, tandem-decode  (b) and (a): as above with --model
  tandem-tag-profile         (b) with --profile TMP/profile
  tandem-decode-cpu, tandem-tag-cpu-decode  (a), (b) with --nvjpeg off
  torch-dataloader, torch-nvjpeg, pillow-draft, pillow-full  (c), (d) and
                             Pillow's decode ceiling (bench/tag_workers.py)

    python3 bench/tag_peers.py DIR --tandem PATH [--peers detector,resnet50] [--limit-slow N]
                               [--limit-tfjs N] [--out OUTDIR]

--peers takes peer names and the groups "detector" (the first two lists),
"resnet50" and "all" (the default). img/s is end to end: files / the
peer's wall time from model load (tandem: process start) to the last
result, as a user sees it; "steady" leaves out the start (torch: model load
and the first batch; TF.js: model load and the first photo; tandem: what
its summary reports, model load excluded). Every peer reads from a warm
page cache: all files are read once before the first peer. On a GPU an
unmeasured tag of 300 files per model first fills tandem's on-disk cuDNN
algorithm cache, as any earlier run would have (--cold leaves it out). The
slow peers may take only the first N files (--limit-slow N; TF.js:
--limit-tfjs N) unless --all-files names them; the tables say how many each
took. Prints markdown tables, the targets as met/missed, and one JSON line;
--out DIR also writes them to DIR/tag_peers.md and DIR/tag_peers.json.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_TOOLS = os.path.join(os.path.dirname(HERE), "tools", "node")

DETECTOR_PEERS = ["detector-tag", "detector-decode", "detector-tag-nofaces", "detector-tag-nokeep", "detector-tag-exact",
                  "detector-decode-exact",
                  "torch-ssdlite", "tfjs-node", "tfjs-node-wasm"]
BENCH_PEERS = ["detector-bench", "tfjs-bench", "tfjs-bench-wasm"]
RESNET_PEERS = ["tandem-decode", "tandem-decode-cpu", "tandem-tag", "tandem-tag-cpu-decode", "tandem-tag-profile",
                "torch-dataloader", "torch-nvjpeg", "pillow-draft", "pillow-full"]
PEERS = DETECTOR_PEERS + BENCH_PEERS + RESNET_PEERS
GROUPS = {"detector": DETECTOR_PEERS + BENCH_PEERS, "resnet50": RESNET_PEERS, "all": PEERS}
SLOW_PEERS = {"torch-ssdlite", "torch-dataloader", "torch-nvjpeg", "pillow-full"}
TFJS_PEERS = {"tfjs-node": "cpu", "tfjs-node-wasm": "wasm"}
TFJS_BENCH = {"tfjs-bench": ("cpu", 2), "tfjs-bench-wasm": ("wasm", 5)}  # backend, timed runs
DEFAULT_MODEL = "centernet"  # what `tandem tag` runs without --model
DETECTOR_HEADS = "tower_0/keypoints,tower_0/wh"
# tandem bench's batch: 64 on a GPU; on the CPU the batch TF.js's pure-JS
# backend gets through in reasonable time (about 20 s a run).
BENCH_BATCH = {"gpu": 64, "cpu": 4}
WHAT = {
    "detector-tag": "`tandem tag`, default model (CenterNet 512x512), catalog",
    "detector-decode": "`tandem tag --decode-only`, default model's input",
    "detector-tag-nofaces": "`tandem tag --faces off`, default model, catalog",
    "detector-tag-nokeep": "`tandem tag --gpu-keep 0` (faces from CPU region decodes), catalog",
    "detector-tag-exact": "`tandem tag --exact-progressive`, default model, catalog",
    "detector-decode-exact": "`tandem tag --decode-only --exact-progressive`",
    "torch-ssdlite": "(c) PyTorch: PIL Dataset + DataLoader(%d workers), ssdlite320_mobilenet_v3_large",
    "tfjs-node": "(e) TF.js in Node, cpu backend: jpeg-js + resizeBilinear + CenterNet",
    "tfjs-node-wasm": "TF.js in Node, wasm backend (1 thread): same",
    "detector-bench": "`tandem bench`, CenterNet as tag runs it (heads, peak mask, TopK)",
    "tfjs-bench": "TF.js cpu backend, CenterNet heads",
    "tfjs-bench-wasm": "TF.js wasm backend (1 thread), CenterNet heads",
    "tandem-tag": "(b) `tandem tag --model resnet50.onnx`, catalog",
    "tandem-decode": "(a) `tandem tag --decode-only`, ResNet-50's input",
    "tandem-decode-cpu": "(a) with --nvjpeg off",
    "tandem-tag-cpu-decode": "(b) with --nvjpeg off",
    "tandem-tag-profile": "(b) with --profile",
    "torch-dataloader": "(c) PyTorch: PIL Dataset + DataLoader(%d workers), resnet50",
    "torch-nvjpeg": "(d) torchvision decode_jpeg on the GPU, resnet50",
    "pillow-draft": "Pillow draft decode + resize, Pool(%d)",
    "pillow-full": "Pillow full decode + resize, Pool(%d)",
}
# (label, better, worse, factor, where): better must reach factor x worse;
# worse is a peer, or a number (img/s).
DETECTOR_TARGETS = [
    ("default tag >= 450 img/s", "detector-tag", 450.0, 1.0, "gpu"),
    ("default tag >= 0.9 x its decode-only", "detector-tag", "detector-decode", 0.9, "gpu"),
    ("default tag >= 10 x PyTorch ssdlite DataLoader (c)", "detector-tag", "torch-ssdlite", 10.0, "gpu"),
    ("tag with faces >= 0.8 x without", "detector-tag", "detector-tag-nofaces", 0.8, "gpu"),
    ("default tag >= 2 x 11.5 img/s", "detector-tag", 11.5, 2.0, "cpu"),
    ("default tag >= 5 x TF.js in Node (e)", "detector-tag", "tfjs-node", 5.0, "cpu"),
]
RESNET_TARGETS = [
    ("ResNet-50: (b) >= 0.9 x (a)", "tandem-tag", "tandem-decode", 0.9, "gpu"),
    ("ResNet-50: (a) >= 1.5 x pillow-draft", "tandem-decode", "pillow-draft", 1.5, "gpu"),
    ("ResNet-50: (b) >= 10 x (c)", "tandem-tag", "torch-dataloader", 10.0, "gpu"),
    ("ResNet-50: (b) >= 4 x (d)", "tandem-tag", "torch-nvjpeg", 4.0, "gpu"),
    ("ResNet-50: (b) >= 3 x (c)", "tandem-tag", "torch-dataloader", 3.0, "cpu"),
    # The profiler loses at most 2% of the throughput.
    ("ResNet-50: --profile >= 0.98 x (b)", "tandem-tag-profile", "tandem-tag", 0.98, "gpu"),
    ("ResNet-50: --profile >= 0.98 x (b)", "tandem-tag-profile", "tandem-tag", 0.98, "cpu"),
]


def list_images(directory):
    found = []
    for root, _, names in os.walk(directory):
        found += [os.path.join(root, n) for n in names if n.lower().endswith((".jpg", ".jpeg"))]
    return sorted(found)


def warm_page_cache(files):
    """Reads every file once so that no peer pays for the first read."""
    for path in files:
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def command_line(cmd, timeout=30):
    """The first line a command prints, or None where it does not run."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return r.stdout.strip().splitlines()[0] if r.returncode == 0 and r.stdout.strip() else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def gpu_line():
    return command_line(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"])


def models_dir():
    return os.environ.get("TANDEM_MODELS") or os.path.join(os.path.expanduser("~"), ".cache", "tandem", "models")


def last_error_line(text):
    """The message of a failed command: its last line, less CLI11's "Run
    with --help" tail."""
    lines = [line.strip() for line in (text or "").splitlines()
             if line.strip() and not line.startswith("Run with --help")]
    return lines[-1][:300] if lines else "failed"


def run_json(cmd, timeout, **kw):
    """Runs cmd; its last stdout line is JSON. Returns it, or {"error": ...}."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        return {"error": "timed out after %d s" % timeout}
    if p.returncode != 0:
        return {"error": last_error_line(p.stderr or p.stdout)}
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"error": "no JSON line at the end of the output: " + last_error_line(p.stdout)}


def run_worker(name, a, files_path, timeout):
    cmd = [sys.executable, os.path.join(HERE, "tag_workers.py"), name, "--cores", str(a.cores)]
    cmd += ["--files", files_path] if files_path else []
    cmd += ["--model", a.model] if a.model else []
    return run_json(cmd, timeout)


# ---- tandem ----

def device_args(cuda):
    return ["--device", "cuda", "--precision", "fp16"] if cuda else ["--device", "cpu", "--precision", "fp32"]


def model_args(name, a):
    """Nothing for the detector peers: they run what a user gets by default."""
    return [] if name.startswith("detector-") else ["--model", a.model]


def warm_algo_cache(a, files, tmp, family):
    """Tags the first 300 files once, unmeasured, so the tandem peers find
    cuDNN's algorithm choices in the on-disk cache (cuda/algo_cache.h), as
    every run after a user's first does; without it the first tandem peer
    of a model alone pays the search (~1.5 s for ResNet-50). Returns what
    it did."""
    subset = os.path.join(tmp, "warm")
    if not os.path.isdir(subset):
        os.makedirs(subset)
        for i, path in enumerate(files[:300]):
            os.symlink(path, os.path.join(subset, "%04d%s" % (i, os.path.splitext(path)[1])))
    cmd = [a.tandem, "tag", subset, *model_args(family + "-tag", a), *device_args(True), "--catalog",
           os.path.join(tmp, "warm-%s.sqlite" % family)]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    if p.returncode != 0:
        return "%s: warm-up failed: %s" % (family, last_error_line(p.stderr))
    return "%s: warmed by an unmeasured tag of %d files (%.1f s)" % (family, min(300, len(files)),
                                                                     time.perf_counter() - t0)


SUMMARY_COUNTS = re.compile(r"(?:tagged|decoded) (\d+) images, (\d+) failed")
SUMMARY_RATE = re.compile(r"([\d.]+) s, ([\d.]+) images/s")


def tandem_tag_command(name, a, cuda, tmp):
    cmd = [a.tandem, "tag", a.directory, "--json", *model_args(name, a), *device_args(cuda)]
    decode_only = name.startswith(("tandem-decode", "detector-decode"))
    cmd += ["--decode-only"] if decode_only else ["--catalog", os.path.join(tmp, "cat.sqlite")]
    if name.endswith("-nofaces"):
        cmd += ["--faces", "off"]
    if name.endswith("-nokeep"):
        cmd += ["--gpu-keep", "0"]
    if name.endswith("-exact"):
        cmd += ["--exact-progressive"]
    if name == "tandem-tag-profile":
        cmd += ["--profile", os.path.join(tmp, "profile")]
    if name in ("tandem-decode-cpu", "tandem-tag-cpu-decode"):
        cmd += ["--nvjpeg", "off"]  # the CPU decoders alone: what nvJPEG adds
    return cmd


def tandem_result(p, seconds):
    """Counts from the summary on stderr (else the per-file JSON lines);
    img/s from the process's wall time."""
    r = {"summary": [line for line in p.stderr.splitlines() if line.strip()][-8:]}
    counts, rate = SUMMARY_COUNTS.search(p.stderr), SUMMARY_RATE.search(p.stderr)
    if p.returncode != 0 and not counts:
        return {**r, "error": last_error_line(p.stderr or p.stdout)}
    ok_lines = sum(1 for line in p.stdout.splitlines() if line.startswith("{") and '"ok":true' in line)
    done = int(counts.group(1)) + int(counts.group(2)) if counts else ok_lines
    if not done:
        return {**r, "error": "no image counted: neither a summary line (\"tagged N images, F failed\") "
                              "nor per-file JSON lines; last line: " + last_error_line(p.stderr)}
    r.update({"files": done, "seconds": round(seconds, 3), "img_per_s": round(done / seconds, 3),
              "steady_img_per_s": float(rate.group(2)) if rate else None,
              "failed": int(counts.group(2)) if counts else None, "json_ok_lines": ok_lines})
    if p.returncode != 0:
        r["note"] = "exit status %d: %s" % (p.returncode, last_error_line(p.stderr))
    return r


def run_tandem(name, a, cuda, timeout):
    """tandem in a fresh temporary folder (a fresh catalog)."""
    tmp = tempfile.mkdtemp(prefix="tag_peers_")
    cmd = tandem_tag_command(name, a, cuda, tmp)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tmp)
    except subprocess.TimeoutExpired:
        return {"error": "timed out after %d s" % timeout, "command": " ".join(cmd)}
    finally:
        seconds = time.perf_counter() - t0
        summary = os.path.join(tmp, "profile", "summary.txt")
        if a.out and os.path.exists(summary):  # the profile's text summary outlives the run
            os.makedirs(a.out, exist_ok=True)
            shutil.copy(summary, os.path.join(a.out, name + ".summary.txt"))
        shutil.rmtree(tmp, ignore_errors=True)
    return {"command": " ".join(cmd), **tandem_result(p, seconds)}


# ---- TF.js in Node, and the batch benchmarks ----

def tfjs_missing(cuda):
    """Why the TF.js peers cannot run here, or None."""
    if cuda:
        return "GPU host: TF.js in Node is measured on the CPU machine (no Node.js on the GPU host)"
    if not shutil.which("node"):
        return "no Node.js here"
    if not os.path.isdir(os.path.join(NODE_TOOLS, "node_modules", "jpeg-js")):
        return "tools/node not installed (scripts/install-node-tools)"
    if not os.path.isfile(os.path.join(models_dir(), DEFAULT_MODEL + ".json")):
        return "%s.json not in %s (scripts/install-models)" % (DEFAULT_MODEL, models_dir())
    return None


def node_version():
    return command_line(["node", "--version"])


def run_tfjs(name, a, files_path, cuda, timeout):
    why = tfjs_missing(cuda)
    if why:
        return {"skipped": why}
    cmd = ["node", os.path.join(NODE_TOOLS, "tfjs_tag.js"), os.path.join(models_dir(), DEFAULT_MODEL + ".json"),
           files_path, "--backend", TFJS_PEERS[name]]
    return {"command": " ".join(cmd), "node": node_version(), **run_json(cmd, timeout)}


def detector_input_size():
    """The shipped detector's input height (square: 512), from its model.json."""
    with open(os.path.join(models_dir(), DEFAULT_MODEL + ".json")) as f:
        dims = next(iter(json.load(f)["signature"]["inputs"].values()))["tensorShape"]["dim"]
    return int(dims[1]["size"])


def bench_row(r, batch):
    """A batch benchmark's JSON (tandem bench's or tfjs_bench.js's) as a row."""
    if "img_per_s" not in r:
        return r
    p50 = r.get("p50_ms", (r.get("latency_ms") or {}).get("p50"))
    return {**r, "batch": batch, "img_per_s": round(r["img_per_s"], 3), "p50_ms": p50}


def run_bench(name, a, cuda, timeout):
    batch = BENCH_BATCH["gpu" if cuda else "cpu"]
    if name == "detector-bench":
        # What `tandem tag` runs: the network and its in-graph peak ranking.
        cmd = [a.tandem, "bench", "--batch", str(batch), *device_args(cuda)]
        return {"command": " ".join(cmd), **bench_row(run_json(cmd, timeout), batch)}
    why = tfjs_missing(cuda)
    if why:
        return {"skipped": why}
    backend, iters = TFJS_BENCH[name]
    size = detector_input_size()
    cmd = ["node", os.path.join(NODE_TOOLS, "tfjs_bench.js"), os.path.join(models_dir(), DEFAULT_MODEL + ".json"),
           "--shape", "%d,%d,%d,3" % (batch, size, size), "--outputs", DETECTOR_HEADS, "--backend", backend,
           "--iters", str(iters), "--warmup", "1"]
    return {"command": " ".join(cmd), "node": node_version(), **bench_row(run_json(cmd, timeout), batch)}


# ---- tables and targets ----

def fmt_rate(v):
    return "%.1f" % v if isinstance(v, (int, float)) else ""


def what(peer, cores):
    text = WHAT[peer]
    return text % cores if "%d" in text else text


def not_measured(r):
    return ("error: " + r["error"]) if "error" in r else ("skipped: " + r.get("skipped", ""))


def tag_table(rows, base_peer, cores):
    base = next((r["img_per_s"] for r in rows if r["peer"] == base_peer and "img_per_s" in r), None)
    out = ["| peer | what | files | seconds | img/s | steady img/s | ratio to %s |" % base_peer,
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if "img_per_s" not in r:
            out.append("| %s | %s | | | %s | | |" % (r["peer"], what(r["peer"], cores), not_measured(r).replace("|", "/")))
            continue
        ratio = "%.2f" % (r["img_per_s"] / base) if base else ""
        out.append("| %s | %s | %d | %.2f | %.1f | %s | %s |" % (
            r["peer"], what(r["peer"], cores), r["files"], r["seconds"], r["img_per_s"],
            fmt_rate(r.get("steady_img_per_s")), ratio))
    return out


def bench_table(rows, cores):
    base = next((r["img_per_s"] for r in rows if r["peer"] == "detector-bench" and "img_per_s" in r), None)
    out = ["| peer | what | device | batch | img/s | p50 ms / batch | tandem / peer |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if "img_per_s" not in r:
            out.append("| %s | %s | | | %s | | |" % (r["peer"], what(r["peer"], cores), not_measured(r).replace("|", "/")))
            continue
        device = r.get("device") or r.get("backend", "")
        if "threads" in r:
            device += " (%d thread%s)" % (r["threads"], "" if r["threads"] == 1 else "s")
        if r.get("precision"):
            device += " " + r["precision"]
        ratio = "%.2f" % (base / r["img_per_s"]) if base else ""
        out.append("| %s | %s | %s | %d | %.2f | %s | %s |" % (r["peer"], what(r["peer"], cores), device, r["batch"],
                                                             r["img_per_s"], fmt_rate(r.get("p50_ms")), ratio))
    return out


def target_checks(rows, cuda, targets):
    """This machine's targets whose peer was run, met or missed."""
    by = {r["peer"]: r for r in rows if "img_per_s" in r}
    run = {r["peer"] for r in rows}
    out = []
    for label, better, worse, factor, where in targets:
        if where != ("gpu" if cuda else "cpu") or better not in run:
            continue
        absolute = isinstance(worse, float)
        if better not in by or (not absolute and worse not in by):
            out.append({"target": label, "status": "not measured"})
            continue
        worse_rate = worse if absolute else by[worse]["img_per_s"]
        ratio = by[better]["img_per_s"] / worse_rate
        check = {"target": label, "status": "met" if ratio >= factor else "missed", "ratio": round(ratio, 3),
                 "factor": factor}
        if absolute:
            check["img_per_s"] = by[better]["img_per_s"]
        b = by[better].get("steady_img_per_s")
        w = worse if absolute else by[worse].get("steady_img_per_s") or by[worse]["img_per_s"]
        if b:
            check["steady_ratio"] = round(b / w, 3)
        out.append(check)
    return out


def check_line(c):
    if "ratio" not in c:
        return "  %s: %s" % (c["target"], c["status"])
    rate = "%.1f img/s, " % c["img_per_s"] if "img_per_s" in c else ""
    steady = ", steady %.2f" % c["steady_ratio"] if "steady_ratio" in c else ""
    return "  %s: %s (%sratio %.2f, needs %.2f%s)" % (c["target"], c["status"], rate, c["ratio"], c["factor"], steady)


def report_lines(rows, checks, machine, env, a, corpus):
    cuda = bool(env["cuda"])
    lines = ["", "tandem tag and its peers, %s, %s%s" % (machine["date"], machine["cpu"],
                                                        ", " + machine["gpu"] if machine["gpu"] else ""),
             "%d of %d cores; torch %s, torchvision %s, Pillow %s (libjpeg-turbo %s); Node %s; corpus %s: %d files, "
             "%.2f MB mean; every peer reads from a warm page cache; slow peers limited to %s files, TF.js to %s" %
             (a.cores, machine["nproc"], env["torch"], env["torchvision"], env["pillow"],
              env["pillow_libjpeg_turbo"], machine["node"] or "absent", a.directory, corpus["files"],
              corpus["bytes"] / corpus["files"] / 1e6, a.limit_slow or "all", a.limit_tfjs or "all")]
    sections = [("Default model (CenterNet): `tandem tag` and its peers", DETECTOR_PEERS, "detector-tag", tag_table),
                ("Default model: the network alone on random batches (TF.js: heads %s)" % DETECTOR_HEADS, BENCH_PEERS, None,
                 bench_table),
                ("ResNet-50 (seeded random weights): `tandem tag --model` and its peers", RESNET_PEERS, "tandem-tag",
                 tag_table)]
    for title, members, base, make in sections:
        chosen = [r for r in rows if r["peer"] in members]
        if chosen:
            lines += ["", title + ":", ""]
            lines += make(chosen, base, a.cores) if base else make(chosen, a.cores)
    lines += ["", "targets (%s):" % ("GPU host" if cuda else "CPU only")]
    lines += [check_line(c) for c in checks]
    return lines


# ---- the driver ----

def parse_peers(ap, text):
    peers = []
    for p in (p.strip() for p in text.split(",")):
        for q in GROUPS.get(p, [p] if p else []):
            if q not in PEERS:
                ap.error("unknown peer %s (peers: %s; groups: %s)" % (q, ", ".join(PEERS), ", ".join(GROUPS)))
            if q not in peers:
                peers.append(q)
    return peers


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("directory", metavar="DIR", help="the corpus (every .jpg/.jpeg under it)")
    ap.add_argument("--tandem", help="the tandem CLI (needed by the tandem and detector peers)")
    ap.add_argument("--model", help="ONNX ResNet-50 for tandem (default: exported from the seeded torchvision model)")
    ap.add_argument("--peers", default="all",
                    help="comma-separated peers or groups (%s): %s" % (", ".join(GROUPS), ", ".join(PEERS)))
    ap.add_argument("--limit-slow", type=int, default=0, metavar="N",
                    help="the slow peers (%s) take only the first N files (0: all)" % ", ".join(sorted(SLOW_PEERS)))
    ap.add_argument("--limit-tfjs", type=int, default=0, metavar="N",
                    help="the TF.js peers take only the first N files (0: --limit-slow's)")
    ap.add_argument("--all-files", default="", metavar="PEERS",
                    help="limited peers that take every file all the same (comma-separated)")
    ap.add_argument("--cores", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per peer")
    ap.add_argument("--out", help="also write tag_peers.md and tag_peers.json here")
    ap.add_argument("--cold", action="store_true",
                    help="no warm-up: the first tandem peer of each model also measures cuDNN's convolution algorithms")
    a = ap.parse_args()
    peers = parse_peers(ap, a.peers)
    a.limit_tfjs = a.limit_tfjs or a.limit_slow
    needs_tandem = [p for p in peers if p.startswith(("tandem", "detector"))]
    if needs_tandem and not a.tandem:
        ap.error("--tandem is needed for " + ", ".join(needs_tandem))
    files = list_images(a.directory)
    if not files:
        sys.exit("tag_peers: no .jpg files under " + a.directory)
    a.directory = os.path.abspath(a.directory)
    # tandem runs in a temporary folder: paths relative to here must not move.
    if a.tandem and os.sep in a.tandem:
        a.tandem = os.path.abspath(a.tandem)
    if a.model:
        a.model = os.path.abspath(a.model)
    if a.out:
        a.out = os.path.abspath(a.out)
    tmp = tempfile.mkdtemp(prefix="tag_peers_")
    try:
        run_all(a, peers, files, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def file_lists(a, files, tmp):
    """peer -> the file holding its file list (its first N files where it is limited)."""
    lists = {}
    for peer in PEERS:
        limit = a.limit_tfjs if peer in TFJS_PEERS else a.limit_slow if peer in SLOW_PEERS else 0
        if limit <= 0 or peer in a.all_files.split(","):
            limit = len(files)
        path = os.path.join(tmp, "files_%d.txt" % min(limit, len(files)))
        if not os.path.exists(path):
            with open(path, "w") as f:
                f.write("".join(p + "\n" for p in files[:limit]))
        lists[peer] = path
    return lists


def run_peer(peer, a, cuda, lists):
    if peer.endswith("-nokeep") and not cuda:
        return {"skipped": "no GPU: every face crop is a region decode already (detector-tag)"}
    if peer.startswith(("tandem", "detector-tag", "detector-decode")):
        return run_tandem(peer, a, cuda, a.timeout)
    if peer in TFJS_PEERS:
        return run_tfjs(peer, a, lists[peer], cuda, a.timeout)
    if peer in BENCH_PEERS:
        return run_bench(peer, a, cuda, a.timeout)
    return run_worker(peer, a, lists[peer], a.timeout)


def run_all(a, peers, files, tmp):
    env = run_worker("probe", a, "", 600)
    if "error" in env:
        sys.exit("tag_peers: torch/torchvision/Pillow not importable: " + env["error"])
    cuda = env["cuda"]
    if any(p.startswith("tandem") for p in peers) and not a.model:
        a.model = os.path.join(tmp, "resnet50.onnx")
        exported = run_worker("export", a, "", 600)
        if "error" in exported:
            sys.exit("tag_peers: ONNX export failed: " + exported["error"])
    lists = file_lists(a, files, tmp)
    t0 = time.perf_counter()
    warm_page_cache(files)
    warm_s = time.perf_counter() - t0
    machine = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
               "host": platform.node(), "nproc": os.cpu_count(), "cores_used": a.cores, "cpu": cpu_model(),
               "gpu": gpu_line(), "tandem": a.tandem and command_line([a.tandem, "--version"]),
               "node": node_version() if shutil.which("node") else None,
               **{k: env[k] for k in ("torch", "torchvision", "pillow", "pillow_libjpeg_turbo", "numpy", "cuda_device")}}
    corpus = {"dir": a.directory, "files": len(files), "bytes": sum(os.path.getsize(p) for p in files),
              "warm_read_s": round(warm_s, 2)}
    families = [f for f, prefix in (("detector", "detector-"), ("tandem", "tandem-"))
                if any(p.startswith(prefix) for p in peers)]
    machine["algo_cache"] = "cold" if a.cold or not cuda else "; ".join(
        warm_algo_cache(a, files, tmp, f) for f in families)
    print("machine: %s" % json.dumps(machine), flush=True)
    print("corpus: %s (every peer reads from a warm page cache)" % json.dumps(corpus), flush=True)
    rows = []
    for peer in peers:
        rows.append({"peer": peer, **run_peer(peer, a, cuda, lists)})
        print(json.dumps(rows[-1]), flush=True)
    checks = target_checks(rows, cuda, DETECTOR_TARGETS + RESNET_TARGETS)
    lines = report_lines(rows, checks, machine, env, a, corpus)
    result = {"machine": machine, "corpus": corpus, "limit_slow": a.limit_slow or None,
              "limit_tfjs": a.limit_tfjs or None, "rows": rows, "targets": checks}
    print("\n".join(lines))
    print(json.dumps(result))
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "tag_peers.md"), "w") as f:
            f.write("\n".join(lines).lstrip("\n") + "\n")
        with open(os.path.join(a.out, "tag_peers.json"), "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
