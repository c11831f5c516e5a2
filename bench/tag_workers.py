#!/usr/bin/env python3
"""The Python peers of bench/tag_peers.py, each run in a process of its own:

    python3 bench/tag_workers.py NAME [--files LIST] [--cores N] [--model PATH]

prints one JSON line: {"files", "seconds", "img_per_s", "steady_img_per_s",
...} for a peer, the versions for "probe", the written path for "export".
LIST holds one photo path a line. A peer's clock starts before its model
load (after the imports) and stops at its last result; "steady" counts
from its first batch, when the DataLoader's workers have each prefetched
batches.

  torch-ssdlite     the job a PyTorch user writes for object tags: a
                    Dataset that opens each file with PIL, converts it to
                    RGB, resizes it to the model's 320x320 input and makes
                    it a tensor (ToTensor); DataLoader(num_workers = cores,
                    pin_memory on a GPU); torchvision's
                    ssdlite320_mobilenet_v3_large with seeded random weights
                    (timing only), fp16 on a GPU, fp32 on the CPU
                    (set_num_threads(cores)), eval + inference_mode, the
                    detections brought to the host
  torch-dataloader  the same job for ImageNet classes: Resize(256) +
                    CenterCrop(224) + ToTensor + Normalize, resnet50 fp16
                    channels-last on a GPU (fp32 on the CPU), softmax top-5
  torch-nvjpeg      file bytes read by a background thread, batched
                    torchvision.io.decode_jpeg on the GPU (nvJPEG), GPU
                    resize (antialias) + crop + normalize, resnet50 fp16
                    channels-last; GPU only
  pillow-draft      Pillow's decode-only ceiling: Pool(cores) of Image.open,
                    draft("RGB", (256, 256)) (libjpeg DCT scaling),
                    exif_transpose, convert RGB, resize shorter side to 256
                    (BILINEAR, as torchvision) + center crop 224 + normalize
                    to a float array
  pillow-full       the same without draft

Runs on Debian's /usr/bin/python3 (torch 1.13, torchvision 0.14, Pillow 9.4)
and on a GPU host's newer torch.
"""
import argparse
import inspect
import json
import queue
import threading
import time

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
RESIZE, CROP = 256, 224
SSD_SIZE = 320  # ssdlite320's input
# DataLoader batches: 64 on a GPU; on the CPU 8, tandem's own default
# there, so that a few hundred photos still make a pipeline of batches.
BATCH = {"gpu": 64, "cpu": 8}
MIN_SCORE = 0.25  # detections counted as tags, as `tandem tag` keeps them


def read_list(path):
    with open(path) as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def rates(done, t0, first, t_first):
    """End to end since t0, and steady: after the first `first` images,
    done at t_first."""
    now = time.perf_counter()
    steady = (done - first) / (now - t_first) if done > first else None
    return {"files": done, "seconds": round(now - t0, 3), "img_per_s": round(done / (now - t0), 3),
            "steady_img_per_s": steady and round(steady, 3)}


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


# ---- ResNet-50 ----

def build_resnet50():
    import torch
    import torchvision
    torch.manual_seed(0)
    return torchvision.models.resnet50(weights=None).eval()


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


def top5(logits):
    """Softmax top-5 per image, brought to the host as a user would."""
    p, i = logits.float().softmax(1).topk(5, dim=1)
    return p.cpu(), i.cpu()


def run_loader(loader, step):
    """Feeds every batch to step(x) (which returns how many images it did);
    the steady rate counts from the first batch's end."""
    done, t_first, first = 0, None, 0
    for x, _ in loader:
        done += step(x)
        if t_first is None:
            t_first, first = time.perf_counter(), done
    return done, t_first, first


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
    loader = torch.utils.data.DataLoader(ImageFiles(files, tf), batch_size=BATCH["gpu"], num_workers=args.cores,
                                         pin_memory=cuda)

    def step(x):
        if cuda:
            x = x.cuda(non_blocking=True).half().to(memory_format=torch.channels_last)
        top5(model(x))
        return x.shape[0]

    with torch.inference_mode():
        done, t_first, first = run_loader(loader, step)
    return {**rates(done, t0, first, t_first),
            "device": "cuda fp16 channels-last" if cuda else "cpu fp32 %d threads" % args.cores}


def read_batches(files, out):
    """Background reader: lists of file-byte tensors, a batch at a time."""
    import torchvision
    for k in range(0, len(files), BATCH["gpu"]):
        out.put([torchvision.io.read_file(p) for p in files[k:k + BATCH["gpu"]]])
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


# ---- the detector's peer ----

def build_ssdlite():
    """SSDlite320 MobileNetV3-Large, torchvision's smallest COCO detector,
    with seeded random weights: no trained weights can be fetched on a GPU
    host, and the time does not depend on them (the post-processing keeps
    at most 300 boxes an image either way)."""
    import torch
    import torchvision
    torch.manual_seed(0)
    return torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None).eval()


def worker_ssdlite(args):
    import torch
    from torchvision import transforms
    files = read_list(args.files)
    cuda = torch.cuda.is_available()
    batch = BATCH["gpu" if cuda else "cpu"]
    t0 = time.perf_counter()
    model = build_ssdlite()
    if cuda:
        model = model.cuda().half()
    else:
        torch.set_num_threads(args.cores)
    tf = transforms.Compose([transforms.Resize((SSD_SIZE, SSD_SIZE)), transforms.ToTensor()])
    loader = torch.utils.data.DataLoader(ImageFiles(files, tf), batch_size=batch, num_workers=args.cores,
                                         pin_memory=cuda)
    kept = 0

    def step(x):
        nonlocal kept
        if cuda:
            x = x.cuda(non_blocking=True).half()
        for d in model(list(x)):
            d = {k: v.cpu() for k, v in d.items()}  # boxes, scores, labels on the host
            kept += int((d["scores"] >= MIN_SCORE).sum())
        return x.shape[0]

    with torch.inference_mode():
        done, t_first, first = run_loader(loader, step)
    return {**rates(done, t0, first, t_first), "batch": batch, "detections_at_min_score": kept,
            "device": "cuda fp16" if cuda else "cpu fp32 %d threads" % args.cores}


WORKERS = {"probe": worker_probe, "export": worker_export, "torch-ssdlite": worker_ssdlite,
           "torch-dataloader": worker_dataloader, "torch-nvjpeg": worker_nvjpeg,
           "pillow-draft": lambda a: worker_pillow(a, True), "pillow-full": lambda a: worker_pillow(a, False)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("name", choices=sorted(WORKERS))
    ap.add_argument("--files", help="the photos, one path a line")
    ap.add_argument("--cores", type=int, default=1)
    ap.add_argument("--model", help="export: where the ResNet-50 ONNX goes")
    a = ap.parse_args()
    print(json.dumps(WORKERS[a.name](a)))


if __name__ == "__main__":
    main()
