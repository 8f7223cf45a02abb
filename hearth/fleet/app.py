"""The Celery app both roles use: the hub sends with it, a worker consumes with it.

Delivered once, as the fleet promises: a worker acknowledges a request only when its run has ended
(`task_acks_late`), takes one at a time from the broker per slot (`worker_prefetch_multiplier` 1),
and the broker hands a taken request out again only after the visibility timeout, set beyond the
longest run. A request handed out again after its worker died is caught at the hub (its claim is
refused, hearth/remote/hub.py), so it is never run twice. Results are not kept: the audit is the
record.
"""

from __future__ import annotations

from typing import Any

from hearth.fleet.config import FleetConfig


def celery_app(config: FleetConfig) -> Any:
    from celery import Celery

    app = Celery("hearth", broker=config.broker, set_as_current=False)
    # a broker that does not answer is known within seconds, not after the kernel's connect timeout
    transport: dict[str, Any] = {"visibility_timeout": config.visibility_s, "socket_connect_timeout": 5}
    if config.visibility_s < 100:  # kombu looks for requests to hand out again every ~100 s by default
        transport.update(unacked_restore_interval=max(1, int(config.visibility_s / 2)), unacked_restore_throttle=1)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        # a run goes on while the broker restarts: its request, handed out again meanwhile, is refused
        # at the hub's claim (hearth/remote/hub.py), so it is not cancelled to be run again
        worker_cancel_long_running_tasks_on_connection_loss=False,
        task_acks_on_failure_or_timeout=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        task_default_queue="general",
        task_create_missing_queues=True,
        broker_transport_options=transport,
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        task_serializer="json",
        accept_content=["json"],
        enable_utc=True,
    )
    if config.broker.startswith("rediss://"):  # TLS to the broker, its certificate checked
        import ssl

        app.conf.broker_use_ssl = {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    return app
