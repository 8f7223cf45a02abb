"""The command center (`hearth serve`): a web page to launch, watch, approve, replay and review runs.

    app.py        create_app(config): the walls, the live map and the routes wired together
    config.py     where it listens, its tokens, the Host names it answers to
    security.py   Host, identity (session cookie or bearer token), roles, Origin, CSRF, headers
    reader.py     the audit through a read-only connection, paged in SQL
    live.py       the live map's snapshot and its server-sent events
    pages.py      Jinja2 (autoescaped) and its filters; charts.py the SVG charts; diff.py diffs
    metrics.py    /metrics from the audit; routes/ one module per area, page and /api twin

It reads the audit and the live state; it changes things only through the appliance's own
functions: hearth.queue.submit (launch), hearth.leash.decisions.decide, hearth.dispatch.stop.
"""
