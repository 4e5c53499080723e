"""Kubernetes' HorizontalPodAutoscaler (autoscaling/v2) decision loop, replayed offline.

The algorithm as documented in https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/
("Algorithm details", "Stabilization window", "Scaling policies", "Default behavior"):
  - every sync period (kube-controller-manager --horizontal-pod-autoscaler-sync-period, 15 s):
        desiredReplicas = ceil(currentReplicas * currentMetricValue / desiredMetricValue)
    where currentMetricValue is the average over the pods (a Pods metric with an AverageValue
    target, or a Resource metric's averageUtilization);
  - tolerance (--horizontal-pod-autoscaler-tolerance, 0.1): when the ratio
    currentMetricValue / desiredMetricValue is within 1 +- 0.1, the count stays as it is;
  - stabilization window: the controller keeps every recommendation of the last
    stabilizationWindowSeconds and, to scale down, uses the highest of them (scaleDown window);
    to scale up, the lowest of them (scaleUp window; 0 = the newest recommendation);
  - rate policies: a change within periodSeconds may not exceed the policy (Pods: a number of pods,
    Percent: a percentage of the count at the start of the period); selectPolicy Max (default)
    takes the policy that allows the largest change, Min the smallest, Disabled forbids the
    direction. Defaults: scaleUp Percent 100 and Pods 4 per 15 s (Max), scaleDown Percent 100 per
    15 s, scaleDown window 300 s;
  - the result is clamped to [minReplicas, maxReplicas].
Not modelled: pod readiness and the CPU initialization period (new pods count from their first sync),
missing metrics, several metrics in one HPA (each signal here is its own HPA).
"""
import math
import os

SYNC_PERIOD_S = 15
TOLERANCE = 0.1

# What the contract (the HPA in deploy/kubernetes/base/hpa.yaml) says, used when that file is absent.
CONTRACT_BEHAVIOR = {
    "minReplicas": 2, "maxReplicas": 10, "target": 4.0,
    "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15},
                             {"type": "Pods", "value": 4, "periodSeconds": 15}]},
    "scaleDown": {"stabilizationWindowSeconds": 120, "selectPolicy": "Max",
                  "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]},
}


def load_hpa(path):
    """The HPA settings from an autoscaling/v2 HorizontalPodAutoscaler YAML (the first document
    of that kind), with Kubernetes' defaults for what it leaves out; CONTRACT_BEHAVIOR when the
    file does not exist. Returns (settings, source description)."""
    if not os.path.exists(path):
        return dict(CONTRACT_BEHAVIOR), "the contract's numbers (no deploy/kubernetes/base/hpa.yaml in this tree)"
    import yaml
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d and d.get("kind") == "HorizontalPodAutoscaler"]
    if not docs:
        raise ValueError(f"{path}: no HorizontalPodAutoscaler")
    spec = docs[0]["spec"]
    target = None
    for m in spec.get("metrics", []):
        if m.get("type") == "Pods":
            t = m["pods"]["target"]
            target = float(str(t.get("averageValue")).rstrip("m")) / (1000 if str(t.get("averageValue")).endswith("m") else 1)
            break
    out = {"minReplicas": int(spec.get("minReplicas", 1)), "maxReplicas": int(spec["maxReplicas"]),
           "target": target if target is not None else CONTRACT_BEHAVIOR["target"]}
    behavior = spec.get("behavior", {})
    for direction in ("scaleUp", "scaleDown"):
        d = dict(CONTRACT_BEHAVIOR[direction])
        d["stabilizationWindowSeconds"] = 0 if direction == "scaleUp" else 300  # Kubernetes' defaults
        d.update(behavior.get(direction, {}))
        out[direction] = d
    return out, path


def _rate_limit(pol, events, t, replicas, up):
    """The furthest count the rate policies allow: per policy, from the count at the start of its
    period (the current count less what was added, or plus what was removed, within periodSeconds)."""
    select = pol.get("selectPolicy", "Max")
    if select == "Disabled":
        return replicas
    limits = []
    for p in pol.get("policies", []):
        changed = sum(abs(a - b) for tt, b, a in events if tt > t - p["periodSeconds"] + 1e-9 and (a > b) == up)
        start = replicas - changed if up else replicas + changed
        if p["type"] == "Pods":
            limits.append(start + p["value"] if up else start - p["value"])
        elif p["type"] == "Percent":
            limits.append(math.ceil(start * (1 + p["value"] / 100)) if up else math.floor(start * (1 - p["value"] / 100)))
        else:
            raise ValueError(f"unknown scaling policy type {p['type']!r}")
    if not limits:
        return math.inf if up else -math.inf
    most = select != "Min"  # Max: the policy allowing the largest change
    if up:
        return max(limits) if most else min(limits)
    return min(limits) if most else max(limits)


def replay(values_at, hpa, duration_s, start_replicas=None, sync_s=SYNC_PERIOD_S, tolerance=TOLERANCE):
    """Runs the HPA loop for duration_s seconds of cluster time.

    values_at(t, replicas) -> the per-pod metric average the HPA would read at time t when the
    workload runs `replicas` pods (the caller's model of the workload). hpa: load_hpa()'s settings,
    with "target" the desiredMetricValue in the metric's units. Returns [(t, replicas, value read,
    raw recommendation)] at every sync, replicas being the count after that sync's decision."""
    lo, hi = hpa["minReplicas"], hpa["maxReplicas"]
    replicas = max(lo, min(hi, start_replicas if start_replicas is not None else lo))
    recs = []     # (t, raw recommendation) for the stabilization windows
    events = []   # (t, replicas before, replicas after) for the rate policies
    out = []
    t = 0.0
    while t <= duration_s + 1e-9:
        value = values_at(t, replicas)
        ratio = value / hpa["target"]
        rec = replicas if abs(ratio - 1.0) <= tolerance else math.ceil(replicas * ratio - 1e-9)
        recs.append((t, rec))
        up_w = hpa["scaleUp"]["stabilizationWindowSeconds"]
        down_w = hpa["scaleDown"]["stabilizationWindowSeconds"]
        up_rec = min(r for tt, r in recs if tt > t - up_w + 1e-9) if up_w > 0 else rec
        down_rec = max(r for tt, r in recs if tt > t - down_w + 1e-9) if down_w > 0 else rec
        # Windows are (t - window, t], as the controller keeps recommendations newer than now - window.
        # Stabilized: never above the lowest recent (up) nor below the highest recent (down).
        desired = replicas
        if rec > replicas:
            desired = max(replicas, up_rec)
        elif rec < replicas:
            desired = min(replicas, down_rec)
        if desired > replicas:
            desired = min(desired, _rate_limit(hpa["scaleUp"], events, t, replicas, True))
        elif desired < replicas:
            desired = max(desired, _rate_limit(hpa["scaleDown"], events, t, replicas, False))
        desired = max(lo, min(hi, desired))
        if desired != replicas:
            events.append((t, replicas, desired))
        replicas = desired
        out.append((t, replicas, value, rec))
        recs = [(tt, r) for tt, r in recs if tt > t - max(up_w, down_w, 0) - 1e-9]
        t += sync_s
    return out
