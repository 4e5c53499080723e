"""ctest python_package: builds the Python package as a user would, then tests it.

    .venv/bin/python tests/python/build_and_test.py [--build-dir DIR] [--build-type T] [--generator G]

1. `pip wheel . --no-build-isolation --no-deps` (scikit-build-core and nanobind come pinned from
   scripts/requirements-dev.txt, so no network is needed) with CMake's build folder in --build-dir
   (default <repo>/build-python: a fixed folder next to build/ lets ccache reuse the main build's
   objects when --build-type and the compilers (--cc, --cxx) match it and ccache runs with
   CCACHE_BASEDIR=<repo> and CCACHE_NOHASHDIR=1, as scripts/test.sh sets), the wheel into a temp dir;
2. `pip install --no-deps --target` that temp dir;
3. every tests/python/test_*.py (test_inferloop_ort_api.py: the ONNX Runtime API;
   test_inferloop_llm_tools.py: LLM, quantize, compare) with the installed package first on PYTHONPATH.
Prints how long the build took. Exit status: 0 when every test script passed, 77 when none failed
and one reported itself skipped (exit 77), 1 otherwise. --tests runs only the scripts named.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build-python"))
    ap.add_argument("--build-type", default="Release")
    ap.add_argument("--generator", default="", help="CMake generator (default: scikit-build-core's choice)")
    ap.add_argument("--cc", default="", help="C compiler for a new build folder (CC; ctest passes its build's)")
    ap.add_argument("--cxx", default="", help="C++ compiler for a new build folder (CXX; ctest passes its build's)")
    ap.add_argument("--tests", nargs="+", default=None,
                    help="test scripts in tests/python to run (default: every test_*.py)")
    args = ap.parse_args()
    env = dict(os.environ)
    if args.generator:
        env["CMAKE_GENERATOR"] = args.generator
    # The main build's compilers by the same name: ccache hashes the name, so /usr/bin/c++ and
    # g++ (scikit-build-core's pick) would miss each other's objects.
    if args.cc:
        env["CC"] = args.cc
    if args.cxx:
        env["CXX"] = args.cxx
    with tempfile.TemporaryDirectory(prefix="inferloop-py-") as tmp:
        wheels, site = os.path.join(tmp, "wheels"), os.path.join(tmp, "site")
        t0 = time.monotonic()
        cmd = [sys.executable, "-m", "pip", "wheel", REPO, "--no-build-isolation", "--no-deps", "-w", wheels,
               "-C", f"build-dir={args.build_dir}", "-C", f"cmake.build-type={args.build_type}"]
        print("+", " ".join(cmd), flush=True)
        build = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if build.returncode != 0:
            print(build.stdout[-20000:], build.stderr[-20000:], sep="\n")
            print("FAILED: pip wheel", flush=True)
            return 1
        built = [f for f in os.listdir(wheels) if f.endswith(".whl")]
        print(f"built {built} in {time.monotonic() - t0:.1f} s", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", site,
                        os.path.join(wheels, built[0])], check=True)
        env["PYTHONPATH"] = site + os.pathsep + env.get("PYTHONPATH", "")
        failed, skipped = [], []
        tests = args.tests or sorted(f for f in os.listdir(HERE) if f.startswith("test_") and f.endswith(".py"))
        for test in tests:
            print(f"+ {test}", flush=True)
            rc = subprocess.run([sys.executable, os.path.join(HERE, test)], env=env, cwd=tmp).returncode
            if rc == 77:
                skipped.append(test)
            elif rc != 0:
                failed.append(test)
        if failed:
            print("FAILED:", " ".join(failed), flush=True)
            return 1
        return 77 if skipped else 0


if __name__ == "__main__":
    sys.exit(main())
