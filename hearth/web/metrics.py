"""/metrics in the Prometheus text format, computed from the audit on every scrape.

Nothing is counted in memory, so the numbers are right after a restart and agree with
`hearth report`: a collector reads the audit (read-only) and the queue each time it is asked.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from agent.clock import utc_now
from hearth.audit import rollups
from hearth.dispatch.settle import settle_dead_runs
from hearth.report import active_runs
from hearth.web.config import WebConfig
from hearth.web.reader import Reader

BUCKETS_S = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600)


class AuditCollector(Collector):
    def __init__(self, config: WebConfig, reader: Reader) -> None:
        self.config, self.reader = config, reader

    def collect(self) -> Iterator[Metric]:
        yield self._runs()
        yield self._tools()
        yield self._tokens()
        yield self._durations()
        yield from self._now()
        yield self._sandboxes()

    def _runs(self) -> Metric:
        family = CounterMetricFamily(
            "hearth_runs", "Runs recorded, by status, model and agent", labels=["status", "model", "agent"]
        )
        for row in rollups.runs_counted(self.reader):
            family.add_metric([row["status"] or "", row["model"] or "", row["agent_name"] or ""], row["n"])
        return family

    def _tools(self) -> Metric:
        family = CounterMetricFamily("hearth_tool_calls", "Tool calls, by tool and verdict", labels=["tool", "verdict"])
        # a call still `started` is named by what it means now: waiting, running or not_run
        for row in rollups.tool_verdicts(self.reader):
            family.add_metric([row["tool"] or "", row["verdict"] or ""], row["n"])
        return family

    def _tokens(self) -> Metric:
        family = CounterMetricFamily("hearth_tokens", "Model tokens, in (prompt) and out (reply)", labels=["direction"])
        counted = rollups.tokens(self.reader)
        family.add_metric(["in"], counted["in"])
        family.add_metric(["out"], counted["out"])
        return family

    def _durations(self) -> Metric:
        row = rollups.durations(self.reader, BUCKETS_S)
        buckets = [(str(float(b)), row.get(f"b{b}") or 0) for b in BUCKETS_S] + [("+Inf", row.get("n") or 0)]
        family = HistogramMetricFamily("hearth_run_duration_seconds", "How long finished runs took")
        family.add_metric([], buckets, sum_value=(row.get("total") or 0) / 1000)
        return family

    def _now(self) -> Iterator[Metric]:
        settle_dead_runs(self.config.settings)
        state = active_runs(self.config.settings)
        yield GaugeMetricFamily("hearth_queue_depth", "Requests waiting in the queue", value=state["queued_count"])
        yield GaugeMetricFamily("hearth_runs_active", "Runs claimed or running now", value=len(state["active"]))
        pending = len(self.reader.pending_approvals(utc_now()))
        yield GaugeMetricFamily("hearth_approvals_pending", "Approvals waiting for a decision", value=pending)

    def _sandboxes(self) -> Metric:
        family = CounterMetricFamily(
            "hearth_runs_by_sandbox", "Runs by the command sandbox they had", labels=["sandbox"]
        )
        for row in rollups.runs_by_sandbox(self.reader):
            family.add_metric([row["sandbox"] or "unknown"], row["n"])
        return family


def exposition(config: WebConfig, reader: Reader) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(AuditCollector(config, reader))
    return generate_latest(registry)
