"""The Reward Service's Prometheus metrics, on a registry of its own (one per app)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

# Seconds: from a loopback health check to a large batch of sandboxed code.
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)

FAILURE_CAUSES = (
    "unauthorized",
    "forbidden",
    "invalid_request",
    "too_large",
    "deadline",
    "contract",
    "composition",
    "provider",
    "preflight",
    "internal",
)


class ServiceMetrics:
    """Requests, rollouts, failures by cause, wait and score seconds, and what is in flight."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "rewardkit_requests",
            "HTTP requests answered, by endpoint and status code",
            ("endpoint", "code"),
            registry=self.registry,
        )
        self.rollouts = Counter(
            "rewardkit_rollouts", "rollouts scored, by endpoint", ("endpoint",), registry=self.registry
        )
        self.failures = Counter(
            "rewardkit_failures", "requests that failed, by cause", ("cause",), registry=self.registry
        )
        for cause in FAILURE_CAUSES:
            self.failures.labels(cause)
        self.wait_seconds = Histogram(
            "rewardkit_wait_seconds",
            "seconds a request waited for in-flight capacity",
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.score_seconds = Histogram(
            "rewardkit_score_seconds",
            "seconds spent scoring an admitted request",
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.inflight_rollouts = Gauge(
            "rewardkit_inflight_rollouts", "rollouts being scored now", registry=self.registry
        )
        self.waiting_requests = Gauge(
            "rewardkit_waiting_requests", "requests waiting for capacity", registry=self.registry
        )
        self.capacity = Gauge(
            "rewardkit_inflight_capacity_rollouts", "rewards.max_inflight", registry=self.registry
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
