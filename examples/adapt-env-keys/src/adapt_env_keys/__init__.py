"""An example ``adapt`` environment plug-in: find the keys, unlock the doors, open the chest.

Installing this package registers the environment ``keys`` through the ``adapt.environments``
entry point (see ``pyproject.toml``); ``adapt.envs.create("keys")`` then makes one.
"""

from adapt_env_keys.env import ACTION_GRAMMAR, KeysConfig, KeysEnv
from adapt_env_keys.world import House, build_house

__all__ = ["ACTION_GRAMMAR", "House", "KeysConfig", "KeysEnv", "build_house"]
__version__ = "0.1.0"
