"""The autoscaling signal (issue 17): under a load ramp, the in-flight and queue metrics an HPA
scales on rise with load and fall back when it falls (bench/autoscale_signal.py --fast, one real
server), and the HPA replay (bench/hpa_replay.py) follows Kubernetes' documented algorithm on
hand-computed cases.

Usage: test_autoscale_signal.py --inferloop build/inferloop
"""
import math
import os
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import autoscale_signal  # noqa: E402
import hpa_replay  # noqa: E402
from serve_harness import run_tests  # noqa: E402

INFERLOOP = None


def settings(min_r=2, max_r=10, target=4.0, up_window=0, down_window=120, up_policies=None, down_policies=None):
    h = dict(hpa_replay.CONTRACT_BEHAVIOR, minReplicas=min_r, maxReplicas=max_r, target=target)
    h["scaleUp"] = dict(h["scaleUp"], stabilizationWindowSeconds=up_window)
    h["scaleDown"] = dict(h["scaleDown"], stabilizationWindowSeconds=down_window)
    if up_policies is not None:
        h["scaleUp"]["policies"] = up_policies
    if down_policies is not None:
        h["scaleDown"]["policies"] = down_policies
    return h


def counts(run):
    return [r for _, r, *_ in run]


class TestHpaReplay(unittest.TestCase):
    """Cases computed by hand from https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/."""

    def test_formula_ceil(self):
        # 3 pods at 5 per pod, target 4: ceil(3 * 5 / 4) = ceil(3.75) = 4.
        run = hpa_replay.replay(lambda t, n: 15 / n, settings(min_r=3), 0)
        self.assertEqual(run[0][1], 4)
        self.assertEqual(run[0][3], 4)

    def test_tolerance_band(self):
        # Ratio 4.36 / 4 = 1.09: inside the 0.1 tolerance, no change; 4.5 / 4 = 1.125: ceil(4 * 1.125) = 5.
        self.assertEqual(hpa_replay.replay(lambda t, n: 4.36, settings(min_r=4), 0)[0][1], 4)
        self.assertEqual(hpa_replay.replay(lambda t, n: 4.5, settings(min_r=4), 0)[0][1], 5)
        # Ratio 3.64 / 4 = 0.91: inside, stays 4; 3.0 / 4 = 0.75: ceil(4 * 0.75) = 3.
        self.assertEqual(hpa_replay.replay(lambda t, n: 3.64, settings(min_r=1, down_window=0), 0, start_replicas=4)[0][1], 4)
        self.assertEqual(hpa_replay.replay(lambda t, n: 3.0, settings(min_r=1, down_window=0), 0, start_replicas=4)[0][1], 3)

    def test_min_max_clamps(self):
        # 2 pods at 40 each: ceil(2 * 10) = 20, the scale-up policies allow max(2 * 2, 2 + 4) = 6, then 12 -> max 10.
        run = hpa_replay.replay(lambda t, n: 80 / n, settings(), 15)
        self.assertEqual(counts(run), [6, 10])
        # Nothing in flight: recommendation 0, clamped to the minimum 2.
        run = hpa_replay.replay(lambda t, n: 0.0, settings(down_window=0), 0, start_replicas=5)
        self.assertEqual(run[0][3], 0)
        self.assertEqual(run[0][1], 2)

    def test_scale_down_window_takes_the_highest_recommendation(self):
        # Total load 32 until t=30, then 8, target 4, window 60 s: recommendations 8 (t=0,15,30 at
        # 8 pods), then 2 from t=45; scale-down waits until every recommendation in the last 60 s is
        # below 8: at t=45 and t=60 the max over (t-60, t] still holds 8 (t=15, 30 -> until t=90).
        run = hpa_replay.replay(lambda t, n: (32 if t <= 30 else 8) / n, settings(down_window=60), 120,
                                start_replicas=8)
        self.assertEqual(counts(run), [8, 8, 8, 8, 8, 8, 2, 2, 2])
        # Window 30 s, total load 32, 16, then 8 from t=30, at 8 pods: t=0 ratio 1 -> rec 8; t=15 ratio
        # 0.5 -> rec 4, max over (-15, 15] = 8: stays; t=30 ratio 0.25 -> rec 2, max over (0, 30] = 4 -> 4
        # (the highest recommendation, not the newest); t=45 at 4 pods ratio 0.5 -> rec 2, (15, 45] -> 2.
        loads = {0: 32, 15: 16}
        run = hpa_replay.replay(lambda t, n: loads.get(t, 8) / n, settings(down_window=30), 45, start_replicas=8)
        self.assertEqual(counts(run), [8, 8, 4, 2])
        self.assertEqual([rec for *_, rec in run], [8, 4, 2, 2])

    def test_scale_up_rate_policy(self):
        # Only Pods 1 per 15 s: 2 -> 3 -> 4 whatever the load.
        h = settings(up_policies=[{"type": "Pods", "value": 1, "periodSeconds": 15}])
        self.assertEqual(counts(hpa_replay.replay(lambda t, n: 100.0, h, 30)), [3, 4, 5])
        # Percent 50 per 60 s: 2 -> ceil(2 * 1.5) = 3 at t=0; no more while that step is inside the last
        # 60 s (t=15..45: period start 3 - 1 = 2, limit 3); at t=60 it is out: ceil(3 * 1.5) = 5.
        h = settings(up_policies=[{"type": "Percent", "value": 50, "periodSeconds": 60}])
        self.assertEqual(counts(hpa_replay.replay(lambda t, n: 100.0, h, 60)), [3, 3, 3, 3, 5])

    def test_reads_the_hpa_manifest(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "hpa.yaml")
            with open(p, "w") as f:
                f.write("apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: x}\nspec:\n"
                        "  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: x}\n"
                        "  minReplicas: 3\n  maxReplicas: 7\n  metrics:\n  - type: Pods\n    pods:\n"
                        "      metric: {name: inferloop_inflight_requests}\n"
                        "      target: {type: AverageValue, averageValue: \"2500m\"}\n"
                        "  behavior:\n    scaleDown: {stabilizationWindowSeconds: 90}\n")
            h, source = hpa_replay.load_hpa(p)
            self.assertEqual(source, p)
            self.assertEqual((h["minReplicas"], h["maxReplicas"], h["target"]), (3, 7, 2.5))
            self.assertEqual(h["scaleDown"]["stabilizationWindowSeconds"], 90)
            self.assertEqual(h["scaleUp"]["stabilizationWindowSeconds"], 0)
            with open(p, "w") as f:
                f.write("kind: Deployment\n")
            with self.assertRaisesRegex(ValueError, "no HorizontalPodAutoscaler"):
                hpa_replay.load_hpa(p)


class TestSignalUnderLoad(unittest.TestCase):
    """One server, the fast ramp (low, high, low) of bench/autoscale_signal.py."""

    @classmethod
    def setUpClass(cls):
        with tempfile.TemporaryDirectory() as d:
            cls.rec = autoscale_signal.record(INFERLOOP, d, fast=True)
        cls.ph = autoscale_signal.phases(cls.rec)
        for p in cls.ph:
            print(f"\n  step {p['step']} offered {p['multiple']}x ({p['rate']:.1f} req/s): in-flight {p['inflight']:.2f} "
                  f"queue {p['queue']:.2f} CPU {p['cpu']:.0%}; client X {p['X']:.1f} req/s, W {p['W'] * 1000:.1f} ms, "
                  f"X*W {p['X'] * p['W']:.2f}, failed {p['failed']}", file=sys.stderr)

    def test_signal_rises_and_falls_with_load(self):
        low1, high, low2 = self.ph
        for p in self.ph:
            self.assertGreater(p["samples"], 2, p)
            self.assertGreater(p["X"], 0, p)
        # Little's law per phase: L = X * W. Queueing only adds waiting, so W_high >= W_low, hence
        # L_high >= L_low * X_high / X_low: the high phase's mean in-flight must exceed each low
        # phase's by at least the ratio of the throughputs the client measured.
        for low in (low1, low2):
            self.assertGreater(high["inflight"], low["inflight"] * high["X"] / low["X"], (low, high))
            self.assertGreater(high["queue"], low["queue"], (low, high))
        # Offered 1.5x capacity: the pod is saturated and its bounded queue sheds the excess.
        self.assertGreater(high["failed"], 0, high)
        self.assertEqual(low2["failed"], 0, low2)

    def test_replay_and_plot(self):
        hpa = settings()
        replays = {}
        for name, profile in autoscale_signal.PROFILES.items():
            with self.subTest(profile=name):
                runs, targets, curves, _ = autoscale_signal.replay_signals(self.rec, hpa, profile)
                for key, run in runs.items():
                    self.assertTrue(all(hpa["minReplicas"] <= r <= hpa["maxReplicas"] for r in counts(run)), key)
                # The in-flight HPA scales above the minimum at the fleet's peak (6 pods' capacity over 2).
                self.assertGreater(max(counts(runs["inflight"])), hpa["minReplicas"])
                # ... and is back at the minimum at the end, after the scale-down window.
                self.assertEqual(counts(runs["inflight"])[-1], hpa["minReplicas"])
                rows, info = autoscale_signal.timing_table(runs, self.rec, hpa, profile)
                replays[name] = (profile, runs, info)
                print(autoscale_signal.replay_report(name, profile, rows, info), file=sys.stderr)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "a.svg")
            autoscale_signal.plot(path, self.rec, replays, targets, hpa)
            root = ET.parse(path).getroot()
            self.assertTrue(root.tag.endswith("svg"))
            self.assertGreaterEqual(len(root.findall(".//{http://www.w3.org/2000/svg}polyline")), 8)
        print(autoscale_signal.recording_report(self.rec, self.ph, targets, "test settings"), file=sys.stderr)


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = os.path.abspath(path)


if __name__ == "__main__":
    run_tests(set_inferloop)
