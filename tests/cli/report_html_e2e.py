#!/usr/bin/python3
"""report.html in headless Chromium: `tandem tag` (several threads) and
`tandem bench` with --profile on the tiny classifier of profile_e2e.py; each
report.html must load without script errors (the page sets
<body data-status="ok"> after drawing, "error" with data-errors when
window.onerror fired; read back with --dump-dom), draw one timeline lane per
thread of summary.json (data-lanes), and make a non-empty PNG screenshot.
Exit 77 (skipped) when chromium, onnx or cv2 are missing.

A third page comes from the unit tests (TANDEM_TESTS_BIN, the gtest
GpuActivity.ReportHtmlForTheBrowserTest): a synthetic run with two GPU
streams, so the GPU lanes are checked without a GPU.

usage: report_html_e2e.py TANDEM_BIN [SCREENSHOT_DIR] [TANDEM_TESTS_BIN]
"""
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_e2e import finish, photos, run, tiny_classifier  # noqa: E402  (exits 77 without onnx/cv2)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def chromium():
    for name in ("chromium", "chromium-headless-shell", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def chromium_args(browser, profile_home):
    # --no-sandbox: CI runs as root; a fresh user-data-dir keeps runs apart.
    return [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--user-data-dir=" + profile_home, "--window-size=1400,900"]


class BodyAttrs(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.attrs = None

    def handle_starttag(self, tag, attrs):
        if tag == "body" and self.attrs is None:
            self.attrs = dict(attrs)


def check_report(browser, folder, shot, work):
    errors = []
    page = os.path.join(folder, "report.html")
    if not os.path.isfile(page):
        return [f"{folder}: no report.html"]
    with open(page, encoding="utf-8") as f:
        text = f.read()
    for remote in ("http://", "https://", "//cdn", "@import", "<link"):
        if remote in text:
            errors.append(f"{page}: refers to something outside the page ({remote!r})")
    with open(os.path.join(folder, "summary.json")) as f:
        summary = json.load(f)
    threads = len(summary["threads"])
    gpu = summary.get("gpu", {})
    streams = gpu["counts"]["streams"] if gpu.get("present") else 0
    url = "file://" + os.path.abspath(page)
    r = run(chromium_args(browser, os.path.join(work, "chrome-dom")) + ["--dump-dom", url])
    parser = BodyAttrs()
    parser.feed(r.stdout)
    body = parser.attrs
    if r.returncode != 0 or body is None:
        return errors + [f"{page}: --dump-dom failed ({r.returncode}): {r.stderr[-2000:]}"]
    if body.get("data-status") != "ok":
        errors.append(f"{page}: status {body.get('data-status')!r}, errors {body.get('data-errors')!r}")
    if body.get("data-lanes") != str(threads + streams):
        errors.append(f"{page}: {body.get('data-lanes')} lanes, summary.json has {threads} threads "
                      f"and {streams} GPU streams")
    r = run(chromium_args(browser, os.path.join(work, "chrome-shot")) + ["--screenshot=" + shot, url])
    if r.returncode != 0 or not os.path.isfile(shot):
        return errors + [f"{page}: no screenshot ({r.returncode}): {r.stderr[-2000:]}"]
    with open(shot, "rb") as f:
        png = f.read()
    if not png.startswith(PNG_MAGIC) or len(png) < 10000:
        errors.append(f"{shot}: not a PNG of a drawn page ({len(png)} bytes)")
    print(f"{page}: {threads} thread + {streams} GPU stream lanes, status ok={body.get('data-status') == 'ok'}, screenshot {shot} "
          f"({len(png)} bytes)")
    return errors


def main():
    tandem = sys.argv[1]
    browser = chromium()
    if browser is None:
        print("SKIP: no chromium (Debian package chromium)")
        sys.exit(77)
    errors = []
    with tempfile.TemporaryDirectory() as work:
        shots = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] else work
        os.makedirs(shots, exist_ok=True)
        model = os.path.join(work, "tiny.onnx")
        tiny_classifier(model)
        photos(os.path.join(work, "photos"), 12)
        runs = {
            "tag": [tandem, "tag", os.path.join(work, "photos"), "--model", model, "--device", "cpu",
                    "--decoders", "2", "--batch", "4", "--json"],
            "bench": [tandem, "bench", model, "--device", "cpu", "--batch", "2", "-n", "5"],
        }
        for name, args in runs.items():
            folder = os.path.join(work, name)
            r = run(args + ["--profile", folder])
            if name == "tag" and r.returncode != 0 and "no ImageNet class names" in r.stderr:
                print("tag skipped: no ImageNet class names (python3-torchvision or darknet)")
                continue
            if r.returncode != 0:
                errors.append(f"{name} failed ({r.returncode}): {r.stderr}")
                continue
            errors += check_report(browser, folder, os.path.join(shots, f"report_{name}.png"), work)
        if len(sys.argv) > 3:
            folder = os.path.join(work, "gpu")
            r = subprocess.run([sys.argv[3], "--gtest_filter=GpuActivity.ReportHtmlForTheBrowserTest"],
                               env=dict(os.environ, TANDEM_REPORT_SAMPLE_DIR=folder), capture_output=True, text=True)
            if r.returncode != 0:
                errors.append(f"synthetic GPU report failed ({r.returncode}): {r.stdout[-2000:]}")
            else:
                errors += check_report(browser, folder, os.path.join(shots, "report_gpu.png"), work)
    finish(errors, "report.html e2e")


if __name__ == "__main__":
    main()
