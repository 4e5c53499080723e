#!/bin/sh
# ctest install_consumer: installs the build to a temporary prefix, and checks that a user can
# build against it and nothing else (examples/cpp_consumer):
#  - the files are in place (libinferloop.so.X.Y.Z with its SONAME, headers, CMake package
#    config + version file, pkg-config file, the CLI) and the library exports only the API;
#  - find_package(inferloop CONFIG) builds the C++ and the C program, and both run the tiny CNN
#    and get the expected output (the C one also streams from the LLM API); an unmet version
#    request (0.2) fails;
#  - pkg-config builds them too, with only the installed include dir (no src/);
#  - every installed header compiles on its own against that dir (C headers as C too).
# Usage: install_consumer.sh BUILD_DIR SOURCE_DIR WORK_DIR C_COMPILER CXX_COMPILER VERSION
set -eu
build=$1 src=$2 work=$3 cc=$4 cxx=$5 version=$6
prefix=$work/prefix
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
lib=$prefix/lib
for f in "$lib/libinferloop.so.$version" "$lib/libinferloop.so.0" "$lib/libinferloop.so" \
         "$prefix/include/inferloop/version.h" "$prefix/include/inferloop/session.h" \
         "$prefix/include/inferloop/inferloop_c.h" "$prefix/include/inferloop/inferloop_llm_c.h" \
         "$lib/cmake/inferloop/inferloopConfig.cmake" "$lib/cmake/inferloop/inferloopConfigVersion.cmake" \
         "$lib/pkgconfig/inferloop.pc" "$prefix/bin/inferloop"; do
  [ -e "$f" ] || fail "not installed: $f"
done
[ ! -e "$prefix/include/inferloop/version.h.in" ] || fail "version.h.in installed"
readelf -d "$lib/libinferloop.so" | grep -q 'SONAME.*\[libinferloop\.so\.0\]' || fail "SONAME is not libinferloop.so.0"
"$prefix/bin/inferloop" --version | grep -qx "inferloop $version" || fail "inferloop --version"
# Exports: the API, not the engine's insides (version script cmake/inferloop_lib.map).
nm -D --defined-only "$lib/libinferloop.so" | c++filt >"$work/exports.txt"
for sym in 'inferloop::Session::Run(' 'inferloop::Tensor::FromBytes(' 'inferloop::Status::ToString' \
           ' il_session_run@@INFERLOOP_0' ' il_llm_generate@@INFERLOOP_0' ' il_llm_tokenize@@INFERLOOP_0'; do
  grep -q "$sym" "$work/exports.txt" || fail "not exported: $sym"
done
if grep -q 'inferloop::llm::\|inferloop::ThreadPool\|google::protobuf\|onnx::' "$work/exports.txt"; then
  grep 'inferloop::llm::\|inferloop::ThreadPool\|google::protobuf\|onnx::' "$work/exports.txt" | head -5
  fail "internal symbols exported"
fi
echo "installed to $prefix: $(wc -l <"$work/exports.txt") exported symbols"

model=$src/examples/model_repository/tiny_cnn/1/model.onnx
image=$src/examples/data/tiny_cnn/image.npy
probs=$src/examples/data/tiny_cnn/expected_probs.npy
gguf=$src/tests/data/llm/stories260k.gguf

# find_package
cmake -S "$src/examples/cpp_consumer" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" >"$work/configure.log" || { cat "$work/configure.log"; fail "configure"; }
cmake --build "$work/build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "build"; }
"$work/build/cpp_consumer" "$model" "$image" "$probs" || fail "cpp_consumer (find_package)"
"$work/build/c_consumer" "$model" "$image" "$probs" "$gguf" || fail "c_consumer (find_package)"
if cmake -S "$src/examples/cpp_consumer" -B "$work/build-v" -DCMAKE_PREFIX_PATH="$prefix" \
     -DINFERLOOP_MIN_VERSION=0.2 >"$work/configure-v.log" 2>&1; then
  fail "find_package(inferloop 0.2) found $version"
fi
grep -q "version: $version" "$work/configure-v.log" || { cat "$work/configure-v.log"; fail "version refusal"; }

# pkg-config, with only the installed include dir
export PKG_CONFIG_PATH="$lib/pkgconfig"
[ "$(pkg-config --modversion inferloop)" = "$version" ] || fail "pkg-config --modversion"
flags=$(pkg-config --cflags --libs inferloop)
case "$flags" in *"$src/include"*|*"$src/src"*) fail "pkg-config flags name the source tree: $flags";; esac
ex=$src/examples/cpp_consumer
# shellcheck disable=SC2086
"$cxx" -std=c++20 -o "$work/cpp_pc" "$ex/main.cc" $flags -Wl,-rpath,"$lib" || fail "c++ with pkg-config"
# shellcheck disable=SC2086
"$cc" -std=c11 -o "$work/c_pc" "$ex/main.c" $flags -Wl,-rpath,"$lib" || fail "cc with pkg-config"
"$work/cpp_pc" "$model" "$image" "$probs" >/dev/null || fail "cpp_consumer (pkg-config)"
"$work/c_pc" "$model" "$image" "$probs" >/dev/null || fail "c_consumer (pkg-config)"

# every header on its own
for h in "$prefix"/include/inferloop/*.h; do
  name=inferloop/$(basename "$h")
  printf '#include <%s>\n' "$name" | "$cxx" -std=c++20 -Wall -Werror -fsyntax-only -I"$prefix/include" -x c++ - ||
    fail "$name does not compile alone (C++)"
  case $name in
    *_c.h|*/version.h) printf '#include <%s>\n' "$name" | "$cc" -std=c99 -Wall -Werror -fsyntax-only \
                         -I"$prefix/include" -x c - || fail "$name does not compile alone (C)";;
  esac
done
echo "install_consumer: OK"
