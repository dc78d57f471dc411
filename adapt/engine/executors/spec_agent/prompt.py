"""The prompt of a spec agent (executor kind ``spec``): instructions from the spec's states,
the environment's actions, matching few-shot examples, then the trace.

The examples come from the environment's optional ``spec_examples_<agent>`` template (e.g.
``spec_examples_pass``), else its ``spec_examples`` template: traces separated by blank lines.
Of a shared ``spec_examples`` file an agent sees only the traces its behaviour accepts, and of
those, when some use every one of its states, only those (so one file serves ReAct, PASS,
ReWOO, ... without showing an agent another agent's format).
"""

from __future__ import annotations

import re

from adapt.engine.spec.model import Spec, format_formula
from adapt.engine.spec.monitor import Monitor
from adapt.envs.base import Environment, answer_action

EXAMPLES = "spec_examples"


def agent_key(spec: Spec) -> str:
    """``react-agent`` -> ``react`` (the suffix of the shipped agents' names dropped)."""
    return spec.name.removesuffix("-agent")


def neutralize(monitor: Monitor, text: str) -> str:
    """``text`` (from the task or the environment) with anything that looks like a state prompt
    defused, so it cannot be mistaken for a state change: ``[Thought]`` -> ``(Thought)``; a
    prompt without brackets gets a word joiner after its first character."""
    spec = monitor.spec
    patterns = [re.escape(s.text) for s in spec.states]
    if spec.invented_marker is not None:
        patterns.append(spec.invented_marker.pattern)
    pattern = re.compile("|".join(f"(?:{p})" for p in patterns))

    def defuse(match: re.Match[str]) -> str:
        found = match.group(0)
        if found.startswith("[") and found.endswith("]"):
            return "(" + found[1:-1] + ")"
        return found[:1] + "\u2060" + found[1:]

    return pattern.sub(defuse, text)


def select_examples(monitor: Monitor, text: str) -> list[str]:
    """The example traces in ``text`` (blank-line separated) that ``monitor``'s spec accepts;
    those using every state when there are any."""
    blocks = [b.strip() for b in re.split(r"\n\s*\n", text) if b.strip()]
    accepted = []
    for block in blocks:
        check = monitor.check(block, final=True)
        if check.valid and check.complete:
            accepted.append((block, set(check.states)))
    names = {s.name for s in monitor.spec.states}
    full = [b for b, used in accepted if used == names]
    return full or [b for b, _ in accepted]


def examples_for(env: Environment, monitor: Monitor) -> list[str]:
    for kind in (f"{EXAMPLES}_{agent_key(monitor.spec)}", EXAMPLES):
        try:
            text = env.prompt_template(kind)
        except KeyError:
            continue
        return select_examples(monitor, text)
    return []


def instructions(spec: Spec, env: Environment, *, checkable: bool) -> str:
    """What the agent is told before the examples: its states, their order, the actions."""
    first = spec.fsm.next_names(spec.fsm.start)
    lines = ["You solve the task below by writing a trace of states. Each state starts with its "
             "prompt on a new line, followed by its text:"]
    for s in spec.states:
        doc = s.doc or s.name
        if s.name in first:
            doc += " (given)"
        elif s.env_input:
            doc += " (supplied for you: stop before it and never write it yourself)"
        lines.append(f"{s.text} {doc}")
    legend = ", ".join(f"{s.name} = {s.text}" for s in spec.states)
    lines.append(f"The states follow this order ({legend}; next: in sequence, until a b: a "
                 f"repeated until b, or: any one): {format_formula(spec.behavior)}")
    names = {s.name for s in spec.states}
    if {"Act", "Act-Inp"} <= names:
        lines.append("")
        lines.append(f"Write the name of an action after {spec.state('Act').text} and its "
                     f"argument after {spec.state('Act-Inp').text}; together they make the "
                     "action that is run. The actions:")
        lines.append(env.action_grammar.strip())
    description = env.description.strip()
    if description:
        lines[:0] = [f"Environment: {description}", ""]
    lines.append("")
    lines.append(answer_instruction(env, checkable=checkable))
    return "\n".join(lines)


def answer_instruction(env: Environment, *, checkable: bool) -> str:
    """How to write the final answer: just the answer when the environment checks it, else a
    self-assessment (``Task completed!`` / ``Task failed!``)."""
    answer = answer_action(env)
    if checkable and answer:
        return (f"Your final answer is checked (as the action '{answer} <your answer>'): write "
                "only the answer.")
    return ("In your final answer, give the result and end with 'Task completed!' when the task "
            "is done, or 'Task failed!' if you cannot do it.")


def header(spec: Spec, env: Environment, monitor: Monitor, *, checkable: bool) -> str:
    parts = [instructions(spec, env, checkable=checkable)]
    examples = examples_for(env, monitor)
    if examples:
        parts.append("Examples:\n\n" + "\n\n".join(examples))
    parts.append("Now your task.\n")
    return "\n\n".join(parts)
