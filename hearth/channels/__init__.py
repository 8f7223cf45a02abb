"""Chat channels: hearth in the chat apps its users already have (Telegram first; e-mail is to follow).

    message.py   what arrives (Inbound) and how a button is written: the records every channel
                 speaks, a leaf
    seam.py      the Channel Protocol (receive, send, edit, answer), CHANNELS and channel_for:
                 adding a platform is one module and one row; its errors
    config.py    channels.toml: which channels run, their tokens (files or credentials), limits
    desk.py      what hearth does with what arrives, whatever the platform: who is talking
                 (the platform's sender id, mapped to a user; never the text), refusals,
                 commands, a conversation's runs and follow-ups, approvals by button
    follow.py    what goes out as runs progress: progress edits, the answer, approvals to those
                 who may decide them, deliveries tried until the platform acknowledges them
    service.py   `hearth channels`: each configured channel's receive and follow loops, backing
                 off when a platform cannot be reached, its state in the audit
    telegram.py  Telegram through python-telegram-bot (long polling: the box needs no public
                 address)

Every update is recorded before it is acted on, by the platform's own id, so a replay is acted on
once (hearth/audit/channels.py); nothing a stranger writes reaches a model.
"""
