#!/usr/bin/python3
"""`--profile DIR` end to end: `tandem tag` on a few photos and `tandem bench`,
both on the CPU with a tiny ONNX classifier made here (onnx.helper), must
write trace.json (Chrome trace: X events on >= 2 named threads for tag),
summary.txt and summary.json (each thread's split adds up to its lifetime
within 1%), and `tandem profile-diff` must compare two runs.
Exit 77 (skipped) when onnx or cv2 are missing.

usage: profile_e2e.py TANDEM_BIN
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import cv2
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

SPLIT_KEYS = ["compute", "wait_gpu", "io", "wait_lock", "idle"]


def tiny_classifier(path):
    """[N,3,32,32] -> Conv 3->4 -> GlobalAveragePool -> Flatten -> Gemm -> [N,1000]."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    g = numpy_helper.from_array(rng.standard_normal((4, 1000)).astype(np.float32), "g")
    nodes = [
        helper.make_node("Conv", ["input", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["c"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "g"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes, "tiny",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 32, 32])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 1000])],
        [w, g])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def photos(folder, n):
    rng = np.random.default_rng(1)
    os.makedirs(folder)
    for i in range(n):
        img = rng.integers(0, 255, (120 + 8 * i, 160, 3), dtype=np.uint8)
        cv2.imwrite(os.path.join(folder, f"p{i}.jpg"), img)


def run(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, timeout=300, **kw)
    return r


def check_profile(folder, min_named_threads):
    errors = []
    for name in ("trace.json", "summary.txt", "summary.json"):
        if not os.path.isfile(os.path.join(folder, name)):
            errors.append(f"{folder}: no {name}")
    if errors:
        return errors
    with open(os.path.join(folder, "trace.json")) as f:
        trace = json.load(f)
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    x_tids = {e["tid"] for e in trace["traceEvents"] if e["ph"] == "X"}
    named = sorted(names[t] for t in x_tids if t in names)
    if len(named) < min_named_threads:
        errors.append(f"{folder}: X events on named threads {named}, want >= {min_named_threads}")
    with open(os.path.join(folder, "summary.json")) as f:
        s = json.load(f)
    if s.get("format") != "tandem-profile-summary" or not s["stages"] or not s["verdict"]:
        errors.append(f"{folder}: summary.json lacks stages or verdict")
    for t in s["threads"]:
        life = t["end_ns"] - t["begin_ns"]
        total = sum(t["split"][k] for k in SPLIT_KEYS)
        if life <= 0 or abs(total - life) > 0.01 * life:
            errors.append(f"{folder}: thread {t['name']}: split sums to {total} ns, lifetime {life} ns")
    overall = sum(s["split"][k] for k in SPLIT_KEYS)
    threads = sum(t["end_ns"] - t["begin_ns"] for t in s["threads"])
    if abs(overall - threads) > 0.01 * max(threads, 1):
        errors.append(f"{folder}: overall split {overall} ns, thread lifetimes {threads} ns")
    with open(os.path.join(folder, "summary.txt")) as f:
        if "verdict: " not in f.read():
            errors.append(f"{folder}: summary.txt has no verdict")
    return errors


def finish(errors, what):
    """Prints the failures and exits 1 if there were any."""
    for e in errors:
        print("FAIL", e)
    print(f"{what}: {len(errors)} failed")
    sys.exit(1 if errors else 0)


def main():
    tandem = sys.argv[1]
    errors = []
    with tempfile.TemporaryDirectory() as work:
        model = os.path.join(work, "tiny.onnx")
        tiny_classifier(model)
        photos(os.path.join(work, "photos"), 12)

        tag_dir = os.path.join(work, "tag_profile")
        r = run([tandem, "tag", os.path.join(work, "photos"), "--model", model, "--device", "cpu",
                 "--decoders", "2", "--batch", "4", "--json", "--profile", tag_dir])
        if r.returncode != 0 and "no ImageNet class names" in r.stderr:
            print("SKIP: no ImageNet class names for tag (python3-torchvision or darknet)")
            sys.exit(77)
        if r.returncode != 0:
            errors.append(f"tag failed ({r.returncode}): {r.stderr}")
        else:
            if "verdict: " not in r.stderr:
                errors.append(f"tag: no short summary on stderr: {r.stderr}")
            errors += check_profile(tag_dir, 2)

        benches = []
        for batch in ("1", "2"):
            d = os.path.join(work, f"bench_b{batch}")
            r = run([tandem, "bench", model, "--device", "cpu", "--batch", batch, "-n", "5",
                     "--profile", d, "--trace", os.path.join(work, f"b{batch}.json")])
            if r.returncode != 0:
                errors.append(f"bench failed ({r.returncode}): {r.stderr}")
                continue
            benches.append(d)
            errors += check_profile(d, 1)
            if not os.path.isfile(os.path.join(work, f"b{batch}.json")):
                errors.append("bench: --trace FILE not written beside --profile")
        if len(benches) == 2:
            r = run([tandem, "profile-diff", benches[0], os.path.join(benches[1], "summary.json")])
            if r.returncode != 0 or "plan.run" not in r.stdout or "B/A" not in r.stdout:
                errors.append(f"profile-diff ({r.returncode}): {r.stdout} {r.stderr}")
            else:
                print(r.stdout)
        r = run([tandem, "profile-diff", benches[0] if benches else work, os.path.join(work, "nowhere")])
        if r.returncode == 0 or "tandem: " not in r.stderr:
            errors.append(f"profile-diff of a missing run: rc {r.returncode}, {r.stderr}")
        if not errors:
            with open(os.path.join(tag_dir, "summary.txt")) as f:
                print(f.read())
    finish(errors, "profile e2e")


if __name__ == "__main__":
    main()
