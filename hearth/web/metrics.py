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
from hearth.dispatch.settle import settle_dead_runs
from hearth.report import active_runs
from hearth.web.config import WebConfig
from hearth.web.reader import Reader

BUCKETS_S = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600)
# A call recorded `started` has not finished: it waits for a person when its run has that call's
# approval pending, runs while its run goes on, and never ran when its run ended (as the run page says:
# hearth/web/steps.py). The audit keeps `started`; the scrape names what it means now.
# The finished calls are counted from the rollups (m200); the few still `started` are read live.
TOOL_VERDICTS = """select tool, verdict, sum(calls) as n from tool_rollup where verdict != 'started'
        group by tool, verdict having sum(calls) > 0
    union all
    select s.tool, case when exists (select 1 from approvals a
                                     where a.run_id = s.run_id and a.status = 'pending' and a.tool = s.tool)
            then 'waiting'
        when r.status in ('running', 'waiting', 'starting') then 'running'
        else 'not_run' end as verdict, count(*) as n
    from steps s left join runs r on r.id = s.run_id where s.verdict = 'started' and s.kind = 'tool' group by s.tool, 2"""


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
        sql = """select status, model, agent_name, sum(runs) as n from run_rollup
                 group by status, model, agent_name having sum(runs) > 0"""
        for row in self.reader.rows(sql):
            family.add_metric([row["status"] or "", row["model"] or "", row["agent_name"] or ""], row["n"])
        return family

    def _tools(self) -> Metric:
        family = CounterMetricFamily("hearth_tool_calls", "Tool calls, by tool and verdict", labels=["tool", "verdict"])
        sql = TOOL_VERDICTS
        for row in self.reader.rows(sql):
            family.add_metric([row["tool"] or "", row["verdict"] or ""], row["n"])
        return family

    def _tokens(self) -> Metric:
        family = CounterMetricFamily("hearth_tokens", "Model tokens, in (prompt) and out (reply)", labels=["direction"])
        row = (
            self.reader.one(
                "select coalesce(sum(tokens_in), 0) as i, coalesce(sum(tokens_out), 0) as o from run_rollup"
            )
            or {}
        )
        family.add_metric(["in"], row.get("i") or 0)
        family.add_metric(["out"], row.get("o") or 0)
        return family

    def _durations(self) -> Metric:
        # durations are kept rounded up to two significant figures, which leaves every bound exact
        cases = ", ".join(f"sum(case when value <= {b * 1000} then runs else 0 end) as b{b}" for b in BUCKETS_S)
        sql = f"select coalesce(sum(runs), 0) as n, {cases} from run_value_rollup where measure = 'duration_ms'"
        row = self.reader.one(sql) or {}
        total = self.reader.one("select coalesce(sum(duration_ms), 0) as total from run_rollup") or {}
        row["total"] = total.get("total") or 0
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
        for row in self.reader.rows(
            "select sandbox, sum(runs) as n from run_rollup where status != 'rejected' group by sandbox having sum(runs) > 0"
        ):
            family.add_metric([row["sandbox"] or "unknown"], row["n"])
        return family


def exposition(config: WebConfig, reader: Reader) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(AuditCollector(config, reader))
    return generate_latest(registry)
