"""TextCraft: the ADaPT paper's compositional crafting game on Minecraft 1.16.5 recipes.

>>> from adapt.envs.textcraft import TextCraft, tasks
>>> env = TextCraft()
>>> observation = env.reset(seed=3)
>>> env.step("inventory").observation
'Inventory: You are not carrying anything.'
"""

from adapt.envs.textcraft.config import TextCraftConfig
from adapt.envs.textcraft.env import TextCraft
from adapt.envs.textcraft.task_sets import Task, tasks

__all__ = ["Task", "TextCraft", "TextCraftConfig", "tasks"]
