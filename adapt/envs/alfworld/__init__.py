"""ALFWorld on the real ALFWorld engine, offline (optional extra: ``pip install -e ".[alfworld]"``).

>>> from adapt.envs.alfworld import ALFWorld
>>> env = ALFWorld()
>>> observation = env.reset(seed=3, task_type="clean")
>>> for command in env.walkthrough():
...     result = env.step(command)
>>> result.done, result.reward
(True, 1.0)

Importing this package without the extra raises :class:`MissingExtra` (an ``ImportError``)
that says how to install it; the environment registry then leaves ``alfworld`` out with a
warning.
"""

from adapt.envs.alfworld.extra import INSTALL_HINT, MissingExtra, require

require()  # without the extra: MissingExtra, and the registry leaves alfworld out (a warning)

from adapt.envs.alfworld.assets import TASK_TYPES  # noqa: E402
from adapt.envs.alfworld.config import ALFWorldConfig  # noqa: E402
from adapt.envs.alfworld.env import ALFWorld  # noqa: E402
from adapt.envs.alfworld.game import Game  # noqa: E402
from adapt.envs.alfworld.games import GameRef, generated_set, load_game_file  # noqa: E402
from adapt.envs.alfworld.generator import generate  # noqa: E402

__all__ = [
    "INSTALL_HINT",
    "TASK_TYPES",
    "ALFWorld",
    "ALFWorldConfig",
    "Game",
    "GameRef",
    "MissingExtra",
    "generate",
    "generated_set",
    "load_game_file",
]
