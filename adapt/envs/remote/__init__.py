"""Environments served by another process, over HTTP: one ``Environment`` per transport.

- adapt's own protocol (:mod:`~adapt.envs.remote.protocol`; served by ``adapt env serve`` or by
  any program that speaks it, in any language): :class:`~adapt.envs.remote.client.RemoteEnvironment`;
- AgentGym's environment servers: :class:`~adapt.envs.remote.agentgym.AgentGymEnvironment`.

The operator registers them (``ADAPT_REMOTE_ENVIRONMENTS``; :mod:`~adapt.envs.remote.catalog`
puts them in the registry); every request goes through the outbound address policy
(:mod:`~adapt.envs.remote.transport`). Nothing here imports a web framework: the server side is
:mod:`adapt.envserve`.
"""

from adapt.envs.remote.agentgym import AgentGymConfig, AgentGymEnvironment, Family
from adapt.envs.remote.catalog import (
    RemoteLoader,
    RemoteSpec,
    install,
    prefetch,
    remote_policy,
)
from adapt.envs.remote.client import RemoteEnvironment
from adapt.envs.remote.transport import CallLimits, Transport

__all__ = ["AgentGymConfig", "AgentGymEnvironment", "CallLimits", "Family", "RemoteEnvironment",
           "RemoteLoader", "RemoteSpec", "Transport", "install", "prefetch", "remote_policy"]
