"""InterCode-SQL: answer Spider questions by querying a real MariaDB server.

Load the data once (``adapt data load-sql PATH``, i.e. ``loader.load_sql``), then::

    from adapt.envs.intercode_sql import InterCodeSQL, tasks

    task = tasks("/data/intercode-sql", hardness="easy")[0]
    env = InterCodeSQL()  # connection from the ADAPT_SQL_* settings, or host=, port=, ...
    observation = env.reset(**task.config)
    env.step(f"execute[{task.gold}]")
    env.step("submit").reward  # 1.0
"""

from adapt.envs.intercode_sql.config import InterCodeSQLConfig
from adapt.envs.intercode_sql.env import InterCodeSQL
from adapt.envs.intercode_sql.loader import LoadReport, load_sql
from adapt.envs.intercode_sql.task_sets import Task, tasks

__all__ = ["InterCodeSQL", "InterCodeSQLConfig", "LoadReport", "Task", "load_sql", "tasks"]
