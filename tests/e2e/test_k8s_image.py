"""Checks deploy/kubernetes/Dockerfile without docker (none runs in CI): what its runtime stage
installs against what the built binary links, its structure against the issue 17 contract, and
its HEALTHCHECK command run with bash against a real `inferloop serve` started with the image's
own command line.

- DockerfileStructure: the build stage runs scripts/install_deps.sh and scripts/build.sh --target
  inferloop; both stages on debian:12-slim; user inferloop uid/gid 10001 and USER 10001; VOLUME
  /models; EXPOSE 8000 8001 8002; ENTRYPOINT / CMD as the contract; OCI labels; COPY sources exist
  and .dockerignore keeps the context small without leaving out what the build needs.
- RuntimePackages: readelf NEEDED + ldd of --inferloop, each library's Debian package (dpkg), the
  runtime stage's apt list and the packages debian:12-slim has (image_check.py says how). Needs a
  Debian 12 host (the image's release: sonames and package names must match); skipped otherwise.
- CheckerCatches: the checker fed broken Dockerfiles (a package removed, a direct library left to a
  dependency, dead weight, no USER, root, a library from a build tree, curl in the HEALTHCHECK...)
  reports each.
- Healthcheck: the HEALTHCHECK's command (extracted from the Dockerfile, run by bash here with
  INFERLOOP_HTTP_PORT set to the test server's port, which the image sets to 8000) exits 0 against
  a ready server, non-zero against a listening but not ready one (503), and non-zero when nothing
  listens.

Usage: test_k8s_image.py --inferloop PATH/TO/inferloop [unittest args]
Exit status: 0 all passed, 1 a failure, 77 none failed but some were skipped.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import image_check as ic  # noqa: E402
from serve_harness import Server, local_serve_args, request, run_tests  # noqa: E402

INFERLOOP = None
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DOCKERFILE = os.path.join(ROOT, "deploy", "kubernetes", "Dockerfile")
DOCKERIGNORE = os.path.join(ROOT, ".dockerignore")
EXAMPLE_REPOSITORY = os.path.join(ROOT, "examples", "model_repository")


def read(path):
    with open(path) as f:
        return f.read()


def debian_release():
    try:
        with open("/etc/os-release") as f:
            fields = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
    except OSError:
        return None
    return fields.get("ID", "").strip('"'), fields.get("VERSION_ID", "").strip('"')


def replace_line(text, old, new):
    """text with the line whose stripped content is `old` replaced by `new` (lines), asserting it was there."""
    lines = text.splitlines()
    idx = [i for i, line in enumerate(lines) if line.strip() == old]
    assert len(idx) == 1, f"{old!r} found {len(idx)} times"
    i = idx[0]
    return "\n".join(lines[:i] + new + lines[i + 1:]) + "\n"


def without_package(text, pkg):
    """The Dockerfile text without `pkg \\` and the comment line above it."""
    lines = text.splitlines()
    i = [k for k, line in enumerate(lines) if line.strip() == pkg + " \\"][0]
    start = i - 1 if lines[i - 1].strip().startswith("#") else i
    return "\n".join(lines[:start] + lines[i + 1:]) + "\n"


class DockerfileStructure(unittest.TestCase):
    def test_dockerfile_follows_the_contract(self):
        problems = ic.check_structure(read(DOCKERFILE), ROOT, read(DOCKERIGNORE))
        self.assertEqual([], problems, "\n".join(problems))

    def test_every_tracked_source_the_build_reads_is_in_the_context(self):
        tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
        if tracked.returncode != 0:
            self.skipTest(f"not a git checkout ({tracked.stderr.strip()}): no file list to check")
        patterns = ic.dockerignore_patterns(read(DOCKERIGNORE))
        needed = [f for f in tracked.stdout.split("\n") if f and f.split("/")[0] in
                  ("CMakeLists.txt", "src", "include", "proto", "scripts", "tests", "bench", "third_party")]
        self.assertGreater(len(needed), 100)
        left_out = [f for f in needed if ic.dockerignored(f, patterns)]
        self.assertEqual([], left_out, "tracked build inputs .dockerignore leaves out")


class RuntimePackages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        release = debian_release()
        if release != ("debian", "12"):
            raise unittest.SkipTest(f"host is {release}, not Debian 12 (the image's release): its library "
                                    "sonames and package names would not be the image's")
        cls.facts = ic.binary_facts(INFERLOOP)
        cls.direct_rule = not ic.is_sanitizer_build(INFERLOOP)

    def test_runtime_stage_installs_what_the_binary_links(self):
        needed, libs, owners, db = self.facts
        text = read(DOCKERFILE)
        listed, _ = ic.apt_packages(ic.stages(ic.parse_dockerfile(text))[-1][2])
        installed = ic.install_closure(set(listed) | set(ic.BASE_REQUIRED), db)
        base = ic.install_closure(ic.BASE_REQUIRED, db)
        print(f"\n{len(needed)} NEEDED, {len(libs)} libraries resolved by ldd; runtime stage lists {len(listed)} "
              f"packages, installs {len(installed - base)} beyond the {len(base)} of debian:12-slim")
        for soname, path in libs:
            pkg = owners.get(path)
            where = "listed" if pkg in listed else "base image" if pkg in base else "dependency"
            print(f"  {'NEEDED ' if soname in needed else '       '}{soname:42} {pkg} ({where})")
        if not self.direct_rule:
            print("a sanitizer build (clang, linked without --as-needed: NEEDED holds its libraries' own dependencies"
                  " too): every library must still come from an installed package, but NEEDED ones need not be"
                  " listed themselves (the image ships scripts/build.sh's gcc build, checked in the release tree)")
        problems = ic.check_packages(text, needed, libs, owners, db, direct_rule=self.direct_rule)
        self.assertEqual([], problems, "\n".join(problems))

    def test_base_image_set_is_required_packages_and_holds_the_c_and_cxx_runtimes(self):
        _, _, _, db = self.facts
        not_required = [p for p in ic.BASE_REQUIRED
                        if p in db and not (db[p]["priority"] == "required" or db[p]["essential"])]
        self.assertEqual([], not_required, "BASE_REQUIRED lists packages that are not Priority required / Essential")
        base = ic.install_closure(ic.BASE_REQUIRED, db)
        for pkg in ("libc6", "libgcc-s1", "libstdc++6", "bash", "passwd", "coreutils"):
            self.assertIn(pkg, base)


class CheckerCatches(unittest.TestCase):
    """The checkers find what they are for (negative tests of image_check itself)."""

    @classmethod
    def setUpClass(cls):
        cls.text = read(DOCKERFILE)
        cls.ignore = read(DOCKERIGNORE)
        release = debian_release()
        cls.facts = ic.binary_facts(INFERLOOP) if release == ("debian", "12") else None
        cls.direct_rule = not ic.is_sanitizer_build(INFERLOOP)

    def packages(self, text, facts=None, direct_rule=None):
        if self.facts is None:
            self.skipTest("host is not Debian 12 (see RuntimePackages)")
        rule = self.direct_rule if direct_rule is None else direct_rule
        return "\n".join(ic.check_packages(text, *(facts or self.facts), direct_rule=rule))

    def structure(self, text=None, ignore=None):
        return "\n".join(ic.check_structure(text or self.text, ROOT, ignore if ignore is not None else self.ignore))

    def test_a_removed_package_names_its_libraries(self):
        report = self.packages(without_package(self.text, "libdnnl2"))
        self.assertIn("library libdnnl.so.2", report)
        self.assertIn("libdnnl2 is not installed by the runtime stage", report)
        report = self.packages(without_package(self.text, "libdcmtk17"))
        for lib in ("libdcmjpeg.so.17", "libdcmjpls.so.17", "libdcmdata.so.17", "liboflog.so.17"):
            self.assertIn(f"library {lib}", report)

    def test_a_direct_library_left_to_a_dependency_is_reported(self):
        # libgrpc29 comes with libgrpc++1.51 anyway, but the binary links libgrpc.so.29 itself. (NEEDED
        # given here: a sanitizer build's own NEEDED lists many libraries' dependencies too.)
        if self.facts is None:
            self.skipTest("host is not Debian 12 (see RuntimePackages)")
        _, libs, owners, db = self.facts
        needed = ["libgrpc.so.29", "libc.so.6"]
        report = self.packages(without_package(self.text, "libgrpc29"), (needed, libs, owners, db), direct_rule=True)
        self.assertIn("libgrpc.so.29", report)
        self.assertIn("must be listed", report)

    def test_dead_weight_is_reported_unless_explained(self):
        report = self.packages(replace_line(self.text, "libicu72 \\", ["      libicu72 \\", "      bash \\"]))
        self.assertIn("package bash provides no library the binary links", report)
        explained = replace_line(self.text, "libicu72 \\", ["      libicu72 \\",
                                                              "      # not linked: the HEALTHCHECK runs it",
                                                              "      bash \\"])
        self.assertEqual("", self.packages(explained))

    def test_a_library_no_package_owns_is_reported(self):
        needed, libs, owners, db = self.facts or (None,) * 4
        if needed is None:
            self.skipTest("host is not Debian 12 (see RuntimePackages)")
        fake = "/work/build/libinferloop_extra.so.1"
        report = self.packages(self.text, (needed + ["libinferloop_extra.so.1", "libmissing.so.3"],
                                           libs + [("libinferloop_extra.so.1", fake), ("libmissing.so.3", None)],
                                           {**owners, fake: None}, db))
        self.assertIn(f"library libinferloop_extra.so.1 ({fake}) belongs to no Debian package", report)
        self.assertIn("library libmissing.so.3: ldd says 'not found'", report)

    def test_apt_hygiene_is_checked(self):
        report = self.packages(self.text.replace("--no-install-recommends", "").replace(
            " && rm -rf /var/lib/apt/lists/*\nRUN groupadd", "\nRUN groupadd"))
        self.assertIn("without --no-install-recommends", report)
        self.assertIn("apt lists are not removed", report)

    def test_user_problems_are_reported(self):
        self.assertIn("no USER in the runtime stage", self.structure(replace_line(self.text, "USER 10001:10001", [])))
        self.assertIn("is root", self.structure(replace_line(self.text, "USER 10001:10001", ["USER root"])))
        self.assertIn("is root", self.structure(replace_line(self.text, "USER 10001:10001", ["USER 10001:0"])))
        self.assertIn("the contract's user is uid 10001",
                      self.structure(replace_line(self.text, "USER 10001:10001", ["USER 1000"])))

    def test_contract_deviations_are_reported(self):
        t = self.text
        self.assertIn("no VOLUME /models", self.structure(replace_line(t, "VOLUME /models", ["VOLUME /data"])))
        self.assertIn("the contract's ports", self.structure(replace_line(t, "EXPOSE 8000 8001 8002", ["EXPOSE 8000"])))
        self.assertIn("does not run scripts/build.sh", self.structure(
            t.replace("scripts/build.sh --target inferloop", "cmake --build build")))
        self.assertIn("does not run scripts/install_deps.sh", self.structure(
            t.replace("RUN bash scripts/install_deps.sh", "RUN apt-get update")))
        self.assertIn("base image 'ubuntu:22.04'", self.structure(t.replace("FROM debian:12-slim AS runtime",
                                                                           "FROM ubuntu:22.04 AS runtime")))
        self.assertIn("'--shutdown-timeout-secs', '5']: the contract's is", self.structure(
            t.replace('"--shutdown-timeout-secs", "30"', '"--shutdown-timeout-secs", "5"')))
        self.assertIn("no user inferloop with uid/gid 10001", self.structure(t.replace("--uid 10001", "--uid 1000")))
        self.assertIn("unknown instruction RUNN", self.structure(t.replace("RUN groupadd", "RUNN groupadd")))
        self.assertIn("COPY source scripts/install_dependencies.sh does not exist", self.structure(
            t.replace("COPY scripts/install_deps.sh", "COPY scripts/install_dependencies.sh")))

    def test_healthcheck_problems_are_reported(self):
        t = self.text
        hc = [line for line in t.splitlines() if line.strip().startswith("CMD [\"bash\"")][0]
        curl = t.replace(hc, '  CMD ["sh", "-c", "curl -fs http://127.0.0.1:8000/v2/health/ready"]')
        report = self.structure(curl)
        self.assertIn("uses curl/wget", report)
        self.assertIn("not bash", report)
        self.assertIn("no HEALTHCHECK", self.structure(t.replace("HEALTHCHECK --interval", "# HEALTHCHECK --interval")
                                                       .replace(hc, "#" + hc)))
        self.assertIn("INFERLOOP_HTTP_PORT=8000 but CMD serves HTTP on 9000",
                      self.structure(t.replace('"--http-port", "8000"', '"--http-port", "9000"')))

    def test_dockerignore_problems_are_reported(self):
        self.assertIn("does not leave .venv out", self.structure(ignore=self.ignore.replace(".venv\n", "")))
        self.assertIn("leaves src out", self.structure(ignore=self.ignore + "src\n"))
        self.assertIn("excluded by .dockerignore", self.structure(ignore=self.ignore + "scripts/*.sh\n"))


def run_healthcheck(cmd, port):
    """Runs the HEALTHCHECK command as Docker would (exec form, the image's ENV), with
    INFERLOOP_HTTP_PORT set to `port` instead of the image's 8000: (exit status, seconds)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "INFERLOOP_HTTP_PORT": str(port)}
    t0 = time.monotonic()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30)
    return r.returncode, time.monotonic() - t0


class Healthcheck(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        stage = ic.stages(ic.parse_dockerfile(read(DOCKERFILE)))[-1][2]
        cls.hc = ic.healthcheck_command(stage)
        cls.cmd = ic.exec_form([i for i in stage if i.keyword == "CMD"][-1])

    def serve_args(self):
        """The image's CMD for this host: /models -> the repository given to Server, 0.0.0.0 ->
        loopback, the fixed ports -> 0 (free ports, read back from the server's log)."""
        self.assertEqual("/models", self.cmd[self.cmd.index("--model-repository") + 1])
        return local_serve_args(self.cmd)

    def test_ready_server_passes(self):
        with Server(INFERLOOP, EXAMPLE_REPOSITORY, *self.serve_args()) as s:
            listening = s.find_events("server_listening")[0]
            self.assertEqual("poll", listening["model_control_mode"])
            self.assertEqual(200, request(s.http_port, "GET", "/v2/health/ready")[0])
            rc, secs = run_healthcheck(self.hc, s.http_port)
            print(f"\nHEALTHCHECK against a ready server: exit {rc} in {secs * 1000:.1f} ms")
            self.assertEqual(0, rc)
            self.assertEqual(0, s.terminate())
            rc, secs = run_healthcheck(self.hc, s.http_port)
            print(f"HEALTHCHECK after the server stopped: exit {rc} in {secs * 1000:.1f} ms")
            self.assertNotEqual(0, rc)

    def test_listening_but_not_ready_fails(self):
        repo = tempfile.mkdtemp(prefix="il_image_hc_")
        try:
            shutil.copytree(os.path.join(EXAMPLE_REPOSITORY, "simple"), os.path.join(repo, "simple"))
            os.makedirs(os.path.join(repo, "broken", "1"))
            with open(os.path.join(repo, "broken", "1", "model.onnx"), "wb") as f:
                f.write(b"not an onnx model")
            with open(os.path.join(repo, "broken", "config.pbtxt"), "w") as f:
                f.write('name: "broken"\nplatform: "onnxruntime_onnx"\n')
            with Server(INFERLOOP, repo, *self.serve_args(), wait_ready=False) as s:
                s.wait_event("server_not_ready")
                self.assertEqual(503, request(s.http_port, "GET", "/v2/health/ready")[0])
                self.assertEqual(200, request(s.http_port, "GET", "/v2/health/live")[0])
                rc, secs = run_healthcheck(self.hc, s.http_port)
                print(f"\nHEALTHCHECK against a live, not ready server (503): exit {rc} in {secs * 1000:.1f} ms")
                self.assertNotEqual(0, rc)
        finally:
            shutil.rmtree(repo, ignore_errors=True)


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = os.path.abspath(path)


if __name__ == "__main__":
    run_tests(set_inferloop)
