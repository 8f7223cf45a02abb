"""What a run's walls kept and saw: workspace checkpoints (`checkpoints`), the connections its
commands made through the run's proxy (`connections`) and the decoys touched (`tripwires`). Every
statement on them: `WallRows` is the AuditStore's part a run writes them through; the reads
below serve the report, the security page and the run page."""

from __future__ import annotations

from typing import Any

from hearth.audit.rows import Rows, Writer, newest


class WallRows:
    def record_checkpoint(self: Writer, run_id: str, **fields: Any) -> None:
        self.insert("checkpoints", {"run_id": run_id, "at": self.clock(), **fields})

    def checkpoints(self: Writer, run_id: str) -> list[dict[str, Any]]:
        return checkpoints_of(self, run_id)

    def record_connection(self: Writer, run_id: str, **fields: Any) -> None:
        self.insert("connections", {"run_id": run_id, "at": self.clock(), **fields})

    def connections(self: Writer, run_id: str) -> list[dict[str, Any]]:
        return self.rows("select * from connections where run_id = ? order by id", [run_id])

    def record_tripwire(self: Writer, run_id: str, **fields: Any) -> None:
        self.insert("tripwires", {"run_id": run_id, "at": self.clock(), **fields})

    def tripwires(self: Writer, run_id: str) -> list[dict[str, Any]]:
        return self.rows("select * from tripwires where run_id = ? order by id", [run_id])


def checkpoints_of(db: Rows, run_id: str) -> list[dict[str, Any]]:
    """A run's checkpoints, oldest first."""
    return db.rows("select * from checkpoints where run_id = ? order by id", [run_id])


def latest_connections(db: Rows, run: str, limit: int, *, refused_only: bool = False) -> list[dict[str, Any]]:
    """The latest connections (of one run, or every run's when `run` is ''), newest first."""
    select = "select id, run_id, at, host, port, method, allowed, reason, bytes_up, bytes_down from connections"
    return newest(db, select + (" where allowed = 0" if refused_only else " where 1 = 1"), run, limit)


def hosts(db: Rows, run: str, limit: int) -> list[dict[str, Any]]:
    """Per host and port: connections, allowed, refused, runs and the last time; most refused first."""
    clause, params = (" and run_id = ?", [run]) if run else ("", [])
    return db.rows(
        "select host, port, count(*) as connections, sum(allowed) as allowed, count(*) - sum(allowed) as refused,"
        f" count(distinct run_id) as runs, max(at) as last_at from connections where 1 = 1{clause}"
        " group by host, port order by refused desc, connections desc limit ?",
        [*params, limit],
    )


def latest_tripwires(db: Rows, run: str, limit: int) -> list[dict[str, Any]]:
    return newest(db, "select id, run_id, at, decoy, how, tool, action from tripwires where 1 = 1", run, limit)


def hosts_since(db: Rows, since: str) -> list[dict[str, Any]]:
    """Per host, from `since` on: connections, allowed, refused, bytes up and down; most first."""
    return db.rows(
        """select host, count(*) as connections, sum(allowed = 1) as allowed, sum(allowed = 0) as refused,
                  sum(bytes_up) as bytes_up, sum(bytes_down) as bytes_down
           from connections where at >= ? group by host order by connections desc, host""",
        [since],
    )


def tripwires_since(db: Rows, since: str) -> list[dict[str, Any]]:
    return db.rows("select * from tripwires where at >= ?", [since])
