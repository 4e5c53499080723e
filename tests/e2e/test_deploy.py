"""Checks deploy/ (the Prometheus scrape config and the Grafana dashboard) against a real
`inferloop serve`.

The server runs on the example repository and gets requests of every kind (successes on both
models, a failing request, a refused one), so every counter and histogram has samples. Then every
metric named in a PromQL expression of the dashboard (panel targets and template-variable
queries) must be in its /metrics output, and every label the queries group, match or print by
must be one those metrics carry (or `job` / `instance`, which Prometheus adds).

When a `prometheus` binary is on PATH (Debian: apt-get install prometheus), it also scrapes the
server with deploy/prometheus/prometheus.yml (its target pointed at the test server) under
traffic, and evaluates every dashboard query: each must run without error and return series.
Without it that class is reported as skipped.

Usage: test_deploy.py --inferloop PATH/TO/inferloop [unittest args]
Exit status: 0 all passed, 1 a failure, 77 none failed but some were skipped.
Needs only the standard library; the YAML files are parsed with PyYAML when the venv has it
(scripts/requirements-dev.txt), and those checks are reported as skipped without it.
"""
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import Server, free_port, metric_value, metrics, post_json, request, run_tests  # noqa: E402

try:
    import yaml
except ImportError:  # the checks that need it skip, saying so
    yaml = None

INFERLOOP = None
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DEPLOY = os.path.join(ROOT, "deploy")
DASHBOARD = os.path.join(DEPLOY, "grafana", "inferloop-dashboard.json")
PROMETHEUS_YML = os.path.join(DEPLOY, "prometheus", "prometheus.yml")

# ---- PromQL: which names in an expression are metrics ----

PROMQL_FUNCTIONS = {
    "abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh", "avg_over_time", "ceil",
    "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh", "count_over_time", "day_of_month", "day_of_week",
    "day_of_year", "days_in_month", "deg", "delta", "deriv", "double_exponential_smoothing", "exp", "floor",
    "histogram_avg", "histogram_count", "histogram_fraction", "histogram_quantile", "histogram_stddev",
    "histogram_stdvar", "histogram_sum", "holt_winters", "hour", "idelta", "increase", "info", "irate", "label_join",
    "label_replace", "last_over_time", "ln", "log10", "log2", "mad_over_time", "max_over_time", "min_over_time",
    "minute", "month", "pi", "predict_linear", "present_over_time", "quantile_over_time", "rad", "rate", "resets",
    "round", "scalar", "sgn", "sin", "sinh", "sort", "sort_by_label", "sort_by_label_desc", "sort_desc", "sqrt",
    "stddev_over_time", "stdvar_over_time", "sum_over_time", "tan", "tanh", "time", "timestamp", "vector", "year",
}
PROMQL_AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk",
                       "topk", "quantile", "limitk", "limit_ratio"}
PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or",
                   "unless", "atan2", "inf", "nan", "start", "end"}
GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)", re.IGNORECASE)
STRING = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`')
MATCHERS = re.compile(r"\{([^{}]*)\}")
MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"(\d+)"')  # values replaced by indexes
IDENT = re.compile(r"(?<![\w:.$])([A-Za-z_:][A-Za-z0-9_:]*)")
GRAFANA_VAR = re.compile(r"\$\{[^}]*\}|\$\w+|\[\[\w+\]\]")


class PromqlError(ValueError):
    pass


def check_balanced(expr):
    """Raises PromqlError unless (), [], {} and quotes are balanced."""
    body = STRING.sub('""', expr)
    if re.search(r'["\'`]', body.replace('""', "")):
        raise PromqlError(f"unterminated string in {expr!r}")
    stack = []
    for c in body:
        if c in "([{":
            stack.append(c)
        elif c in ")]}":
            if not stack or "([{"[")]}".index(c)] != stack.pop():
                raise PromqlError(f"unbalanced {c!r} in {expr!r}")
    if stack:
        raise PromqlError(f"unclosed {stack[-1]!r} in {expr!r}")


def parse_promql(expr):
    """(metric names, label names) an expression refers to.

    Metric names: identifiers that are not functions, aggregations or keywords (and `__name__`
    matchers). Label names: those in label matchers and in by/without/on/ignoring/group_* lists.
    Raises PromqlError for unbalanced brackets or a call to an unknown function.
    """
    check_balanced(expr)
    labels, names = set(), set()
    # Strings (label values, label_replace arguments) may hold anything: set them aside first.
    strings = []

    def keep(m):
        strings.append(m.group(0)[1:-1])
        return f'"{len(strings) - 1}"'

    body = STRING.sub(keep, expr)
    for block in MATCHERS.findall(body):
        for label, _, index in MATCHER.findall(block):
            if label == "__name__":
                names.add(strings[int(index)])
            else:
                labels.add(label)
        if MATCHER.sub("", block).strip(" ,"):
            raise PromqlError(f"bad label matchers {{{block}}} in {expr!r}")
    body = MATCHERS.sub(" ", body)
    body = GRAFANA_VAR.sub(" ", body)
    body = re.sub(r"\[[^\]]*\]", " ", body)  # range and subquery durations
    for _, group in GROUPING.findall(body):
        labels.update(x.strip() for x in group.split(",") if x.strip())
    body = GROUPING.sub(" ", body)
    for m in IDENT.finditer(body):
        word = m.group(1)
        called = body[m.end():].lstrip().startswith("(")
        lower = word.lower()
        if called:
            if lower not in PROMQL_FUNCTIONS and lower not in PROMQL_AGGREGATIONS and lower not in PROMQL_KEYWORDS:
                raise PromqlError(f"unknown function {word}() in {expr!r}")
            continue
        if lower in PROMQL_KEYWORDS or lower in PROMQL_AGGREGATIONS:
            continue
        names.add(word)
    return names, labels


def parse_variable_query(query):
    """(metric names, label names) of a Grafana Prometheus variable query: label_values(expr, label),
    label_values(label), query_result(expr), or metrics(regex) (no metric)."""
    q = query.strip()
    m = re.fullmatch(r"label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)", q, re.S)
    if m:
        names, labels = parse_promql(m.group(1))
        return names, labels | {m.group(2)}
    m = re.fullmatch(r"label_values\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)", q)
    if m:
        return set(), {m.group(1)}
    m = re.fullmatch(r"query_result\((.*)\)", q, re.S)
    if m:
        return parse_promql(m.group(1))
    if re.fullmatch(r"metrics\(.*\)", q, re.S):
        return set(), set()
    return parse_promql(q)


def dashboard_queries(dashboard):
    """[(where, kind, text, legendFormat)] for every PromQL text in the dashboard: panel targets
    (rows' nested panels too) and query variables."""
    out = []

    def panels(ps):
        for p in ps:
            yield p
            yield from panels(p.get("panels", []))

    for p in panels(dashboard.get("panels", [])):
        for t in p.get("targets", []):
            if "expr" in t:
                out.append((f"panel {p.get('title')!r} target {t.get('refId')}", "expr", t["expr"],
                            t.get("legendFormat", "")))
    for v in dashboard.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v.get("query")
            q = q.get("query", "") if isinstance(q, dict) else (q or v.get("definition", ""))
            out.append((f"variable ${v.get('name')}", "variable", q, ""))
    return out


# ---- the exposition ----

def parse_exposition(text):
    """({sample name: set of label names}, {family: type}) from Prometheus text format."""
    samples, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, family, kind = line.split(None, 3)
            types[family] = kind.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s", line)
        if not m:
            raise ValueError(f"not a sample line: {line!r}")
        labels = set(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="', m.group(2) or ""))
        samples.setdefault(m.group(1), set()).update(labels)
    return samples, types


def problems(dashboard, exposition_text):
    """What in the dashboard's queries the exposition does not back: one line each."""
    samples, types = parse_exposition(exposition_text)
    out = []
    for where, kind, text, legend in dashboard_queries(dashboard):
        try:
            names, labels = parse_variable_query(text) if kind == "variable" else parse_promql(text)
        except PromqlError as e:
            out.append(f"{where}: {e}")
            continue
        if not names:
            out.append(f"{where}: names no metric: {text!r}")
        have = {"job", "instance"}  # target labels Prometheus adds to every series it scrapes
        for n in sorted(names):
            if n not in samples:
                out.append(f"{where}: metric {n} is not in the server's /metrics")
                continue
            have |= samples[n]
            for suffix in ("_bucket", "_sum", "_count"):
                base = n[: -len(suffix)]
                if n.endswith(suffix) and types.get(base) not in ("histogram", "summary") and base in types:
                    out.append(f"{where}: {n}: {base} is a {types[base]}, not a histogram")
        labels |= set(re.findall(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", legend))
        for label in sorted(labels - have):
            if all(n in samples for n in names):
                out.append(f"{where}: label {label!r} is not on {sorted(names)}")
    return out


# ---- tests ----

class TestPromqlParser(unittest.TestCase):
    """The name extraction the dashboard check relies on."""

    def test_names_and_labels(self):
        cases = [
            ('histogram_quantile(0.99, sum by (model, le) (rate(foo_bucket{a="x{y}", b=~"$m"}[$__rate_interval])))',
             {"foo_bucket"}, {"model", "le", "a", "b"}),
            ("sum(rate(a_total[5m])) / sum without (reason) (rate(b_total[5m])) or vector(0)",
             {"a_total", "b_total"}, {"reason"}),
            ("foo offset 5m and on(instance) bar > 1e-3 * 2", {"foo", "bar"}, {"instance"}),
            ("rate(x:recorded_rate[1m]) / ignoring(le) group_left(model) y", {"x:recorded_rate", "y"},
             {"le", "model"}),
            ('{__name__="by_name", job="j"}', {"by_name"}, {"job"}),
            ('label_replace(up, "dst", "$1", "src", "(.*) rate(foo)")', {"up"}, set()),
            ("SUM BY (model) (inferloop_x) AND inferloop_y", {"inferloop_x", "inferloop_y"}, {"model"}),
            ("histogram_quantile($q, rate(h_bucket[$__rate_interval]))", {"h_bucket"}, set()),
        ]
        for expr, names, labels in cases:
            with self.subTest(expr=expr):
                self.assertEqual(parse_promql(expr), (names, labels))

    def test_variable_queries(self):
        self.assertEqual(parse_variable_query('label_values(inferloop_model_ready{job=~"$job"}, model)'),
                         ({"inferloop_model_ready"}, {"job", "model"}))
        self.assertEqual(parse_variable_query("label_values(model)"), (set(), {"model"}))
        self.assertEqual(parse_variable_query("query_result(sum by (model) (up))"), ({"up"}, {"model"}))

    def test_bad_expressions_are_reported(self):
        for bad in ["sum(rate(x[5m])", 'x{a="b}', "rat(x[5m])", "x{a=b}", "sum(x]"]:
            with self.subTest(expr=bad):
                with self.assertRaises(PromqlError):
                    parse_promql(bad)


class TestDashboardFile(unittest.TestCase):
    """The dashboard as Grafana 10/11 imports it, without a server."""

    @classmethod
    def setUpClass(cls):
        with open(DASHBOARD) as f:
            cls.dash = json.load(f)

    def test_schema_variables_and_layout(self):
        d = self.dash
        self.assertGreaterEqual(d["schemaVersion"], 38)  # Grafana 10.0 writes 38, 10.4 / 11 write 39
        self.assertTrue(d["uid"] and d["title"])
        variables = {v["name"]: v for v in d["templating"]["list"]}
        self.assertEqual(variables["datasource"]["type"], "datasource")
        self.assertEqual(variables["datasource"]["query"], "prometheus")
        self.assertEqual(variables["model"]["type"], "query")
        self.assertIn("$model", json.dumps([p.get("targets") for p in d["panels"]]))
        ids = [p["id"] for p in d["panels"]]
        self.assertEqual(len(ids), len(set(ids)), "panel ids are unique")
        boxes = []
        for p in d["panels"]:
            g = p["gridPos"]
            self.assertLessEqual(g["x"] + g["w"], 24, p["title"])
            for other_title, o in boxes:
                overlap = (g["x"] < o["x"] + o["w"] and o["x"] < g["x"] + g["w"] and g["y"] < o["y"] + o["h"]
                           and o["y"] < g["y"] + g["h"])
                self.assertFalse(overlap, f"{p['title']!r} overlaps {other_title!r}")
            boxes.append((p["title"], g))
            if p["type"] == "row":
                continue
            self.assertEqual(p["datasource"], {"type": "prometheus", "uid": "${datasource}"}, p["title"])
            self.assertTrue(p["targets"], p["title"])
            for t in p["targets"]:
                self.assertTrue(t["expr"].strip(), p["title"])

    def test_queries_parse_and_cover_the_metrics(self):
        used = set()
        for where, kind, text, _ in dashboard_queries(self.dash):
            names, _ = parse_variable_query(text) if kind == "variable" else parse_promql(text)
            used |= names
        for family in ["inferloop_request_success_total", "inferloop_request_failure_total",
                       "inferloop_request_duration_seconds_bucket", "inferloop_queue_duration_seconds_bucket",
                       "inferloop_compute_duration_seconds_bucket", "inferloop_queue_depth",
                       "inferloop_inflight_requests", "inferloop_batch_size_sum", "inferloop_batch_size_count",
                       "inferloop_batch_size_bucket", "inferloop_batches_total", "inferloop_requests_refused_total",
                       "inferloop_model_ready", "inferloop_model_memory_bytes", "process_resident_memory_bytes",
                       "process_cpu_seconds_total"]:
            self.assertIn(family, used, "a panel for each metric of docs/SERVING.md#metrics")


class TestPrometheusConfig(unittest.TestCase):
    def test_targets_the_metrics_port(self):
        with open(PROMETHEUS_YML) as f:
            text = f.read()
        self.assertRegex(text, r"(?m)^\s*-\s*['\"]?[\w.\-]+:8002['\"]?\s*(#.*)?$")

    def test_parses_as_yaml(self):
        if yaml is None:
            self.skipTest("PyYAML is not installed (pip install -r scripts/requirements-dev.txt)")
        with open(PROMETHEUS_YML) as f:
            cfg = yaml.safe_load(f)
        jobs = {j["job_name"]: j for j in cfg["scrape_configs"]}
        job = jobs["inferloop"]
        self.assertEqual(job.get("metrics_path", "/metrics"), "/metrics")
        targets = [t for sc in job["static_configs"] for t in sc["targets"]]
        self.assertTrue(targets)
        self.assertTrue(all(t.rsplit(":", 1)[1] == "8002" for t in targets), targets)
        for key in ("scrape_interval", "scrape_timeout"):
            self.assertRegex(job.get(key, cfg["global"]["scrape_interval"]), r"^\d+(ms|s|m)$")

    def test_compose_and_grafana_provisioning_parse(self):
        if yaml is None:
            self.skipTest("PyYAML is not installed (pip install -r scripts/requirements-dev.txt)")
        with open(os.path.join(DEPLOY, "docker-compose.yml")) as f:
            compose = yaml.safe_load(f)
        self.assertEqual(set(compose["services"]), {"prometheus", "grafana"})
        for sub in ("datasources/prometheus.yml", "dashboards/inferloop.yml"):
            with open(os.path.join(DEPLOY, "grafana", "provisioning", sub)) as f:
                self.assertEqual(yaml.safe_load(f)["apiVersion"], 1, sub)
        # Every file the compose file mounts exists.
        for svc in compose["services"].values():
            for vol in svc.get("volumes", []):
                src = vol.split(":")[0]
                self.assertTrue(os.path.exists(os.path.join(DEPLOY, src)), vol)


class TestDashboardAgainstServer(unittest.TestCase):
    """Every metric and label the dashboard queries, in a real server's /metrics."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(INFERLOOP, os.path.join(ROOT, "examples", "model_repository"), "--grpc-port", "-1")
        try:
            cls._load()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def _load(cls):
        port = cls.server.http_port
        simple = {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))},
                             {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]}
        image = {"inputs": [{"name": "image", "datatype": "FP32", "shape": [1, 1, 28, 28], "data": [0.5] * 784}]}
        for _ in range(5):
            status, _, body = post_json(port, "/v2/models/simple/infer", simple)
            assert status == 200, (status, body)
        for _ in range(3):
            status, _, body = post_json(port, "/v2/models/tiny_cnn/infer", image)
            assert status == 200, (status, body)
        # Fails in the model version (a wrong shape): inferloop_request_failure_total.
        bad = {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 3], "data": [1, 2, 3]},
                          {"name": "INPUT1", "datatype": "INT32", "shape": [1, 3], "data": [1, 2, 3]}]}
        cls.bad_status = post_json(port, "/v2/models/simple/infer", bad)[0]
        # Refused before any queue (unknown model): inferloop_requests_refused_total.
        cls.refused_status = post_json(port, "/v2/models/no_such_model/infer", simple)[0]
        cls.text = metrics(cls.server.metrics_port)
        with open(DASHBOARD) as f:
            cls.dash = json.load(f)

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.__exit__(None, None, None)

    def test_requests_reached_every_series(self):
        self.assertEqual(self.bad_status, 400)
        self.assertEqual(self.refused_status, 404)
        t = self.text
        self.assertEqual(metric_value(t, "inferloop_request_success_total", model="simple"), 5)
        self.assertEqual(metric_value(t, "inferloop_request_success_total", model="tiny_cnn"), 3)
        self.assertEqual(metric_value(t, "inferloop_request_failure_total", model="simple", reason="invalid_argument"), 1)
        self.assertEqual(metric_value(t, "inferloop_requests_refused_total", reason="not_found"), 1)
        self.assertGreaterEqual(metric_value(t, "inferloop_batch_size_count", model="tiny_cnn"), 1)

    def test_every_dashboard_metric_is_exported(self):
        found = problems(self.dash, self.text)
        self.assertEqual(found, [], "\n" + "\n".join(found))

    def test_a_misspelt_metric_or_label_fails_the_check(self):
        # The check itself: break one name, then one label, in a copy of the dashboard.
        for old, new, expect in [("inferloop_queue_depth{", "inferloop_queue_dept{", "inferloop_queue_dept"),
                                 ("inferloop_batch_size_bucket", "inferloop_batch_size_buckets", "_buckets"),
                                 ("sum by (model, reason)", "sum by (model, raeson)", "raeson")]:
            with self.subTest(old=old):
                broken = json.loads(json.dumps(self.dash).replace(old, new, 1))
                self.assertNotEqual(broken, self.dash)
                found = problems(broken, self.text)
                self.assertTrue(any(expect in p for p in found), found)
        no_var = copy.deepcopy(self.dash)
        for v in no_var["templating"]["list"]:
            if v["name"] == "model":
                v["query"] = v["definition"] = "label_values(inferloop_model_readiness, model)"
        self.assertTrue(any("inferloop_model_readiness" in p for p in problems(no_var, self.text)))

    def test_scrape_path_of_the_config_serves_prometheus_text(self):
        path = "/metrics"
        if yaml is not None:
            with open(PROMETHEUS_YML) as f:
                jobs = {j["job_name"]: j for j in yaml.safe_load(f)["scrape_configs"]}
            path = jobs["inferloop"].get("metrics_path", "/metrics")
        status, headers, body = request(self.server.metrics_port, "GET", path)
        self.assertEqual(status, 200)
        self.assertIn("text/plain", headers.get("content-type", ""))
        samples, types = parse_exposition(body.decode())
        self.assertEqual(types.get("inferloop_request_duration_seconds"), "histogram")
        self.assertIn("inferloop_request_duration_seconds_bucket", samples)


def substitute_variables(text, rate_interval):
    """A dashboard query as Grafana sends it with every variable on All."""
    for name, value in (("$__rate_interval", rate_interval), ("$__interval", rate_interval),
                        ("$job", "inferloop"), ("$instance", ".*"), ("$model", ".*")):
        text = text.replace("${" + name[1:] + "}", value).replace(name, value)
    return text


class TestQueriesInPrometheus(unittest.TestCase):
    """A real Prometheus scrapes a real server with deploy/'s config; every dashboard query runs."""

    RATE_INTERVAL = "10s"  # 10 scrapes at 1 s

    @classmethod
    def setUpClass(cls):
        prometheus = shutil.which("prometheus")
        if not prometheus:
            raise unittest.SkipTest("no prometheus binary on PATH (Debian: apt-get install prometheus)")
        cls.tmp = tempfile.mkdtemp(prefix="inferloop_deploy_")
        cls.server = Server(INFERLOOP, os.path.join(ROOT, "examples", "model_repository"), "--grpc-port", "-1")
        cls.prom = None
        cls.stop = threading.Event()
        cls.traffic = threading.Thread(target=cls._traffic, daemon=True)
        try:
            cls.prom_port = free_port()
            with open(PROMETHEUS_YML) as f:
                cfg = f.read()
            # deploy's config, scraping the test server every second.
            cfg = cfg.replace("127.0.0.1:8002", f"127.0.0.1:{cls.server.metrics_port}")
            cfg = cfg.replace("127.0.0.1:9090", f"127.0.0.1:{cls.prom_port}")
            cfg = re.sub(r"scrape_interval: \d+s", "scrape_interval: 1s", cfg)
            cfg = re.sub(r"scrape_timeout: \d+s", "scrape_timeout: 1s", cfg)
            assert f":{cls.server.metrics_port}" in cfg, "the inferloop target was not found in prometheus.yml"
            config = os.path.join(cls.tmp, "prometheus.yml")
            with open(config, "w") as f:
                f.write(cfg)
            cls.prom_log = open(os.path.join(cls.tmp, "prometheus.log"), "w+")
            cls.prom = subprocess.Popen(
                [prometheus, f"--config.file={config}", f"--storage.tsdb.path={os.path.join(cls.tmp, 'data')}",
                 f"--web.listen-address=127.0.0.1:{cls.prom_port}", "--log.level=warn"],
                stdout=cls.prom_log, stderr=subprocess.STDOUT)
            cls.traffic.start()
            # Until the server has been scraped over a whole rate window under traffic.
            deadline = time.time() + 90
            while True:
                if cls.prom.poll() is not None:
                    raise RuntimeError(f"prometheus exited: {cls._prom_log()}")
                try:
                    r = cls.query('count_over_time(up{job="inferloop"}[30s])', check=False)
                except OSError:  # not listening yet
                    r = None
                if r and r[0]["value"][1] not in ("", "NaN") and float(r[0]["value"][1]) >= 12:
                    break
                if time.time() > deadline:
                    raise RuntimeError(f"prometheus did not scrape the server: {r}\n{cls._prom_log()}")
                time.sleep(0.5)
        except BaseException:
            cls.tearDownClass()
            raise
        with open(DASHBOARD) as f:
            cls.dash = json.load(f)

    @classmethod
    def tearDownClass(cls):
        cls.stop.set()
        if cls.traffic.is_alive():
            cls.traffic.join(30)
        if cls.prom is not None and cls.prom.poll() is None:
            cls.prom.terminate()
            try:
                cls.prom.wait(30)
            except subprocess.TimeoutExpired:
                cls.prom.kill()
                cls.prom.wait()
        cls.server.terminate()
        cls.server.__exit__(None, None, None)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def _prom_log(cls):
        cls.prom_log.seek(0)
        return cls.prom_log.read()[-4000:]

    @classmethod
    def _traffic(cls):
        port = cls.server.http_port
        simple = {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))},
                             {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]}
        image = {"inputs": [{"name": "image", "datatype": "FP32", "shape": [1, 1, 28, 28], "data": [0.5] * 784}]}
        bad = {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 3], "data": [1, 2, 3]},
                          {"name": "INPUT1", "datatype": "INT32", "shape": [1, 3], "data": [1, 2, 3]}]}
        while not cls.stop.is_set():
            post_json(port, "/v2/models/simple/infer", simple)
            post_json(port, "/v2/models/tiny_cnn/infer", image)
            post_json(port, "/v2/models/simple/infer", bad)
            post_json(port, "/v2/models/no_such_model/infer", simple)
            time.sleep(0.05)

    @classmethod
    def query(cls, expr, check=True):
        status, _, body = request(cls.prom_port, "GET", "/api/v1/query?query=" + urllib.parse.quote(expr))
        reply = json.loads(body) if body else {}
        if check and (status != 200 or reply.get("status") != "success"):
            raise AssertionError(f"{expr!r}: HTTP {status}: {reply.get('error', body[:300])}")
        return reply.get("data", {}).get("result", []) if reply.get("status") == "success" else None

    def test_config_scrapes_the_server(self):
        up = self.query('up{job="inferloop"}')
        self.assertEqual(len(up), 1, up)
        self.assertEqual(up[0]["value"][1], "1")
        self.assertEqual(up[0]["metric"].get("service"), "inferloop")  # the config's target labels

    def test_every_dashboard_query_runs_and_returns_series(self):
        for where, kind, text, _ in dashboard_queries(self.dash):
            with self.subTest(where=where):
                if kind == "variable":
                    m = re.fullmatch(r"label_values\((.*),\s*(\w+)\s*\)", text.strip(), re.S)
                    self.assertIsNotNone(m, text)
                    result = self.query(substitute_variables(m.group(1), self.RATE_INTERVAL))
                    values = {r["metric"].get(m.group(2)) for r in result}
                    self.assertTrue(values and None not in values, f"{where}: no {m.group(2)} values: {result}")
                    continue
                result = self.query(substitute_variables(text, self.RATE_INTERVAL))
                self.assertTrue(result, f"{where}: no series for {text!r}")

    def test_model_variable_lists_the_models(self):
        result = self.query('inferloop_model_ready{job=~"inferloop", instance=~".*"}')
        self.assertEqual({r["metric"]["model"] for r in result}, {"simple", "tiny_cnn"})


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = os.path.abspath(path)


if __name__ == "__main__":
    run_tests(set_inferloop)
