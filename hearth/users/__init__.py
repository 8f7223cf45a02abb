"""hearth's users: who someone is (a name and a role), what they may do in which agent profile
(memberships), and the one check every door asks (access.py).

    access.py   User, `may`/`require`: the one place a door asks whether a user may launch, stop,
                approve, pause or manage; the users a token, a login or a platform's sender id is
    roster.py   `hearth users add|list|grant|revoke|disable|enable|rm|token|link|unlink`: the rows
                made and changed, each change refused with one line when it makes no sense
"""
