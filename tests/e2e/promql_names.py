"""Which metrics and labels a PromQL expression names, and which a Prometheus exposition has.

Shared by the checks that hold a configuration against a real server's /metrics:
tests/e2e/test_deploy.py (the Grafana dashboard) and tests/e2e/test_k8s_manifests.py (the
prometheus-adapter rules, the HPAs and the Gateway API Inference Extension metric names).
Standard library only.
"""
import re

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
