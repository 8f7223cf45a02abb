"""Roles: profiles that keep house (docs/roles.md).

A profile with `home = true` in its agent.toml is a role. Its runs work in its durable home under
the state directory instead of a fresh workspace, one run at a time, behind the same walls as any
run; with `heartbeat` it wakes on a schedule for one upkeep turn that continues its heartbeat
conversation, a strategic review when one is due.

    home.py       where a role lives, what a home holds (made from templates), the record's frontmatter
    switch.py     a role switched off and on (`enabled = false`, `hearth roles disable`)
    turns.py      one run of a role at a time: the others wait their turn
    admit.py      what admission asks of a role: its home as the workspace, refused while it is off
    runs.py       what the runner asks: the turn, the heartbeat conversation carried on, the review stamped
    heartbeat.py  a heartbeat: the prompt it takes, the request it queues, a sweep of every role

`hearth doctor` checks each role's contract in hearth/doctor/roles.py; the CLI is
hearth/cli/commands/roles.py (`hearth heartbeat`, `hearth roles`).
"""
