"""Remote environments the operator registered: their classes, made once per process.

A registration (:class:`RemoteSpec`: a name, the server's URL, the protocol, a token) becomes
an environment class like any other in the registry (:func:`install`), under the registered
name, which a task then names as its ``environment`` (a registered name hides a built-in or
plug-in of the same name). The URL passes the outbound address policy when it is registered
(the name resolved and every address checked: a refusal stops the process from starting) and
again before every request (:mod:`adapt.envs.remote.transport`).

The class of a server of adapt's protocol is made from its ``GET /v1/environment``, read when
the class is first needed (the process's start-up reads it ahead when it can); a server that
does not answer leaves the environment unavailable for now (asked again at most every
``RETRY_METADATA_SECONDS``), never the process. An AgentGym server's class comes from its
family (:mod:`adapt.envs.remote.agentgym`) and needs no request.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel, SecretStr

from adapt.envs import registry
from adapt.envs.base import Environment
from adapt.envs.remote import protocol as wire
from adapt.envs.remote.agentgym import AgentGymEnvironment, family
from adapt.envs.remote.client import DeclaresToolsRemotely, RemoteEnvironment, VerifiesRemotely
from adapt.envs.remote.config_schema import config_model
from adapt.envs.remote.transport import CallLimits, Transport
from adapt.errors import EnvironmentUnavailable, RemoteEnvironmentError, UserError
from adapt.net.policy import OutboundPolicy

log = logging.getLogger(__name__)

#: seconds before a server whose metadata could not be read is asked again
RETRY_METADATA_SECONDS = 5.0
#: seconds one quick try for the metadata may take (``load(wait=False)``: the API, listings)
QUICK_TIMEOUT = 5.0
SETTING = "ADAPT_REMOTE_ENVIRONMENTS"
NETWORKS_SETTING = "ADAPT_REMOTE_ENVIRONMENT_ALLOWED_NETWORKS"


@dataclass(frozen=True)
class RemoteSpec:
    """One registration: environment ``name`` is served at ``url``."""

    name: str
    url: str
    protocol: Literal["adapt", "agentgym"] = "adapt"
    token: str | None = None
    #: AgentGym only: which family of server it is (default: the name)
    family: str | None = None


def remote_policy(allowed: Sequence[str] = ()) -> OutboundPolicy:
    """The outbound address policy for environment servers; ``allowed``: the operator's
    ``ADAPT_REMOTE_ENVIRONMENT_ALLOWED_NETWORKS``."""
    return OutboundPolicy(tuple(allowed), subject="remote environment URL",
                          feature="remote environments", setting=NETWORKS_SETTING,
                          docs="docs/remote-environments.md")


def remote_class(name: str, transport: Transport,
                 meta: wire.EnvironmentMeta) -> type[RemoteEnvironment]:
    """The environment class of a server of adapt's protocol, from its metadata."""
    if meta.protocol != wire.PROTOCOL_VERSION:
        raise RemoteEnvironmentError(
            f"remote environment {name!r}: the server speaks protocol version {meta.protocol}, "
            f"this client version {wire.PROTOCOL_VERSION}")
    bases: list[type] = []
    if meta.verifies:
        bases.append(VerifiesRemotely)
    if meta.declares_tools:
        bases.append(DeclaresToolsRemotely)
    attributes: dict[str, Any] = {
        "name": name, "description": meta.description or f"served at {transport.host}",
        "config_model": config_model(name, meta.config_schema),
        "default_max_steps": meta.default_max_steps,
        "action_grammar": meta.action_grammar or "(see the task)",
        "state_fields": tuple(meta.state_fields), "success_reward": meta.success_reward,
        "final_action": meta.final_action, "paper_profile": dict(meta.paper_profile),
        "transport": transport, "meta": meta, "__module__": __name__,
    }
    if meta.answer_action is not None:
        attributes["answer_action"] = meta.answer_action
    title = "".join(p.title() for p in name.replace("-", "_").split("_") if p)
    return type(f"Remote{title}", (*bases, RemoteEnvironment), attributes)


def agentgym_class(name: str, transport: Transport,
                   family_name: str | None = None) -> type[AgentGymEnvironment]:
    """The environment class of an AgentGym server of family ``family_name`` (default:
    ``name``)."""
    known = family(family_name or name)
    title = "".join(p.title() for p in name.replace("-", "_").split("_") if p)
    return type(f"AgentGym{title}", (AgentGymEnvironment,), {
        "name": name, "description": known.description, "family": known,
        "default_max_steps": known.default_max_steps, "action_grammar": known.action_grammar,
        "state_fields": known.state_fields, "success_reward": known.success_reward,
        "prompt_package": known.prompt_package, "transport": transport,
        "reset_lock": threading.Lock(), "__module__": __name__,
    })


class RemoteLoader:
    """Makes (once) and keeps the class of one registration."""

    def __init__(self, spec: RemoteSpec, policy: OutboundPolicy, limits: CallLimits) -> None:
        self.spec = spec
        self.transport = Transport(spec.name, spec.url, policy, token=spec.token,
                                   limits=limits)
        self._class: type[Environment] | None = None
        self._failed: tuple[float, Exception] | None = None
        self._lock = threading.Lock()
        if spec.protocol == "agentgym":
            self._class = agentgym_class(spec.name, self.transport, spec.family)

    def loaded(self) -> type[Environment] | None:
        return self._class

    def load(self, *, wait: bool = True) -> type[Environment]:
        """The class; a server that does not answer raises
        :class:`~adapt.errors.EnvironmentUnavailable` (``wait=False``: after one try, and
        again without a request for the next few seconds)."""
        with self._lock:
            if self._class is not None:
                return self._class
            if self._failed is not None and not wait:
                at, error = self._failed
                if time.monotonic() - at < RETRY_METADATA_SECONDS:
                    raise error
            transport = self.transport
            if not wait:
                transport = Transport(self.spec.name, self.spec.url, transport.policy,
                                      token=self.spec.token,
                                      limits=replace(transport.limits, retry_seconds=0.0,
                                                     timeout=min(transport.limits.timeout,
                                                                 QUICK_TIMEOUT)))
            try:
                data = transport.call("GET", f"{wire.PREFIX}/environment")
                try:
                    meta = wire.EnvironmentMeta.model_validate(data)
                except ValueError:
                    raise RemoteEnvironmentError(
                        f"remote environment {self.spec.name!r}: the server's metadata does "
                        "not follow adapt's environment protocol") from None
                made = remote_class(self.spec.name, self.transport, meta)
            except (EnvironmentUnavailable, RemoteEnvironmentError) as exc:
                self._failed = (time.monotonic(), exc)
                raise
            finally:
                if transport is not self.transport:
                    transport.close()
            self._class, self._failed = made, None
            log.info("remote environment %r at %s: %s", self.spec.name, self.spec.url,
                     meta.description or meta.name)
            return made


def check_registrations(specs: Iterable[RemoteSpec], policy: OutboundPolicy) -> None:
    """Refuse (``OutboundRefused``, a ``UserError``) a registration whose URL the policy
    refuses, its name resolved; or whose protocol or family is unknown."""
    for spec in specs:
        if not spec.name or not spec.name.strip():
            raise UserError(f"{SETTING}: an environment name is empty")
        if spec.protocol == "agentgym":
            family(spec.family or spec.name)
        elif spec.family is not None:
            raise UserError(f"{SETTING}: {spec.name!r}: family is for protocol 'agentgym' only")
        policy.resolve_and_check(spec.url)


def install(specs: Iterable[RemoteSpec], policy: OutboundPolicy,
            limits: CallLimits | None = None) -> None:
    """Register ``specs`` in the process's environment registry (replacing the remote
    environments registered before; an unchanged registration keeps its class)."""
    specs = list(specs)
    check_registrations(specs, policy)
    limits = limits or CallLimits()
    current = registry.remote_entries()
    loaders: dict[str, RemoteLoader] = {}
    for spec in specs:
        old = current.get(spec.name)
        if (isinstance(old, RemoteLoader) and old.spec == spec
                and old.transport.policy == policy and old.transport.limits == limits):
            loaders[spec.name] = old
        else:
            loaders[spec.name] = RemoteLoader(spec, policy, limits)
    registry.set_remote(loaders)


def prefetch() -> list[str]:
    """Read the metadata of every registered server not read yet (one try each); returns the
    names that did not answer (logged)."""
    missing = []
    for name, entry in registry.remote_entries().items():
        try:
            entry.load(wait=False)
        except (EnvironmentUnavailable, RemoteEnvironmentError) as exc:
            log.warning("remote environment %r is not available yet: %s", name, exc)
            missing.append(name)
    return missing


def settings_specs(settings: dict[str, Any]) -> list[RemoteSpec]:
    """:class:`RemoteSpec` s of a parsed ``ADAPT_REMOTE_ENVIRONMENTS`` object (name -> fields
    ``url``, ``protocol``, ``token``, ``family``)."""
    out = []
    for name, fields in settings.items():
        data = fields.model_dump() if isinstance(fields, BaseModel) else dict(fields)
        token = data.get("token")
        secret = token.get_secret_value() if isinstance(token, SecretStr) else token
        out.append(RemoteSpec(name=name, url=str(data["url"]),
                              protocol=data.get("protocol") or "adapt",
                              token=secret or None, family=data.get("family")))
    return out


__all__ = ["NETWORKS_SETTING", "SETTING", "RemoteLoader", "RemoteSpec", "agentgym_class",
           "check_registrations", "install", "prefetch", "remote_class", "remote_policy",
           "settings_specs"]
