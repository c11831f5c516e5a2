#!/usr/bin/env python3
"""`tandem tag` against its peers on one photo corpus (issue 5, section 8),
in one run, each peer in its own process, on the same sorted file list:

  tandem-decode     (a) `tandem tag DIR --decode-only`: decoders + slot writing, no inference
  tandem-tag        (b) `tandem tag DIR --catalog TMP/cat.sqlite --json`, ResNet-50
  tandem-tag-profile  (b) with --profile TMP/profile (issue 6: its cost)
  torch-dataloader  (c) the job as a PyTorch user writes it: an ImageFolder-like
                    Dataset (PIL open + convert RGB, no EXIF transpose),
                    Resize(256) + CenterCrop(224) + ToTensor + Normalize,
                    DataLoader(batch 64, num_workers = cores, pin_memory on a
                    GPU), resnet50 fp16 channels-last on the GPU (fp32 on
                    the CPU with torch.set_num_threads(cores)), softmax top-5
  torch-nvjpeg      (d) file bytes read by a background thread, batched
                    torchvision.io.decode_jpeg on the GPU (nvJPEG), GPU
                    resize (antialias) + crop + normalize, resnet50 fp16
                    channels-last; GPU only
  pillow-draft      decode-only ceiling of Pillow: Pool(cores) of Image.open,
                    draft("RGB", (256, 256)) (libjpeg DCT scaling),
                    exif_transpose, convert RGB, resize shorter side to 256
                    (BILINEAR, as torchvision) + center crop 224 + normalize
                    to a float array
  pillow-full       the same without draft

    python3 bench/tag_peers.py DIR --tandem PATH [--peers a,b] [--limit-slow N] [--out OUTDIR]

ResNet-50 is torchvision's architecture with seeded random weights (no
trained weights can be fetched on the GPU machine); tandem reads the ONNX
file exported here from the same fp32 model (opset 17, input "input"
[N, 3, 224, 224], dynamic batch) unless --model names one. img/s is end to
end: files / the peer's wall time from model load (tandem: process start)
to the last result, as a user sees it; "steady" leaves out the start (torch:
model load and the first batch; tandem: what its summary reports, model
load excluded). Every peer reads from a warm page cache: all files are read
once before the first peer. On a GPU an unmeasured tag of 300 files first
fills tandem's on-disk cuDNN algorithm cache, as any earlier run would have
(--cold leaves it out; the machine line says which). The slow peers (SLOW_PEERS) may take only the
first N files (--limit-slow N) unless --all-files names them; the table says how many each took.
torch's "steady" counts from its first batch, when the DataLoader's workers
have each prefetched batches: on a few hundred files it says little.
Prints a markdown table, the issue's targets as met/missed, and one JSON
line; --out DIR also writes them to DIR/tag_peers.md and DIR/tag_peers.json.
Runs on Debian's /usr/bin/python3 (torch 1.13, torchvision 0.14, Pillow 9.4)
and on the GPU machine's newer torch.
"""
import argparse
import datetime
import inspect
import json
import os
import platform
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

PEERS = ["tandem-decode", "tandem-decode-cpu", "tandem-tag", "tandem-tag-cpu-decode", "tandem-tag-profile", "torch-dataloader", "torch-nvjpeg", "pillow-draft", "pillow-full"]
SLOW_PEERS = {"torch-dataloader", "torch-nvjpeg", "pillow-full"}
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
RESIZE, CROP, BATCH = 256, 224, 64
# (name, better, worse, factor, where): better must reach factor x worse.
TARGETS = [
    ("(b) >= 0.9 x (a)", "tandem-tag", "tandem-decode", 0.9, "gpu"),
    ("(a) >= 1.5 x pillow-draft", "tandem-decode", "pillow-draft", 1.5, "gpu"),
    ("(b) >= 10 x (c)", "tandem-tag", "torch-dataloader", 10.0, "gpu"),
    ("(b) >= 4 x (d)", "tandem-tag", "torch-nvjpeg", 4.0, "gpu"),
    ("(b) >= 3 x (c)", "tandem-tag", "torch-dataloader", 3.0, "cpu"),
    # Issue 6: tag --profile loses at most 2% of the throughput.
    ("--profile >= 0.98 x (b)", "tandem-tag-profile", "tandem-tag", 0.98, "gpu"),
    ("--profile >= 0.98 x (b)", "tandem-tag-profile", "tandem-tag", 0.98, "cpu"),
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


def tandem_version(tandem):
    try:
        r = subprocess.run([tandem, "--version"], capture_output=True, text=True, timeout=30)
        return r.stdout.strip() or None
    except OSError:
        return None


def gpu_line():
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        return r.stdout.strip().splitlines()[0] if r.returncode == 0 and r.stdout.strip() else None
    except (OSError, subprocess.TimeoutExpired):
        return None


# ---- workers: each runs in its own process (`--worker NAME`) ----

def build_resnet50():
    import torch
    import torchvision
    torch.manual_seed(0)
    return torchvision.models.resnet50(weights=None).eval()


def worker_probe(_args):
    import numpy
    import PIL
    import torch
    import torchvision
    from PIL import features
    return {"torch": torch.__version__, "torchvision": torchvision.__version__, "pillow": PIL.__version__,
            "pillow_libjpeg_turbo": features.version("libjpeg_turbo"), "numpy": numpy.__version__,
            "cuda": torch.cuda.is_available(),
            "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}


def worker_export(args):
    import torch
    kw = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(build_resnet50(), torch.randn(1, 3, CROP, CROP), args.model, opset_version=17,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, **kw)
    return {"model": args.model}


def pil_resize_crop(img):
    """Resize(256) + CenterCrop(224) as torchvision does them on a PIL image:
    shorter side to 256, the other int(256 * long / short), BILINEAR; crop
    offsets rounded."""
    from PIL import Image
    w, h = img.size
    size = (RESIZE, int(RESIZE * h / w)) if w <= h else (int(RESIZE * w / h), RESIZE)
    img = img.resize(size, Image.BILINEAR)
    left, top = int(round((size[0] - CROP) / 2.0)), int(round((size[1] - CROP) / 2.0))
    return img.crop((left, top, left + CROP, top + CROP))


def pil_decode_one(task):
    """One file to a normalized CHW float32 array; returns its sum, so the
    work cannot be skipped and the array need not cross processes."""
    import numpy as np
    from PIL import Image, ImageOps
    path, draft = task
    with Image.open(path) as img:
        if draft:
            img.draft("RGB", (RESIZE, RESIZE))
        img = ImageOps.exif_transpose(img).convert("RGB")
    x = np.asarray(pil_resize_crop(img), dtype=np.float32) / 255.0
    x = ((x - np.array(MEAN, np.float32)) / np.array(STD, np.float32)).transpose(2, 0, 1)
    return float(x.sum())


def worker_pillow(args, draft):
    import multiprocessing
    files = read_list(args.files)
    t0 = time.perf_counter()
    with multiprocessing.Pool(args.cores) as pool:
        for _ in pool.imap_unordered(pil_decode_one, [(p, draft) for p in files], chunksize=4):
            pass
    total = time.perf_counter() - t0
    return {"files": len(files), "seconds": round(total, 3), "img_per_s": round(len(files) / total, 3)}


class ImageFiles:
    """What torchvision's ImageFolder does with a file: PIL open +
    convert("RGB") (its pil_loader), then the transform."""

    def __init__(self, files, transform):
        self.files, self.transform = files, transform

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        from PIL import Image
        with open(self.files[i], "rb") as f:
            img = Image.open(f).convert("RGB")
        return self.transform(img), i


def rates(done, t0, first, t_first):
    """End to end since t0, and steady: after the first `first` images,
    done at t_first."""
    now = time.perf_counter()
    steady = (done - first) / (now - t_first) if done > first else None
    return {"files": done, "seconds": round(now - t0, 3), "img_per_s": round(done / (now - t0), 3),
            "steady_img_per_s": steady and round(steady, 3)}


def top5(logits):
    """Softmax top-5 per image, brought to the host as a user would."""
    p, i = logits.float().softmax(1).topk(5, dim=1)
    return p.cpu(), i.cpu()


def worker_dataloader(args):
    import torch
    from torchvision import transforms
    files = read_list(args.files)
    cuda = torch.cuda.is_available()
    t0 = time.perf_counter()
    model = build_resnet50()
    if cuda:
        model = model.cuda().half().to(memory_format=torch.channels_last)
    else:
        torch.set_num_threads(args.cores)
    tf = transforms.Compose([transforms.Resize(RESIZE), transforms.CenterCrop(CROP), transforms.ToTensor(),
                             transforms.Normalize(MEAN, STD)])
    loader = torch.utils.data.DataLoader(ImageFiles(files, tf), batch_size=BATCH, num_workers=args.cores,
                                         pin_memory=cuda)
    done, t_first, first = 0, None, 0
    with torch.inference_mode():
        for x, _ in loader:
            if cuda:
                x = x.cuda(non_blocking=True).half().to(memory_format=torch.channels_last)
            top5(model(x))
            done += x.shape[0]
            if t_first is None:
                t_first, first = time.perf_counter(), done
    return {**rates(done, t0, first, t_first),
            "device": "cuda fp16 channels-last" if cuda else "cpu fp32 %d threads" % args.cores}


def read_batches(files, out):
    """Background reader: lists of file-byte tensors, BATCH at a time."""
    import torchvision
    for k in range(0, len(files), BATCH):
        out.put([torchvision.io.read_file(p) for p in files[k:k + BATCH]])
    out.put(None)


def gpu_resize_functions():
    """transforms.v2.functional where this torchvision has it, else v1's."""
    try:
        from torchvision.transforms.v2 import functional as F
        return F, "transforms.v2.functional"
    except ImportError:
        from torchvision.transforms import functional as F
        return F, "transforms.functional"


def nvjpeg_batch(datas, kw, batched, F, mean, std):
    """File bytes to the network's input: decode_jpeg (batched where this
    torchvision takes a list), per image resize + crop, then one normalize.
    Returns (input, whether the batched call worked)."""
    import torch
    from torchvision.io import decode_jpeg
    if batched:
        try:
            imgs = decode_jpeg(datas, **kw)
        except (TypeError, RuntimeError):  # this torchvision decodes one tensor per call
            batched = False
    if not batched:
        imgs = [decode_jpeg(d, **kw) for d in datas]
    crops = [F.center_crop(F.resize(i, [RESIZE], antialias=True), [CROP, CROP]) for i in imgs]
    x = torch.stack(crops).to(mean.dtype).div_(255).sub_(mean).div_(std)
    return x.contiguous(memory_format=torch.channels_last), batched


def worker_nvjpeg(args):
    import torch
    import torchvision
    from torchvision.io import ImageReadMode, decode_jpeg
    if not torch.cuda.is_available():
        return {"skipped": "no CUDA device: torchvision's nvJPEG decode needs one"}
    files = read_list(args.files)
    F, f_name = gpu_resize_functions()
    exif = "apply_exif_orientation" in inspect.signature(decode_jpeg).parameters
    kw = {"mode": ImageReadMode.RGB, "device": "cuda", **({"apply_exif_orientation": True} if exif else {})}
    t0 = time.perf_counter()
    model = build_resnet50().cuda().half().to(memory_format=torch.channels_last)
    mean = torch.tensor(MEAN, device="cuda", dtype=torch.half).view(1, 3, 1, 1)
    std = torch.tensor(STD, device="cuda", dtype=torch.half).view(1, 3, 1, 1)
    batches = queue.Queue(maxsize=4)
    threading.Thread(target=read_batches, args=(files, batches), daemon=True).start()
    batched, done, t_first, first = True, 0, None, 0
    with torch.inference_mode():
        while (datas := batches.get()) is not None:
            x, batched = nvjpeg_batch(datas, kw, batched, F, mean, std)
            top5(model(x))
            done += len(datas)
            if t_first is None:
                t_first, first = time.perf_counter(), done
    return {**rates(done, t0, first, t_first), "decode_jpeg": "batched list" if batched else "one tensor per call",
            "exif_orientation": "apply_exif_orientation=True" if exif else "not applied (no such parameter)",
            "resize": f_name + ".resize(antialias=True)", "torchvision": torchvision.__version__}


WORKERS = {"probe": worker_probe, "export": worker_export, "torch-dataloader": worker_dataloader,
           "torch-nvjpeg": worker_nvjpeg, "pillow-draft": lambda a: worker_pillow(a, True),
           "pillow-full": lambda a: worker_pillow(a, False)}


def read_list(path):
    with open(path) as f:
        return [line.rstrip("\n") for line in f if line.strip()]


# ---- the driver ----

def last_error_line(text):
    """The message of a failed command: its last line, less CLI11's "Run
    with --help" tail."""
    lines = [line.strip() for line in (text or "").splitlines()
             if line.strip() and not line.startswith("Run with --help")]
    return lines[-1][:300] if lines else "failed"


def run_worker(name, a, files_path, timeout):
    cmd = [sys.executable, os.path.abspath(__file__), a.directory, "--tandem", a.tandem or "", "--worker", name,
           "--files", files_path, "--cores", str(a.cores), "--model", a.model or ""]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": "timed out after %d s" % timeout}
    if p.returncode != 0:
        return {"error": last_error_line(p.stderr or p.stdout)}
    return json.loads(p.stdout.strip().splitlines()[-1])


def warm_algo_cache(a, files, tmp):
    """Tags the first 300 files once, unmeasured, so the tandem peers find
    cuDNN's algorithm choices in the on-disk cache (cuda/algo_cache.h), as
    every run after a user's first does; without it the first tandem peer
    alone pays the search (~1.5 s for ResNet-50). Returns what it did."""
    subset = os.path.join(tmp, "warm")
    os.makedirs(subset, exist_ok=True)
    for i, path in enumerate(files[:300]):
        os.symlink(path, os.path.join(subset, "%04d%s" % (i, os.path.splitext(path)[1])))
    cmd = [a.tandem, "tag", subset, "--model", a.model, "--device", "cuda", "--precision", "fp16", "--catalog",
           os.path.join(tmp, "warm.sqlite")]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    if p.returncode != 0:
        return "warm-up failed: " + last_error_line(p.stderr)
    return "warmed by an unmeasured tag of %d files (%.1f s)" % (min(300, len(files)), time.perf_counter() - t0)


SUMMARY_COUNTS = re.compile(r"(?:tagged|decoded) (\d+) images, (\d+) failed")
SUMMARY_RATE = re.compile(r"([\d.]+) s, ([\d.]+) images/s")


def run_tandem(name, a, cuda, timeout):
    """tandem in a fresh temporary folder (a fresh catalog); img/s from the
    process's wall time, the steady rate and counts from its summary."""
    tmp = tempfile.mkdtemp(prefix="tag_peers_")
    cmd = [a.tandem, "tag", a.directory, "--json", "--model", a.model]
    cmd += ["--device", "cuda", "--precision", "fp16"] if cuda else ["--device", "cpu"]
    cmd += ["--decode-only"] if name.startswith("tandem-decode") else ["--catalog", os.path.join(tmp, "cat.sqlite")]
    if name == "tandem-tag-profile":
        cmd += ["--profile", os.path.join(tmp, "profile")]
    if name in ("tandem-decode-cpu", "tandem-tag-cpu-decode"):
        cmd += ["--nvjpeg", "off"]  # the CPU decoders alone: what nvJPEG adds
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
    r = {"command": " ".join(cmd), "summary": [l for l in p.stderr.splitlines() if l.strip()][-6:]}
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


def fmt_rate(v):
    return "%.1f" % v if isinstance(v, (int, float)) else ""


def table(rows):
    base = next((r.get("img_per_s") for r in rows if r["peer"] == "tandem-tag" and "img_per_s" in r), None)
    out = ["| peer | files | seconds | img/s | steady img/s | ratio to tandem-tag |",
           "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if "img_per_s" not in r:
            why = ("error: " + r["error"]) if "error" in r else ("skipped: " + r.get("skipped", ""))
            out.append("| %s | | | %s | | |" % (r["peer"], why.replace("|", "/")))
            continue
        ratio = "%.2f" % (r["img_per_s"] / base) if base else ""
        out.append("| %s | %d | %.2f | %.1f | %s | %s |" % (r["peer"], r["files"], r["seconds"], r["img_per_s"],
                                                           fmt_rate(r.get("steady_img_per_s")), ratio))
    return out


def target_checks(rows, cuda):
    by = {r["peer"]: r for r in rows if "img_per_s" in r}
    out = []
    for label, better, worse, factor, where in TARGETS:
        if where != ("gpu" if cuda else "cpu"):
            continue
        if better not in by or worse not in by:
            out.append({"target": label, "status": "not measured"})
            continue
        ratio = by[better]["img_per_s"] / by[worse]["img_per_s"]
        check = {"target": label, "status": "met" if ratio >= factor else "missed", "ratio": round(ratio, 3)}
        b, w = by[better].get("steady_img_per_s"), by[worse].get("steady_img_per_s") or by[worse]["img_per_s"]
        if b:
            check["steady_ratio"] = round(b / w, 3)
        out.append(check)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("directory", metavar="DIR", help="the corpus (every .jpg/.jpeg under it)")
    ap.add_argument("--tandem", help="the tandem CLI (needed by the tandem-* peers)")
    ap.add_argument("--model", help="ONNX ResNet-50 for tandem (default: exported from the seeded torchvision model)")
    ap.add_argument("--peers", default=",".join(PEERS), help="comma-separated, from: " + ", ".join(PEERS))
    ap.add_argument("--limit-slow", type=int, default=0, metavar="N",
                    help="the slow peers (%s) take only the first N files (0: all)" % ", ".join(sorted(SLOW_PEERS)))
    ap.add_argument("--all-files", default="", metavar="PEERS",
                    help="slow peers that take every file all the same (comma-separated)")
    ap.add_argument("--cores", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per peer")
    ap.add_argument("--out", help="also write tag_peers.md and tag_peers.json here")
    ap.add_argument("--cold", action="store_true",
                    help="no warm-up: the first tandem peer also measures cuDNN's convolution algorithms")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--files", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(WORKERS[a.worker](a)))
        return
    peers = [p.strip() for p in a.peers.split(",") if p.strip()]
    unknown = [p for p in peers if p not in PEERS]
    if unknown:
        ap.error("unknown peers: " + ", ".join(unknown))
    if any(p.startswith("tandem") for p in peers) and not a.tandem:
        ap.error("--tandem is needed for the tandem-* peers")
    files = list_images(a.directory)
    if not files:
        sys.exit("tag_peers: no .jpg files under " + a.directory)
    a.directory = os.path.abspath(a.directory)
    # tandem runs in a temporary folder: paths relative to here must not move.
    if a.tandem and os.sep in a.tandem:
        a.tandem = os.path.abspath(a.tandem)
    if a.model:
        a.model = os.path.abspath(a.model)
    tmp = tempfile.mkdtemp(prefix="tag_peers_")
    try:
        run_all(a, peers, files, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


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
    lists = {}
    for limit in {a.limit_slow if a.limit_slow > 0 else len(files), len(files)}:
        lists[limit] = os.path.join(tmp, "files_%d.txt" % limit)
        with open(lists[limit], "w") as f:
            f.write("".join(p + "\n" for p in files[:limit]))
    t0 = time.perf_counter()
    warm_page_cache(files)
    warm_s = time.perf_counter() - t0
    machine = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
               "host": platform.node(), "nproc": os.cpu_count(), "cores_used": a.cores, "cpu": cpu_model(),
               "gpu": gpu_line(), "tandem": a.tandem and tandem_version(a.tandem), **{k: env[k] for k in ("torch", "torchvision", "pillow", "pillow_libjpeg_turbo",
                                                         "numpy", "cuda_device")}}
    corpus = {"dir": a.directory, "files": len(files), "bytes": sum(os.path.getsize(p) for p in files),
              "warm_read_s": round(warm_s, 2)}
    machine["algo_cache"] = "cold" if a.cold or not cuda else warm_algo_cache(a, files, tmp)
    print("machine: %s" % json.dumps(machine), flush=True)
    print("corpus: %s (every peer reads from a warm page cache)" % json.dumps(corpus), flush=True)
    rows = []
    for peer in peers:
        if peer.startswith("tandem"):
            r = run_tandem(peer, a, cuda, a.timeout)
        else:
            limited = peer in SLOW_PEERS and peer not in a.all_files.split(",") and a.limit_slow > 0
            limit = a.limit_slow if limited else len(files)
            r = run_worker(peer, a, lists[min(limit, len(files))], a.timeout)
        rows.append({"peer": peer, **r})
        print(json.dumps(rows[-1]), flush=True)
    checks = target_checks(rows, cuda)
    lines = ["", "tandem tag and its peers, %s, %s%s" % (machine["date"], machine["cpu"],
                                                        ", " + machine["gpu"] if machine["gpu"] else ""),
             "%d of %d cores; torch %s, torchvision %s, Pillow %s (libjpeg-turbo %s); corpus %s: %d files, "
             "%.2f MB mean; every peer reads from a warm page cache; slow peers limited to %s files" %
             (a.cores, machine["nproc"], env["torch"], env["torchvision"], env["pillow"],
              env["pillow_libjpeg_turbo"], a.directory, len(files), corpus["bytes"] / len(files) / 1e6,
              a.limit_slow if a.limit_slow > 0 else "all"), ""]
    lines += table(rows)
    lines += ["", "targets (%s):" % ("H200 machine" if cuda else "CPU only")]
    for c in checks:
        lines.append("  %s: %s%s" % (c["target"], c["status"],
                                     " (ratio %.2f%s)" % (c["ratio"], ", steady %.2f" % c["steady_ratio"]
                                                          if "steady_ratio" in c else "") if "ratio" in c else ""))
    result = {"machine": machine, "corpus": corpus, "limit_slow": a.limit_slow or None, "rows": rows,
              "targets": checks}
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
