#!/usr/bin/python3
"""`tandem serve` over HTTP: the API answers what the catalog holds, and
every bad request the gallery's safety rules name is refused, never a crash
or a 500:

  * binding beyond loopback without --token is refused at start; with a
    token, a request without it (or with a wrong one) is 401, with it (the
    header, or ?token= for images) answered;
  * a Host header that is not this machine's name is 403 (DNS rebinding);
  * paths with '..' (plain, percent-encoded, mixed case), backslashes or
    encoded slashes are 400; files are served by catalog id only;
  * a tagged file replaced by a symlink to a file outside the folders `tag`
    was given is 403; a deleted or changed one is shown as missing and its
    routes are 404;
  * a body over 64 KiB is 413, a URL over 8 KiB 414;
  * without --allow-edits every edit is 403; with it, a non-JSON body is 415,
    a bad id 400, and a name set from HTTP is what `tandem people` lists;
  * SQL-looking filter values are data (bound parameters): no rows, 200;
  * a file name that is not UTF-8 is listed (as U+FFFD) in valid JSON;
  * a catalog newer than this tandem, or another program's SQLite file, is
    refused with a message;
  * a catalog `tag` is writing is served all along: reads see its
    committed batches (the summary too) and never block it;
  * paging with cursors lists each photo once, newest date first.

Exit 77 (skipped) without darknet's photos (TANDEM_DARKNET_DATA, default
Debian's) or the detector model.
usage: check_serve_http.py TANDEM_BIN [--device cpu|cuda]  (the device `tag` writes the catalogs with)
"""
import argparse
import http.client
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

DARKNET = os.environ.get("TANDEM_DARKNET_DATA", "/usr/share/darknet/data")
DEVICE = "cpu"
failures = []


def expect(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def models_ok():
    models = os.environ.get("TANDEM_MODELS") or os.path.join(os.path.expanduser("~"), ".cache", "tandem", "models")
    return os.path.isdir(models) and any(n.startswith("centernet") for n in os.listdir(models))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, tandem, cat, env, *extra):
        self.port = free_port()
        self.p = subprocess.Popen([tandem, "serve", cat, "--port", str(self.port), *extra], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(100):
            try:
                if self.get("/api/summary", headers=self.auth_headers(extra))[0] in (200, 401):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        sys.exit("FAILED: tandem serve did not start: " + self.p.stderr.read().decode(errors="replace"))

    @staticmethod
    def auth_headers(extra):
        return {"X-Tandem-Token": extra[extra.index("--token") + 1]} if "--token" in extra else {}

    def get(self, path, method="GET", body=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        c.putrequest(method, path, skip_host="Host" in (headers or {}), skip_accept_encoding=True)
        for k, v in (headers or {}).items():
            c.putheader(k, v)
        if body is not None:
            c.putheader("Content-Length", str(len(body)))
        c.endheaders(body)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, r.getheader("Content-Type") or "", data

    def json(self, path, **kw):
        status, ctype, data = self.get(path, **kw)
        return status, json.loads(data) if ctype.startswith("application/json") else None

    def stop(self):
        self.p.terminate()
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()


def tag(tandem, lib, cat, env):
    r = subprocess.run([tandem, "tag", lib, "--catalog", cat, "--device", DEVICE, "--faces", "off"],
                       capture_output=True, env=env)
    if r.returncode != 0:
        sys.exit("FAILED: tandem tag\n" + r.stderr.decode(errors="replace")[-3000:])


def all_pages(s, query=""):
    photos, cursor = [], ""
    while True:
        st, page = s.json("/api/photos?limit=2" + query + ("&cursor=" + cursor if cursor else ""))
        assert st == 200, (st, page)
        photos += page["photos"]
        if page["next"] is None:
            return photos
        cursor = page["next"]


def main():
    global DEVICE
    ap = argparse.ArgumentParser()
    ap.add_argument("tandem")
    ap.add_argument("--device", default=DEVICE)
    a = ap.parse_args()
    tandem, DEVICE = a.tandem, a.device
    if not os.path.isdir(DARKNET) or not models_ok():
        print("SKIP: needs darknet's photos and the detector model (scripts/setup)")
        return 77
    work = tempfile.mkdtemp(prefix="tandem-serve-")
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"))
    lib = os.path.join(work, "photos")
    outside = os.path.join(work, "outside")
    os.makedirs(lib)
    os.makedirs(outside)
    for n in ["dog.jpg", "eagle.jpg", "giraffe.jpg", "horses.jpg", "person.jpg"]:
        shutil.copy2(os.path.join(DARKNET, n), os.path.join(lib, n))
    shutil.copy2(os.path.join(DARKNET, "dog.jpg"), os.path.join(lib, "dog copy.jpg"))
    shutil.copy2(os.path.join(DARKNET, "kite.jpg"), os.path.join(lib.encode(), b"caf\xe9.jpg"))
    shutil.copy2(os.path.join(DARKNET, "scream.jpg"), os.path.join(lib, "gone.jpg"))
    shutil.copy2(os.path.join(DARKNET, "eagle.jpg"), os.path.join(lib, "link.jpg"))
    cat = os.path.join(work, "cat.sqlite")
    tag(tandem, lib, cat, env)

    # After tagging: one file deleted, one replaced by a symlink to a copy
    # outside the library with the same size and time (so only the symlink
    # check can refuse it).
    os.remove(os.path.join(lib, "gone.jpg"))
    shutil.copy2(os.path.join(lib, "link.jpg"), os.path.join(outside, "secret.jpg"))
    os.remove(os.path.join(lib, "link.jpg"))
    os.symlink(os.path.join(outside, "secret.jpg"), os.path.join(lib, "link.jpg"))

    r = subprocess.run([tandem, "serve", cat, "--bind", "0.0.0.0", "--port", "0"], capture_output=True, env=env,
                       timeout=30)
    expect(r.returncode != 0 and b"--token" in r.stderr, "binding 0.0.0.0 without --token is refused")

    s = Server(tandem, cat, env)
    try:
        st, summary = s.json("/api/summary")
        expect(st == 200 and summary["photos"] == 9 and not summary["edits"], "summary counts the 9 photos, read-only")
        photos = all_pages(s)
        ids = [p["id"] for p in photos]
        expect(len(ids) == 9 and len(set(ids)) == 9, "pages of 2 list each photo once")
        dated = [p["taken_at"] for p in photos if p["taken_at"]]
        expect(dated == sorted(dated, reverse=True), "newest date taken first")
        expect(photos[-1]["taken_at"] is None or all(p["taken_at"] for p in photos),
               "photos without a date come after the dated ones")
        by_name = {p["name"]: p for p in photos}
        expect("caf\ufffd.jpg" in by_name, "a non-UTF-8 file name is listed as U+FFFD")
        expect(by_name["gone.jpg"]["missing"] and not by_name["dog.jpg"]["missing"], "a deleted file is missing")
        expect(by_name["dog.jpg"]["copies"] == 2, "an exact copy counts as a duplicate")
        st, dups = s.json("/api/duplicates")
        groups = sorted(sorted(p["name"] for p in g["photos"]) for g in dups["groups"]) if st == 200 else None
        expect(groups == [["dog copy.jpg", "dog.jpg"], ["eagle.jpg", "link.jpg"]],
               "the duplicates page groups dog.jpg with its copy")

        dog = by_name["dog.jpg"]["id"]
        st, d = s.json(f"/api/photo/{dog}")
        expect(st == 200 and any(o["label"] == "dog" for o in d["objects"]) and d["meta"]["make"] == "Canon",
               "one photo's objects and EXIF")
        st, dog_tagged = s.json("/api/photos?tag=dog")
        names = {p["name"] for p in dog_tagged["photos"]}
        tagged = all(any(t["label"] == "dog" for t in s.json(f"/api/photo/{p['id']}")[1]["tags"])
                     for p in dog_tagged["photos"])
        expect({"dog.jpg", "dog copy.jpg"} <= names and len(names) < 9 and tagged,
               "tag=dog lists dog.jpg and its copy, and only photos tagged dog")
        st, ctype, png = s.get(f"/thumb/{dog}?size=large")
        expect(st == 200 and ctype == "image/png" and png[:8] == b"\x89PNG\r\n\x1a\n", "a thumbnail is a PNG")
        st, ctype, jpg = s.get(f"/photo/{dog}")
        expect(st == 200 and ctype == "image/jpeg" and jpg == open(os.path.join(lib, "dog.jpg"), "rb").read(),
               "the photo is the file's bytes")

        gone, link = by_name["gone.jpg"]["id"], by_name["link.jpg"]["id"]
        for route in [f"/photo/{gone}", f"/thumb/{gone}"]:
            expect(s.get(route)[0] == 404, f"{route} of a deleted file is 404")
        for route in [f"/photo/{link}", f"/thumb/{link}"]:
            st, _, data = s.get(route)
            expect(st == 403 and b"Signature" not in data, f"{route} through a symlink out of the roots is 403")
        expect(s.get("/api/photo/999999")[0] == 404, "an unknown id is 404")

        for path in ["/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/%2E%2E%2Fetc%2Fpasswd", "/api/..%2fsummary",
                     "/photo/1/..", "/thumb/%5c..%5cetc", "/static\\..\\x", "/api/photo/1%00"]:
            st = s.get(path)[0]
            expect(st == 400, f"{path} is refused (400), got {st}")
        expect(s.get("/etc/passwd")[0] == 404, "a file path is not a route")
        expect(s.get("/api/summary", headers={"Host": "attacker.example"})[0] == 403, "a foreign Host is 403")
        expect(s.get("/api/summary", headers={"Host": "localhost:1"})[0] == 200, "Host localhost passes")

        st, res = s.json("/api/photos?tag=" + "x%27%20OR%201%3D1%20--")
        expect(st == 200 and res["photos"] == [], "an SQL-looking tag is data")
        st, res = s.json("/api/photos?q=%25")
        expect(st == 200 and res["photos"] == [], "q=% matches a literal %, not everything")
        for bad in ["limit=0", "limit=100000", "person=-1", "from=2021-13", "box=1,2,3,x", "box=nan,0,1,1",
                    "cursor=d.1.%27%3B", "tag=a&tag=b", "nonsense=1", "q=" + "a%20" * 20]:
            st, res = s.json("/api/photos?" + bad)
            expect(st == 400 and res and "error" in res, f"/api/photos?{bad} is 400 with a message")
        st = s.get("/api/summary?" + "a" * 9000)[0]
        expect(st == 414, f"a 9000-byte URL is 414, got {st}")
        st = s.get("/api/people/1/name", method="POST", body=b"x" * 70000, headers={"Content-Type": "application/json"})[0]
        expect(st == 413, f"a 70000-byte body is 413, got {st}")
        st = s.get("/api/people/merge", method="POST", body=b'{"into":1,"from":2}',
                   headers={"Content-Type": "application/json"})[0]
        expect(st == 403, "edits are refused without --allow-edits")
    finally:
        s.stop()

    # Edits, then a token.
    con = sqlite3.connect(cat)
    con.execute("INSERT INTO people (id, name, centroid, faces, created_at) VALUES (7, NULL, x'', 1, '')")
    con.commit()
    con.close()
    s = Server(tandem, cat, env, "--allow-edits")
    try:
        post = lambda path, body, ctype="application/json": s.get(path, method="POST", body=body,
                                                                 headers={"Content-Type": ctype})[0]
        expect(post("/api/people/7/name", b'{"name":"Alice"}', "text/plain") == 415, "a non-JSON edit is 415")
        expect(post("/api/people/7/name", b'{"name":') == 400, "a broken JSON body is 400")
        expect(post("/api/people/99/name", b'{"name":"Bob"}') == 400, "naming an unknown person is 400")
        expect(post("/api/people/7/name", b'{"name":"Alice"}') == 200, "naming person 7 is 200")
        listed = subprocess.run([tandem, "people", cat, "--json"], capture_output=True, env=env).stdout.decode()
        expect(any(json.loads(l)["name"] == "Alice" for l in listed.splitlines()), "tandem people lists Alice")
    finally:
        s.stop()

    s = Server(tandem, cat, env, "--token", "s3cret")
    try:
        expect(s.get("/api/summary")[0] == 401, "no token: 401")
        expect(s.get("/api/summary", headers={"X-Tandem-Token": "wrong"})[0] == 401, "a wrong token: 401")
        expect(s.get("/api/summary", headers={"X-Tandem-Token": "s3cret"})[0] == 200, "the token header: 200")
        expect(s.get(f"/thumb/{dog}?token=s3cret")[0] == 200, "?token= for images: 200")
    finally:
        s.stop()

    # Served while `tag` writes the same catalog: every answer is 200 and
    # shows what was committed so far (never fewer photos than before), and
    # the tag is never blocked.
    busy = os.path.join(work, "busy")
    os.makedirs(busy)
    for k in range(10):
        for n in ["dog.jpg", "eagle.jpg", "giraffe.jpg", "horses.jpg", "person.jpg", "kite.jpg", "scream.jpg"]:
            shutil.copy2(os.path.join(DARKNET, n), os.path.join(busy, "%d-%s" % (k, n)))
    busy_cat = os.path.join(work, "busy.sqlite")
    tag(tandem, os.path.join(busy, "0-dog.jpg"), busy_cat, env)
    s = Server(tandem, busy_cat, env)
    try:
        writer = subprocess.Popen([tandem, "tag", busy, "--catalog", busy_cat, "--device", DEVICE, "--faces", "off",
                                   "--batch", "4"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        seen, statuses = [], set()
        while writer.poll() is None:
            st, summary = s.json("/api/summary")
            statuses.add(st)
            st2, page = s.json("/api/photos?limit=200")
            statuses.add(st2)
            if st == 200 and st2 == 200:
                seen.append((summary["photos"], len(page["photos"])))
            time.sleep(0.05)
        expect(writer.returncode == 0, "tag wrote the catalog while it was served: " +
               writer.stderr.read().decode(errors="replace")[-300:])
        expect(statuses == {200}, f"every answer during the writes was 200: {sorted(statuses)}")
        pages = [n for _, n in seen]
        expect(len(seen) >= 3 and pages == sorted(pages), f"the pages only grew while tag wrote: {pages}")
        st, summary = s.json("/api/summary")
        expect(st == 200 and summary["photos"] == 70 and len(all_pages(s)) == 70,
               "after the run the summary and the pages show all 70 photos")
    finally:
        s.stop()

    newer = os.path.join(work, "newer.sqlite")
    shutil.copy(cat, newer)
    con = sqlite3.connect(newer)
    con.execute("PRAGMA user_version = 99")
    con.close()
    other = os.path.join(work, "other.sqlite")
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t (x)")
    con.close()
    for path, word in [(newer, b"newer"), (other, b"not a tandem catalog")]:
        r = subprocess.run([tandem, "serve", path, "--port", "0"], capture_output=True, env=env, timeout=30)
        expect(r.returncode != 0 and word in r.stderr, f"{os.path.basename(path)} is refused: {r.stderr[-200:]!r}")

    shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"{len(failures)} checks failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
