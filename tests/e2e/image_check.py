"""Checks deploy/kubernetes/Dockerfile without docker: its runtime stage's Debian packages against
what the built binary links, and its structure against the issue 17 contract.

The package check models what `apt-get install --no-install-recommends PKGS` on debian:12-slim
gives the runtime stage: the base image's packages (BASE_REQUIRED and their dependencies), the
listed packages, and every package those depend on (Depends / Pre-Depends, read from this host's
dpkg database, which must be Debian 12 like the image). Then:
  - every library the binary needs directly (readelf NEEDED) must come from a listed package or
    the base image: it is the binary's own requirement, so it is not left to some other package's
    dependency chain;
  - every library `ldd` resolves (the whole closure) must come from a package the stage installs;
  - a library that no Debian package owns (one from a build tree, /usr/local, "not found") can
    never be in the image and is reported;
  - a listed package that provides none of the libraries `ldd` resolves is dead weight, unless
    the comment line right above it in the Dockerfile starts with "not linked:" and says why.

Usable as a script: image_check.py DOCKERFILE BINARY prints every problem (exit 1) or "ok".
"""
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field

KNOWN_INSTRUCTIONS = {"FROM", "RUN", "CMD", "LABEL", "MAINTAINER", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT",
                      "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}

# debian:12-slim is debuerreotype's "minbase" bookworm: the packages of Priority required (the
# Essential ones among them) plus apt, and whatever those depend on. These are the roots; the
# dependency closure (libc6, libgcc-s1, libstdc++6 via apt, zlib1g, liblzma5, ...) is computed from
# dpkg. Each root is checked to be Priority required or Essential in this host's dpkg database.
BASE_REQUIRED = (
    "apt", "base-files", "base-passwd", "bash", "bsdutils", "coreutils", "dash", "debconf", "debianutils",
    "diffutils", "dpkg", "e2fsprogs", "findutils", "grep", "gzip", "hostname", "init-system-helpers", "libc-bin",
    "libpam-modules", "libpam-modules-bin", "libpam-runtime", "login", "mawk", "mount", "ncurses-base",
    "ncurses-bin", "passwd", "perl-base", "sed", "sysvinit-utils", "tar", "tzdata", "util-linux",
)
NOT_LINKED_MARK = "not linked:"


# ---- Dockerfile parsing ----

@dataclass
class Instruction:
    keyword: str                 # upper case
    args: str                    # the logical line after the keyword, continuations joined
    lineno: int                  # first physical line (1-based)
    lines: list = field(default_factory=list)  # [(lineno, text)] physical lines, comment lines included


class DockerfileError(ValueError):
    pass


def parse_dockerfile(text):
    """The instructions of a Dockerfile (default escape character only). Raises DockerfileError on
    an unknown instruction, a parser directive other than syntax/check, or a dangling continuation."""
    out = []
    cur = None
    header = True
    for i, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if header and stripped.startswith("#"):
            m = re.match(r"#\s*([A-Za-z]+)\s*=", stripped)
            if m:
                if m.group(1).lower() == "escape":
                    raise DockerfileError(f"line {i}: the escape directive is not supported by this checker")
                continue
        if stripped:
            header = False
        if cur is not None:
            cur.lines.append((i, raw))
            if stripped.startswith("#") or not stripped:
                continue  # comment (or empty) lines inside a continued instruction are dropped
            body = raw.rstrip()
            if body.endswith("\\"):
                cur.args += body[:-1]
            else:
                cur.args += body
                out.append(cur)
                cur = None
            continue
        if not stripped or stripped.startswith("#"):
            continue
        m = re.match(r"\s*([A-Za-z]+)(\s+(.*))?$", raw)
        if not m:
            raise DockerfileError(f"line {i}: not an instruction: {raw!r}")
        keyword = m.group(1).upper()
        if keyword not in KNOWN_INSTRUCTIONS:
            raise DockerfileError(f"line {i}: unknown instruction {m.group(1)}")
        rest = (m.group(3) or "").rstrip()
        ins = Instruction(keyword, "", i, [(i, raw)])
        if rest.endswith("\\"):
            ins.args = rest[:-1]
            cur = ins
        else:
            ins.args = rest.strip()
            out.append(ins)
    if cur is not None:
        raise DockerfileError(f"line {cur.lineno}: {cur.keyword} continues past the end of the file")
    for ins in out:
        ins.args = ins.args.strip()
    return out


def stages(instructions):
    """[(name or None, base image, [instructions of the stage])]: one per FROM."""
    result = []
    for ins in instructions:
        if ins.keyword == "FROM":
            words = [w for w in ins.args.split() if not w.startswith("--")]
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            result.append((name, words[0] if words else "", []))
        elif not result:
            if ins.keyword != "ARG":
                raise DockerfileError(f"line {ins.lineno}: {ins.keyword} before the first FROM")
        else:
            result[-1][2].append(ins)
    if not result:
        raise DockerfileError("no FROM instruction")
    return result


def exec_form(ins):
    """The JSON array of an exec-form CMD / ENTRYPOINT / HEALTHCHECK CMD, or None (shell form)."""
    args = ins.args
    if ins.keyword == "HEALTHCHECK":
        m = re.search(r"(?:^|\s)CMD\s+(.*)$", args, re.S)
        if not m:
            return None
        args = m.group(1)
    args = args.strip()
    if not args.startswith("["):
        return None
    try:
        value = json.loads(args)
    except ValueError as e:
        raise DockerfileError(f"line {ins.lineno}: {ins.keyword} is not valid JSON: {e}")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DockerfileError(f"line {ins.lineno}: {ins.keyword} must be a JSON array of strings")
    return value


def apt_packages(stage_instructions):
    """{package: comment line right above it (without '#') or None} over every `apt-get install` of
    the given instructions, and the list of those RUN instructions."""
    packages, runs = {}, []
    for ins in stage_instructions:
        if ins.keyword != "RUN":
            continue
        named = set()
        for segment in re.split(r"&&|\|\||;|\|", ins.args):
            words = shlex.split(segment, comments=False)
            if len(words) >= 2 and words[0] in ("apt-get", "apt") and "install" in words[1:]:
                after = words[words.index("install") + 1:]
                named.update(w for w in after if not w.startswith("-"))
        if not named:
            continue
        runs.append(ins)
        comment = None
        for _, raw in ins.lines:
            s = raw.strip()
            if s.startswith("#"):
                comment = s.lstrip("#").strip()
                continue
            tokens = re.findall(r"[A-Za-z0-9][A-Za-z0-9.+\-:=~]*", s)
            for t in tokens:
                if t in named and t not in packages:
                    packages[t] = comment
            comment = None
        for t in named:
            packages.setdefault(t, None)
    return packages, runs


# ---- the binary's libraries and their Debian packages ----

def needed_sonames(binary):
    out = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True, check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def ldd_libraries(binary):
    """[(soname, resolved path or None)] for every library ldd lists (vdso excluded)."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    libs = []
    for line in out.splitlines():
        line = line.strip()
        m = re.match(r"(\S+) => (not found|(\S+) \(0x[0-9a-f]+\))", line)
        if m:
            libs.append((m.group(1), None if m.group(2) == "not found" else m.group(3)))
            continue
        m = re.match(r"(/\S+) \(0x[0-9a-f]+\)", line)  # the dynamic loader, by absolute path
        if m:
            libs.append((os.path.basename(m.group(1)), m.group(1)))
    return [(s, p) for s, p in libs if not s.startswith("linux-vdso") and not s.startswith("linux-gate")]


def _path_variants(path):
    """The names dpkg may know a library file under: as given, resolved, each with and without
    /usr (Debian 12 is merged-/usr, but packages still register /lib/... paths), and every
    symlink on the way (a package may own the soname link, another the file)."""
    chain = [path]
    p = path
    for _ in range(10):
        if not os.path.islink(p):
            break
        p = os.path.join(os.path.dirname(p), os.readlink(p))
        chain.append(os.path.normpath(p))
    chain.append(os.path.realpath(path))
    variants = []
    for c in chain:
        for v in (c, c[4:] if c.startswith("/usr/") else "/usr" + c):
            if v not in variants:
                variants.append(v)
    return variants


def owner_packages(paths):
    """{path: Debian package owning it (arch qualifier dropped) or None}."""
    variants = {p: _path_variants(p) for p in paths}
    every = sorted({v for vs in variants.values() for v in vs})
    owners = {}
    if every:
        out = subprocess.run(["dpkg-query", "-S"] + every, capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("diversion "):
                continue
            pkgs, sep, file = line.partition(": ")
            if sep and "," not in pkgs:
                owners.setdefault(file.strip(), pkgs.split(":")[0].strip())
    return {p: next((owners[v] for v in vs if v in owners), None) for p, vs in variants.items()}


def dpkg_database():
    """{package: {"depends": [[alternative, ...], ...], "provides": [...], "priority", "essential"}}
    of the installed packages."""
    fmt = "${Package}\\t${Status}\\t${Priority}\\t${Essential}\\t${Depends}\\t${Pre-Depends}\\t${Provides}\\n"
    out = subprocess.run(["dpkg-query", "-W", "-f", fmt], capture_output=True, text=True, check=True).stdout
    db = {}
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) != 7 or not parts[1].endswith(" installed"):
            continue
        name, _, priority, essential, dep, pre, prov = parts

        def names(field_text):
            return [re.sub(r"[\s(:].*", "", a.strip()) for a in field_text.split("|") if a.strip()]
        depends = [names(d) for d in (dep + "," + pre).split(",") if d.strip()]
        provides = [re.sub(r"[\s(:].*", "", p.strip()) for p in prov.split(",") if p.strip()]
        db[name] = {"depends": depends, "provides": provides, "priority": priority, "essential": essential == "yes"}
    return db


def install_closure(roots, db):
    """The packages `apt-get install ROOTS` leaves installed: ROOTS and their Depends/Pre-Depends,
    recursively. An alternative (a | b) resolves to its first installed choice (apt's rule: the
    first one), through Provides for virtual packages."""
    providers = {}
    for name, info in db.items():
        for v in info["provides"]:
            providers.setdefault(v, []).append(name)
    seen, todo = set(), [r for r in roots if r in db]
    seen.update(roots)
    while todo:
        pkg = todo.pop()
        for alternatives in db[pkg]["depends"]:
            choice = None
            for a in alternatives:
                if a in db:
                    choice = a
                elif providers.get(a):
                    choice = sorted(providers[a])[0]
                if choice:
                    break
            if choice and choice not in seen:
                seen.add(choice)
                todo.append(choice)
    return seen


# ---- the checks ----

def check_packages(dockerfile_text, needed, libraries, owners, db, base_roots=BASE_REQUIRED, direct_rule=True):
    """Problems (strings) of the last stage's apt package list against the binary's libraries.
    needed: sonames of readelf NEEDED; libraries: [(soname, path or None)] from ldd; owners:
    {path: package or None}; db: dpkg_database(). direct_rule False drops the rule that a NEEDED
    library's package be listed (for a binary linked without --as-needed, whose NEEDED holds its
    libraries' own dependencies too: clang's sanitizer build)."""
    problems = []
    st = stages(parse_dockerfile(dockerfile_text))
    listed, runs = apt_packages(st[-1][2])
    base = install_closure(base_roots, db)
    installed = install_closure(set(listed) | set(base_roots), db)
    for pkg in sorted(listed):
        if pkg not in db:
            problems.append(f"package {pkg} (runtime stage) is not a Debian 12 package installed here: "
                            "cannot check what it provides (install it, or fix the name)")
    provided = {}
    by_soname = dict(libraries)
    for soname, path in libraries:
        pkg = owners.get(path) if path else None
        if path is None:
            problems.append(f"library {soname}: ldd says 'not found'")
            continue
        if pkg is None:
            problems.append(f"library {soname} ({path}) belongs to no Debian package (a build tree, /usr/local?): "
                            "the runtime stage cannot install it")
            continue
        provided.setdefault(pkg, []).append(soname)
        if pkg not in installed:
            problems.append(f"library {soname} ({path}): its package {pkg} is not installed by the runtime stage "
                            "(neither listed, nor a dependency of a listed package, nor in debian:12-slim)")
        elif direct_rule and soname in needed and pkg not in listed and pkg not in base:
            problems.append(f"library {soname} ({path}): the binary links it directly, so its package {pkg} must be "
                            "listed in the runtime stage (it is only there as another package's dependency)")
    for soname in needed:
        if soname not in by_soname:
            problems.append(f"library {soname}: NEEDED by the binary but not in ldd's output")
    for pkg, comment in sorted(listed.items()):
        if pkg in provided:
            continue
        if comment and comment.lower().startswith(NOT_LINKED_MARK):
            continue
        problems.append(f"package {pkg} provides no library the binary links (dead weight): remove it, or say why "
                        f"in a comment line right above it starting with '{NOT_LINKED_MARK}'")
    if not runs:
        problems.append("the runtime stage installs no packages (no apt-get install)")
    for ins in runs:
        if "--no-install-recommends" not in ins.args:
            problems.append(f"line {ins.lineno}: apt-get install without --no-install-recommends")
        if not re.search(r"rm -rf /var/lib/apt/lists/\*", ins.args):
            problems.append(f"line {ins.lineno}: the apt lists are not removed in the same RUN "
                            "(rm -rf /var/lib/apt/lists/*)")
    return problems


# The issue 17 contract (/models, ports, user, command line).
CONTRACT_ENTRYPOINT = ["/usr/local/bin/inferloop"]
CONTRACT_CMD = ["serve", "--model-repository", "/models", "--host", "0.0.0.0", "--http-port", "8000",
                "--grpc-port", "8001", "--metrics-port", "8002", "--model-control-mode", "poll",
                "--repository-poll-secs", "10", "--shutdown-timeout-secs", "30"]
CONTRACT_PORTS = {8000, 8001, 8002}
CONTRACT_UID = 10001
BASE_IMAGES = ("debian:12-slim", "debian:bookworm-slim")
OCI_LABELS = ("org.opencontainers.image.title", "org.opencontainers.image.version",
              "org.opencontainers.image.source")
# Paths the build needs (must be in the context) and paths the context must leave out.
CONTEXT_NEEDED = ("CMakeLists.txt", "src", "include", "proto", "scripts/install_deps.sh", "scripts/build.sh",
                  "tests/CMakeLists.txt", "bench")
CONTEXT_EXCLUDED = ("build", "build-asan", ".venv", ".git", "bench/models")


def _flag_value(words, flag):
    for i, w in enumerate(words):
        if w == flag and i + 1 < len(words):
            return words[i + 1]
        if w.startswith(flag + "="):
            return w.split("=", 1)[1]
    return None


def _stage_problems(st):
    problems = []
    for name, base, _ in st:
        if base not in BASE_IMAGES:
            problems.append(f"stage {name or '?'}: base image {base!r} is not one of {', '.join(BASE_IMAGES)}")
    if len(st) < 2:
        return problems + ["one stage only: the build must happen in a stage of its own (multi-stage)"]
    build_runs = " ; ".join(i.args for _, _, ins in st[:-1] for i in ins if i.keyword == "RUN")
    if not re.search(r"(^|[\s;&/])scripts/install_deps\.sh\b", build_runs):
        problems.append("the build stage does not run scripts/install_deps.sh")
    if not re.search(r"(^|[\s;&/])scripts/build\.sh\s+--target[\s=]inferloop\b", build_runs):
        problems.append("the build stage does not run scripts/build.sh --target inferloop")
    build_names = {n for n, _, _ in st[:-1] if n} | {str(i) for i in range(len(st) - 1)}
    copies = [i for i in st[-1][2] if i.keyword == "COPY" and "--from=" in i.args]
    if not any(i.args.split()[-1] == "/usr/local/bin/inferloop" and _flag_value(i.args.split(), "--from") in build_names
               for i in copies):
        problems.append("the runtime stage does not COPY --from=<build stage> ... /usr/local/bin/inferloop")
    return problems


def _user_problems(runtime):
    problems = []
    users = [i for i in runtime if i.keyword == "USER"]
    if not users:
        return ["no USER in the runtime stage: the server would run as root"]
    user = users[-1].args.split(":")
    if user[0] in ("0", "root") or (len(user) > 1 and user[1] in ("0", "root")):
        problems.append(f"line {users[-1].lineno}: USER {users[-1].args} is root")
    elif user[0] != str(CONTRACT_UID):
        problems.append(f"line {users[-1].lineno}: USER {users[-1].args}: the contract's user is uid {CONTRACT_UID} "
                        "(numeric, so Kubernetes' runAsNonRoot can verify it)")
    runs = " ; ".join(i.args for i in runtime if i.keyword == "RUN")
    if not re.search(rf"groupadd\b[^;&]*--gid {CONTRACT_UID}\b[^;&]*\binferloop\b", runs):
        problems.append(f"no group inferloop with gid {CONTRACT_UID} (groupadd --gid {CONTRACT_UID} ... inferloop)")
    if not re.search(rf"useradd\b[^;&]*--uid {CONTRACT_UID}\b[^;&]*--gid {CONTRACT_UID}\b[^;&]*\binferloop\b", runs):
        problems.append(f"no user inferloop with uid/gid {CONTRACT_UID} "
                        f"(useradd --uid {CONTRACT_UID} --gid {CONTRACT_UID} ... inferloop)")
    return problems


def _runtime_problems(runtime):
    problems = []
    volumes = set()
    for i in (i for i in runtime if i.keyword == "VOLUME"):
        volumes.update(json.loads(i.args) if i.args.startswith("[") else i.args.split())
    if "/models" not in volumes:
        problems.append("no VOLUME /models in the runtime stage")
    ports = set()
    for i in (i for i in runtime if i.keyword == "EXPOSE"):
        ports.update(int(p.split("/")[0]) for p in i.args.split())
    if ports != CONTRACT_PORTS:
        problems.append(f"EXPOSE {sorted(ports)}: the contract's ports are {sorted(CONTRACT_PORTS)}")
    for keyword, want in (("ENTRYPOINT", CONTRACT_ENTRYPOINT), ("CMD", CONTRACT_CMD)):
        found = [i for i in runtime if i.keyword == keyword]
        got = exec_form(found[-1]) if found else None
        if got != want:
            problems.append(f"{keyword} {got}: the contract's is {want} (exec form)")
    labels = " ".join(i.args for i in runtime if i.keyword == "LABEL")
    problems += [f"no LABEL {k}" for k in OCI_LABELS if k + "=" not in labels]
    return problems


def healthcheck_command(runtime):
    """The runtime stage's HEALTHCHECK command (exec form list), or raises DockerfileError."""
    found = [i for i in runtime if i.keyword == "HEALTHCHECK"]
    if not found or found[-1].args.upper().startswith("NONE"):
        raise DockerfileError("no HEALTHCHECK in the runtime stage")
    cmd = exec_form(found[-1])
    if cmd is None:
        raise DockerfileError(f"line {found[-1].lineno}: HEALTHCHECK CMD in shell form (it would need /bin/sh -c; "
                              "use the exec form [\"bash\", \"-c\", ...])")
    return cmd


def _healthcheck_problems(runtime):
    try:
        cmd = healthcheck_command(runtime)
    except DockerfileError as e:
        return [str(e)]
    problems = []
    text = " ".join(cmd)
    if cmd[0] not in ("bash", "/bin/bash", "/usr/bin/bash"):
        problems.append(f"HEALTHCHECK runs {cmd[0]}, not bash (/dev/tcp is a bash feature)")
    if re.search(r"\b(curl|wget)\b", text):
        problems.append("HEALTHCHECK uses curl/wget: the image has neither")
    if "/dev/tcp/" not in text or "/v2/health/ready" not in text:
        problems.append("HEALTHCHECK does not GET /v2/health/ready over bash's /dev/tcp")
    if "INFERLOOP_HTTP_PORT" not in text:
        problems.append("HEALTHCHECK does not read its port from $INFERLOOP_HTTP_PORT")
    env = " ".join(i.args for i in runtime if i.keyword == "ENV")
    m = re.search(r"\bINFERLOOP_HTTP_PORT[= ](\d+)", env)
    cmd_line = [i for i in runtime if i.keyword == "CMD"]
    http_port = _flag_value(exec_form(cmd_line[-1]) or [], "--http-port") if cmd_line else None
    if not m:
        problems.append("no ENV INFERLOOP_HTTP_PORT in the runtime stage (the port the HEALTHCHECK asks)")
    elif http_port is not None and m.group(1) != http_port:
        problems.append(f"ENV INFERLOOP_HTTP_PORT={m.group(1)} but CMD serves HTTP on {http_port}")
    return problems


def _context_problems(st, repo_root, dockerignore_text):
    problems = []
    patterns = dockerignore_patterns(dockerignore_text)
    for _, _, ins in st:
        for i in ins:
            if i.keyword not in ("COPY", "ADD") or "--from=" in i.args:
                continue
            words = [w for w in i.args.split() if not w.startswith("--")]
            for src in words[:-1]:
                rel = os.path.normpath(src).lstrip("/")
                if rel != "." and not os.path.exists(os.path.join(repo_root, rel)):
                    problems.append(f"line {i.lineno}: {i.keyword} source {src} does not exist in the repository")
                elif rel != "." and dockerignored(rel, patterns):
                    problems.append(f"line {i.lineno}: {i.keyword} source {src} is excluded by .dockerignore")
    problems += [f".dockerignore leaves {p} out of the build context; the build needs it"
                 for p in CONTEXT_NEEDED if dockerignored(p, patterns)]
    problems += [f".dockerignore does not leave {p} out of the build context" for p in CONTEXT_EXCLUDED
                 if not dockerignored(p + "/x", patterns)]
    return problems


def check_structure(text, repo_root, dockerignore_text):
    """Problems of the Dockerfile against the contract: stages and base images, the project's
    build scripts, the user, volume, ports, command line, labels, HEALTHCHECK, build context."""
    try:
        st = stages(parse_dockerfile(text))
    except DockerfileError as e:
        return [str(e)]
    runtime = st[-1][2]
    return (_stage_problems(st) + _user_problems(runtime) + _runtime_problems(runtime) +
            _healthcheck_problems(runtime) + _context_problems(st, repo_root, dockerignore_text))


def is_sanitizer_build(binary):
    """Whether the binary carries a sanitizer runtime (the clang ASan/UBSan tree of scripts/test.sh)."""
    out = subprocess.run(["readelf", "--dyn-syms", "-W", binary], capture_output=True, text=True, check=True).stdout
    return re.search(r"\s(__asan_init|__ubsan_handle_\w+|__sanitizer_\w+)(@\S*)?$", out, re.M) is not None


def binary_facts(binary):
    """(needed sonames, ldd libraries, owners, dpkg database) of a built binary."""
    needed = needed_sonames(binary)
    libs = ldd_libraries(binary)
    owners = owner_packages([p for _, p in libs if p])
    return needed, libs, owners, dpkg_database()


def dockerignore_patterns(text):
    pats = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        neg = line.startswith("!")
        p = os.path.normpath(line.lstrip("!").strip().lstrip("/"))
        pats.append((neg, p))
    return pats


def _pattern_regex(pattern):
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        else:
            c = pattern[i]
            out += "[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c)
            i += 1
    return re.compile(out + "$")


def dockerignored(path, patterns):
    """Whether a repository-relative path is left out of the build context (Docker's rules: the
    last matching pattern wins; a pattern matching a directory leaves out all below it)."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    ignored = False
    for neg, pat in patterns:
        rx = _pattern_regex(pat)
        if any(rx.match(p) for p in prefixes):
            ignored = not neg
    return ignored


def main(argv):
    if len(argv) != 3:
        print("usage: image_check.py DOCKERFILE BINARY", file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        text = f.read()
    root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(argv[1])), "..", ".."))
    with open(os.path.join(root, ".dockerignore")) as f:
        ignore = f.read()
    problems = check_structure(text, root, ignore) + check_packages(
        text, *binary_facts(argv[2]), direct_rule=not is_sanitizer_build(argv[2]))
    for p in problems:
        print(p)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
