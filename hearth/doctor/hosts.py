"""The doctor's check of several model hosts (router.toml's [[host]], HEARTH_MODEL_HOSTS): each host's kind,
host up or down with its models and what it has loaded, and each profile's model on at least one
host. Its own room beside host.py's single-server check, which it replaces when hosts are named.
"""

from __future__ import annotations

from agent.model.hosts import HostView, pulled_anywhere, survey
from agent.model.tags import resolve_tag
from hearth.doctor.finding import Finding
from hearth.doctor.host import kind_name, model_findings
from hearth.errors import ConfigError
from hearth.run.hosts import SURVEY_S, configured
from hearth.settings import Settings


def named_hosts(settings: Settings) -> bool:
    try:
        return bool(configured(settings))
    except ConfigError:
        return True  # check_hosts reports the broken file


def check_hosts(settings: Settings, models: dict[str, list[str]]) -> list[Finding]:
    """`models`: model name -> the profiles that use it."""
    try:
        hosts = configured(settings)
    except ConfigError as exc:
        return [Finding("ollama", "error", f"{exc}; runs use OLLAMA_HOST alone until it is fixed")]
    views = survey(hosts, SURVEY_S)
    found = [_host(view) for view in views]
    for model, users in sorted(models.items()):
        having = [v.host.name for v in views if v.up and resolve_tag(model, v.models)]
        if having:
            found.append(
                Finding("models", "ok", f"model {model} is on {', '.join(having)} (profiles: {', '.join(users)})")
            )
        else:
            found += model_findings({model: users}, pulled_anywhere(views), " on any host that is up")
    return found


def _host(view: HostView) -> Finding:
    where = f"{kind_name(view.host.kind)} host {view.host.name} ({view.host.written})"
    if not view.up:
        return Finding("ollama", "error", f"{where} does not answer: {view.why}; runs go to the other hosts")
    loaded = f", {len(view.loaded)} loaded ({view.vram / 2**30:.1f} GiB)" if view.loaded else ""
    return Finding("ollama", "ok", f"{where} answers with {len(view.models)} model(s){loaded}")
