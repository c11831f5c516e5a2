"""What the fault tests share: running tandem under the fault shim
(fault_inject.c), a photo folder per case, and reading back what a run
left: catalog rows, sidecars, thumbnails, profile files."""
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "cli"))
import tag_cli  # noqa: E402  (its tiny model, photo list and check())

check = tag_cli.check
DARKNET = tag_cli.DARKNET
PHOTOS = tag_cli.PHOTOS
# --batch 2: seven photos make four batches, so a fault can fall between
# commits. The CPU decodes, so every machine reads and writes the same way.
TAG_ARGS = ["--device", "cpu", "--batch", "2", *tag_cli.TAG_ARGS]
# What each injected errno reads as, in strerror's words or SQLite's.
REASONS = {"enospc": ("No space left on device", "database or disk is full"),
           "eio": ("Input/output error", "disk I/O error"),
           "syncfail": ("Input/output error", "disk I/O error")}


class Tandem:
    """The binary, the shim, the tiny model, and the run's environment."""

    def __init__(self, binary, shim, work):
        self.binary, self.shim, self.work = binary, shim, work
        self.model = work / "tiny.onnx"
        tag_cli.make_model(self.model)

    def run(self, case, args, fault=None, with_file=None, user=None, timeout=300):
        """tandem ARGS in `case` (its own HOME and XDG_CACHE_HOME), under the
        shim when `fault` ("ACTION:BYTES:REGEX") is given; returns the
        process and the faults the shim logged ([(action, path)])."""
        env = dict(os.environ, HOME=str(case), XDG_CACHE_HOME=str(case / "cache"))
        log = case / "fault.log"
        if log.exists():
            log.unlink()
        if fault:
            env.update(LD_PRELOAD=str(self.shim), TANDEM_FAULT=fault, TANDEM_FAULT_LOG=str(log))
            if with_file:
                env["TANDEM_FAULT_WITH"] = str(with_file)
        cmd = [*(user or []), self.binary, *args]
        proc = subprocess.run(cmd, cwd=case, env=env, capture_output=True, text=True, timeout=timeout)
        fired = []
        if log.exists():
            fired = [(line.split(" ", 2)[0], line.split(" ", 2)[2]) for line in log.read_text().splitlines()]
        return proc, fired

    def count(self, case, args, pattern):
        """Bytes a clean run of `args` writes to files matching `pattern`."""
        proc, fired = self.run(case, args, fault=f"count:0:{pattern}")
        counts = [int(path) for action, path in fired if action == "count"]
        if proc.returncode not in (0, 1) or not counts:
            raise RuntimeError(f"counting run failed ({proc.returncode}): {proc.stderr[-400:]}")
        return counts[0]


def new_case(work, name, photos=PHOTOS):
    """work/name with photos/ holding copies of darknet's sample photos."""
    case = work / name
    (case / "photos").mkdir(parents=True)
    for p in photos:
        shutil.copy(DARKNET / f"{p}.jpg", case / "photos" / f"{p}.jpg")
    return case


def catalog_rows(db):
    """{photo file name: (size, content hash, status, error kind, tags)}, or
    None when the file cannot be read as a catalog."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            rows = {}
            for fid, path, *fields in con.execute(
                    "SELECT id, path, size, content_hash, status, error_kind FROM files"):
                tags = con.execute("SELECT label, score FROM tags WHERE file_id = ? ORDER BY rank", (fid,)).fetchall()
                rows[Path(path).name] = (*fields, tuple(tags))
            return rows
        finally:
            con.close()
    except sqlite3.Error:
        return None


def same_row(a, b):
    """Two catalog rows agree: the file, its status, its labels in order and
    scores within 1e-5 (a score may depend on the batch it ran in)."""
    return a[:4] == b[:4] and len(a[4]) == len(b[4]) and all(
        x[0] == y[0] and abs(x[1] - y[1]) <= 1e-5 for x, y in zip(a[4], b[4]))


def integrity(db):
    try:
        con = sqlite3.connect(str(db))
        try:
            return con.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error as e:
        return str(e)


def file_uri(photo):
    """GLib's URI of a path (its unreserved bytes kept, the rest %XX)."""
    return "file://" + urllib.parse.quote(os.path.abspath(photo), safe="!$&'()*+,-./:=@_~")


def thumbnail_name(photo):
    """The freedesktop name of a photo's thumbnails (MD5 of its URI)."""
    return hashlib.md5(file_uri(photo).encode()).hexdigest() + ".png"


def thumbnail_pixels(path):
    """(size, SHA-256 of the RGB pixels, Thumb::URI) of a thumbnail PNG."""
    from PIL import Image
    with Image.open(path) as im:
        return im.size, hashlib.sha256(im.convert("RGB").tobytes()).hexdigest(), im.text.get("Thumb::URI")


class Reference:
    """What runs that never failed leave: catalog rows, sidecars and
    thumbnails (by photo name), and the names of the profile's files."""

    def __init__(self, t):
        case = new_case(t.work, "reference")
        proc, _ = t.run(case, ["tag", "photos", "--model", str(t.model), *TAG_ARGS, "--catalog", "c.sqlite",
                               "--xmp", "--profile", "prof"])
        self.ok = proc.returncode == 0
        self.rows = catalog_rows(case / "c.sqlite") or {}
        self.sidecars = {p.name: p.read_bytes() for p in (case / "photos").glob("*.xmp")}
        self.thumbnails = {}
        for p in PHOTOS:
            for flavor in ("large", "normal"):
                path = case / "cache" / "thumbnails" / flavor / thumbnail_name(case / "photos" / f"{p}.jpg")
                if path.exists():
                    self.thumbnails[(f"{p}.jpg", flavor)] = thumbnail_pixels(path)[:2]
        self.profile = sorted(files_under(case / "prof"))
        self.complete = (self.ok and len(self.rows) == len(PHOTOS) and len(self.sidecars) == len(PHOTOS)
                         and len(self.thumbnails) == 2 * len(PHOTOS) and len(self.profile) >= 4)


def files_under(folder):
    """{path relative to folder: bytes} of every file under it."""
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def final_name(written, names):
    """The output a file the shim saw belongs to: the one of `names` (paths
    relative to a case) in the same folder whose file name it contains (a
    temporary file is named after its target), the longest such."""
    folder, base = os.path.split(written)
    hits = [n for n in names if folder.endswith(os.path.dirname(n)) and os.path.basename(n) in base]
    return max(hits, key=len) if hits else None


def parses_as_complete(name, data):
    """A profile file that is whole: JSON that parses, a page that closes."""
    if name.endswith(".json"):
        try:
            json.loads(data)
            return True
        except ValueError:
            return False
    if name.endswith(".html"):
        return data.rstrip().endswith(b"</html>")
    return len(data) > 0


def summary_line(proc):
    return tag_cli.summary(proc)
