"""InterCode-Bash: NL2Bash requests run in a namespace sandbox, scored as InterCode scores them.

Prepare the file systems once (``adapt data prepare-bash PATH``, i.e. ``layers.prepare``; done
automatically when missing and the data directory is known), then::

    from adapt.envs.intercode_bash import InterCodeBash, tasks

    task = tasks("/data/intercode-bash", "fs1")[0]
    env = InterCodeBash(data_dir="/data/intercode-bash")
    observation = env.reset(**task.config)
    env.step(f"execute[{task.config['gold']}]")
    env.step("submit").reward  # 1.0
"""

from adapt.envs.intercode_bash.config import InterCodeBashConfig
from adapt.envs.intercode_bash.env import InterCodeBash
from adapt.envs.intercode_bash.layers import prepare
from adapt.envs.intercode_bash.task_sets import TASK_SETS, Task, tasks

__all__ = ["TASK_SETS", "InterCodeBash", "InterCodeBashConfig", "Task", "prepare", "tasks"]
