# shellcheck shell=bash disable=SC2034  # sourced; the lists are used by the sourcing scripts
# The Debian 12 packages tandem needs, by purpose, and how they are
# installed. Sourced by scripts/tag-samples (MAIN_PACKAGES only) and
# scripts/setup (both lists, which scripts/test and CI run).

# The main job: what building the library and the tandem CLI needs.
MAIN_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libdnnl-dev libonnx-dev libprotobuf-dev protobuf-compiler
  zlib1g-dev libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev libexif-dev libxxhash-dev libwebp-dev libheif-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libsqlite3-dev libexiv2-dev
  nettle-dev  # MD5 of a thumbnail's URI, as the freedesktop thumbnail standard names its file
  libcpp-httplib-dev  # tandem serve: the gallery's HTTP server
)

# The test suite on top: its binaries, the references it compares against
# and the data it runs on.
TEST_PACKAGES=(
  git libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-numpy python3-onnx python3-torch python3-torchvision python3-opencv python3-pil
  libonnx-testdata darknet libheif-examples exiv2 sqlite3 dataset-fashion-mnist
  libglib2.0-bin  # gio: GLib's file URIs, which file managers key thumbnails by
  libopenmpi-dev openmpi-bin  # data-parallel training's ranks (tandem train --distributed, mpirun)
  libpq-dev postgresql  # PostgreSQL catalogs, and the server their tests start
  chromium  # headless, loads the --profile report.html (tests/cli/report_html_e2e.py)
  # photographs scripts/make-corpus builds its benchmark corpus from
  mate-backgrounds plasma-workspace-wallpapers
)

# scripts/fuzz on top of the main job's: clang with libFuzzer and the
# sanitizer runtimes.
FUZZ_PACKAGES=(clang-14 libfuzzer-14-dev libclang-rt-14-dev python3-pil python3-numpy libheif-examples libjpeg-turbo-progs sqlite3)

# scripts/cross-arm64: the main job's and the unit tests' libraries built
# for arm64 (installed as PACKAGE:arm64 beside the host's).
# (libdnnl-dev and libonnx-dev are not co-installable: scripts/cross-arm64
# unpacks them.)
ARM64_PACKAGES=(
  libprotobuf-dev zlib1g-dev libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev libexif-dev
  libxxhash-dev libwebp-dev libheif-dev libfmt-dev libsqlite3-dev libexiv2-dev nettle-dev libcpp-httplib-dev
  libgtest-dev libgmock-dev
)

# Runs its arguments as root: directly when root, else through sudo.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Installs those of the named packages that are not installed yet (nothing
# at all when every one is); WHO names the script in its messages.
install_packages() {  # WHO PACKAGE...
  local who=$1 p
  shift
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "$who: installing ${missing[*]}"
  as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
}
