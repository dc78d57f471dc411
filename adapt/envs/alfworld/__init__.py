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

from adapt.envs.alfworld.assets import TASK_TYPES
from adapt.envs.alfworld.config import ALFWorldConfig
from adapt.envs.alfworld.env import ALFWorld
from adapt.envs.alfworld.extra import INSTALL_HINT, MissingExtra, require
from adapt.envs.alfworld.game import Game
from adapt.envs.alfworld.games import GameRef, generated_set, load_game_file
from adapt.envs.alfworld.generator import generate

# The modules above import the extra only when they use it (the engine, on the first game), so
# they load without it; this makes importing the package without the extra a MissingExtra, and
# the registry then leaves alfworld out (a warning). tests/envs/test_alfworld_extra.py checks it.
require()

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
