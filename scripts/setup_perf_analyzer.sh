#!/bin/bash
# Installs Triton's perf_analyzer (the load generator Triton users run) into .venv/perf_analyzer/,
# from PyPI and apt only:
#   - the perf_analyzer binary from tritonclient 2.49.0's manylinux wheel: the newest release
#     whose binary runs on Debian 12's glibc 2.36 (2.60 needs glibc 2.38; from 2.73 the wheel
#     carries no binary, and PyPI's "perf-analyzer" package is an empty placeholder);
#   - libcudart.so.12, which that binary links even against a CPU-only server, from PyPI's
#     nvidia-cuda-runtime-cu12 wheel;
#   - libb64 (Debian libb64-0d).
# Result: .venv/perf_analyzer/perf_analyzer, a wrapper that sets the library path.
# Usage: scripts/setup_perf_analyzer.sh  (after scripts/setup_venv.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.venv/perf_analyzer
if [ -x "$dest/perf_analyzer" ] && "$dest/perf_analyzer" --version >/dev/null 2>&1; then
  echo "perf_analyzer: already installed ($dest/perf_analyzer)"; exit 0
fi
if ! dpkg-query -W -f='${Status}' libb64-0d 2>/dev/null | grep -q "install ok installed"; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libb64-0d
fi
rm -rf "$dest" && mkdir -p "$dest/wheels" "$dest/lib"
.venv/bin/pip download -q --no-deps --only-binary=:all: --platform manylinux1_x86_64 -d "$dest/wheels" tritonclient==2.49.0
.venv/bin/pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 -d "$dest/wheels" \
  nvidia-cuda-runtime-cu12==12.9.79
.venv/bin/python - "$dest" <<'PY'
import glob, os, stat, sys, zipfile
dest = sys.argv[1]
for whl, member, out in [
    (glob.glob(f"{dest}/wheels/tritonclient-2.49.0-*.whl")[0], "tritonclient-2.49.0.data/data/bin/perf_analyzer", f"{dest}/lib/perf_analyzer.bin"),
    (glob.glob(f"{dest}/wheels/nvidia_cuda_runtime_cu12-*.whl")[0], "nvidia/cuda_runtime/lib/libcudart.so.12", f"{dest}/lib/libcudart.so.12")]:
    with zipfile.ZipFile(whl) as z, open(out, "wb") as f:
        f.write(z.read(member))
    os.chmod(out, os.stat(out).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
PY
rm -rf "$dest/wheels"
cat > "$dest/perf_analyzer" <<'SH'
#!/bin/bash
here="$(cd "$(dirname "$0")" && pwd)"
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/lib/perf_analyzer.bin" "$@"
SH
chmod +x "$dest/perf_analyzer"
"$dest/perf_analyzer" --version >/dev/null 2>&1 || { echo "perf_analyzer does not run: $("$dest/perf_analyzer" --version 2>&1 | head -3)"; exit 1; }
echo "perf_analyzer: $dest/perf_analyzer"
