#!/bin/bash
# Installs every Debian package inferloop's build and tests need. Nothing else is downloaded.
# Usage (as root on Debian 12): scripts/install_deps.sh
set -euo pipefail
PACKAGES=(
  build-essential cmake ccache pkg-config
  libprotobuf-dev protobuf-compiler
  libcli11-dev
  libgtest-dev
  rapidjson-dev                 # KServe v2 REST JSON codec (src/frontends)
  libsimdjson-dev               # simdjson: the REST request decoder's fast path (src/frontends/v2_json_fast_decode.cc)
  libboost1.81-dev              # Boost.Beast/Asio: the KServe v2 REST server (src/frontends)
  libgrpc++-dev protobuf-compiler-grpc  # KServe v2 gRPC service stubs
  libssl-dev                    # OpenSSL: SHA-256 + constant-time compare of API keys (api_keys.cc), TLS (tls.cc)
  openssl                       # the openssl CLI: test certificates (tests/e2e/test_serve_tls.py)
  libjpeg-dev libpng-dev        # ImageDecoder (JPEG, PNG)
  libdcmtk-dev                  # DCMTK: DICOM parsing + JPEG/JPEG-LS/RLE pixel decoders (src/imaging/dicom_*)
  clang-14 libclang-rt-14-dev   # libFuzzer + sanitizer runtimes for the fuzz target
  libomp-14-dev                 # clang-14's OpenMP: scripts/setup_llama_cpp.sh builds llama.cpp with clang-14 on AMX CPUs
  libdnnl-dev                   # oneDNN: Conv/MatMul/Gemm/pooling primitives
  libicu-dev                    # ICU: Unicode classes for the LLM tokenizers' BPE pre-tokenizers
  libxxhash-dev                 # xxHash: response/prefix cache keys and cache file checksums
  locales                       # tests: de_DE locale data for the number readers' locale tests (tests/unit/comma_decimal_locale.h)
  libgoogle-perftools-dev       # tcmalloc_minimal: the inferloop binary's malloc (CMakeLists.txt INFERLOOP_TCMALLOC)
  librocksdb-dev                # bench only: bench/response_cache_rocksdb_bench.cc measures the response cache's disk tier against RocksDB
  universal-ctags               # scripts/check_structure.py: function extents for the length budget
  prometheus                    # deploy tests: a real Prometheus runs the dashboard's and the autoscaler rules' queries
  nginx                         # tests/e2e/test_fleet.py: the load balancer in front of 3 replicas
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${missing[@]}"
fi
echo "install_deps: all packages present"
