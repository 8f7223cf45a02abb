"""Skills: instructions a run may load on demand, offered only after an eval says they help.

    skill.py     one skill directory: SKILL.md's frontmatter and body, its resources, its digest
    catalog.py   the skills a profile sees: the box's `skills/` and the profile's own (which shadows)
    state.py     each skill's state from its checks (offered, checking, failed, retired, ...)
    offer.py     what one run is offered: listed in its prompt, copied read-only for load_skill
    check.py     `hearth skills check`: the skill's eval suite with and without it, then the verdict
    learn.py     `hearth skills propose RUN`: a SKILL.md drafted from a run, as a proposal to accept

The checks live in the audit's `skill_checks` (hearth/audit/skills.py). A skill is offered only
while its last finished check passed on the very content it has now (its digest).
"""
