"""Declarative agent behaviour specifications and the decoding monitor.

``Spec.parse(text)`` reads the paper's s-expression form or YAML; ``Spec.builtin("react")``
(also rewoo, reflexion, cot, direct, pass) loads a shipped agent; ``Monitor(spec).check(text)``
validates text and gives the correction. See docs/agent-specs.md.
"""

from adapt.engine.spec.model import BUILTINS, Op, Spec, StateDef, available_builtins, load_spec
from adapt.engine.spec.monitor import CheckResult, Monitor, common_prefix
from adapt.errors import SpecSyntaxError

__all__ = ["BUILTINS", "CheckResult", "Monitor", "Op", "Spec", "SpecSyntaxError", "StateDef",
           "available_builtins", "common_prefix", "load_spec"]
