"""ALFWorld's commands as tools (``adapt.envs.tools``): one tool per verb, each standing for
the command the text executors write (``put`` is ``move X to Y``, as the engine spells it)."""

from __future__ import annotations

from adapt.envs.tools import ActionTool, ToolSpec, arguments, one_line

_OBJECT = one_line("An object as the observations name it, e.g. mug 1.")
_RECEPTACLE = one_line("A receptacle as the observations name it, e.g. countertop 1.")


def _on(name: str, description: str, what: str, template: str) -> ActionTool:
    field = _OBJECT if what == "object" else _RECEPTACLE
    example = "mug 1" if what == "object" else "countertop 1"
    return ActionTool(ToolSpec(name, description, arguments({what: field},
                                                            examples=[{what: example}])),
                      template)


def _with(name: str, description: str, tool: str) -> ActionTool:
    return ActionTool(ToolSpec(name, description, arguments(
        {"object": _OBJECT, "receptacle": one_line(f"The {tool}, e.g. {tool} 1.")},
        examples=[{"object": "mug 1", "receptacle": f"{tool} 1"}])),
        f"{name} {{object}} with {{receptacle}}")


TOOLS: tuple[ActionTool, ...] = (
    _on("go_to", "Go to a receptacle.", "receptacle", "go to {receptacle}"),
    _on("open", "Open a receptacle (a fridge, a drawer, ...).", "receptacle",
        "open {receptacle}"),
    _on("close", "Close a receptacle.", "receptacle", "close {receptacle}"),
    ActionTool(ToolSpec("take", "Take an object from the receptacle it is in or on.",
                        arguments({"object": _OBJECT, "receptacle": _RECEPTACLE},
                                  examples=[{"object": "mug 1",
                                             "receptacle": "countertop 1"}])),
               "take {object} from {receptacle}"),
    ActionTool(ToolSpec("put", "Put the object held in or on a receptacle.",
                        arguments({"object": _OBJECT, "receptacle": _RECEPTACLE},
                                  examples=[{"object": "mug 1",
                                             "receptacle": "countertop 1"}])),
               "move {object} to {receptacle}"),
    _with("clean", "Clean the object held with a sink basin.", "sinkbasin"),
    _with("heat", "Heat the object held with a microwave.", "microwave"),
    _with("cool", "Cool the object held with a fridge.", "fridge"),
    _on("use", "Turn a desk lamp or floor lamp on.", "object", "use {object}"),
    ActionTool(ToolSpec("examine", "Look closely at an object or a receptacle.",
                        arguments({"target": one_line("What to examine, e.g. desk 1.")},
                                  examples=[{"target": "desk 1"}]),
                        read_only=True, idempotent=True), "examine {target}"),
    ActionTool(ToolSpec("look", "Describe the surroundings.", arguments({}), read_only=True,
                        idempotent=True), "look"),
    ActionTool(ToolSpec("inventory", "List what is held.", arguments({}), read_only=True,
                        idempotent=True), "inventory"),
)
