"""The InterCode-SQL environment: answer a question about a database by querying MariaDB.

Actions (the keyword's case and spaces around it do not matter):

- ``execute[<sql>]`` runs one SQL statement as the read-only agent user on the task's database
  and shows the result: a ``Columns:`` line, at most ``MAX_ROWS_SHOWN`` rows as tuples (cells
  longer than ``MAX_CELL_CHARS`` characters are cut) and a note with the number of rows left
  out; or ``Error executing query: <message>`` (also for a write, which the grants refuse, and
  for a statement stopped by the statement timeout);
- ``submit`` ends the episode: the result of the last ``execute`` is scored against the gold
  query's result (``reward.reward``); success is reward 1.0;
- ``think: ...`` is a thought: observation ``OK.``, no effect.

With ``observation="intercode"`` in the config (profile ``paper``), results are shown as
InterCode's ReAct and StateFlow agents show them: the Python ``str`` of the list of row tuples,
cut to ``INTERCODE_MAX_ROWS`` rows, ``None`` for a statement without a result set, and error
texts cut to ``INTERCODE_MAX_CHARS`` characters.

At the turn limit the engine sends ``final_action`` (``submit``), as InterCode and StateFlow
do, so the last result is scored rather than counted as 0.

Anything else gives an observation naming the two valid actions. As in InterCode, the submitted
answer is the result of the *last* ``execute``: when it failed or returned no result set, the
reward is 0.

Every agent connection runs ``SET SESSION max_statement_time = <timeout>``; ``SET`` statements
and statements that mention ``max_statement_time`` are refused (so the agent can neither lift
the limit nor change session settings that would alter the gold result), and a client-side read
timeout (timeout + 10 s) kills the query and reconnects should the server-side limit not fire.
As in InterCode, the gold query runs on the agent's connection (after selecting the task's
database again): MariaDB may break ties of ``ORDER BY ... LIMIT`` differently in another session,
and the same session keeps the gold and the agent's identical query consistent.
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
import logging
import re
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel

from adapt.envs.base import BaseEnvironment, StepResult
from adapt.envs.intercode_sql.config import InterCodeSQLConfig
from adapt.envs.intercode_sql.loader import Connection, connect, pymysql_module
from adapt.envs.intercode_sql.reward import reward as intercode_reward
from adapt.envs.intercode_sql.settings import SQLSettings
from adapt.envs.intercode_sql.tools import TOOLS
from adapt.envs.tools import ToolActions
from adapt.envs.verdicts import UNKNOWN, Verification, reward_verification, same_goal
from adapt.errors import InvalidConfig, UserError

logger = logging.getLogger(__name__)

#: rows shown in an observation; the rest are counted in a note
MAX_ROWS_SHOWN = 20
#: characters of one cell shown before it is cut with ``...``
MAX_CELL_CHARS = 100
#: characters of the last query kept in the salient state
MAX_QUERY_IN_STATE = 120
#: seconds the client waits beyond the statement timeout before it gives up on the server
READ_TIMEOUT_SLACK = 10.0

#: InterCode's cuts (its ReAct and StateFlow agents): rows of a result list, characters of a text
INTERCODE_MAX_ROWS = 25
INTERCODE_MAX_CHARS = 350

ERROR_PREFIX = "Error executing query"
INVALID_ACTION = (
    "Invalid action. Use execute[<SQL query>] to run one SQL query on the database and see its "
    "result, or submit to end the task with the result of your last query as the answer."
)
#: InterCode's observation for an action that is neither execute[...] nor submit
INTERCODE_INVALID = "Error executing query: Your last `execute` action did not contain sql code"
ALREADY_SUBMITTED = "The answer was already submitted; the task is over."

_EXECUTE = re.compile(r"execute\s*\[(.*)\]", re.IGNORECASE | re.DOTALL)
_SUBMIT = re.compile(r"submit(?:\s*\[\s*\])?\s*\.?", re.IGNORECASE)
_TIMEOUT_VARIABLE = re.compile(r"max_statement_time", re.IGNORECASE)
_SESSION_CHANGE = re.compile(r"(?:\(|\s|/\*.*?\*/)*SET\b", re.IGNORECASE | re.DOTALL)
_LOST_CONNECTION = frozenset({0, 2006, 2013, 2014, 2055})
#: ``_execute``'s marker for "no rows: the observation is an error text"
_NO_RESULT = object()


def format_cell(value: object) -> str:
    """One cell as a Python-like literal, cut to ``MAX_CELL_CHARS`` characters."""
    if value is None:
        return "NULL"
    if isinstance(value, bytes | bytearray):
        raw = bytes(value)
        try:
            value = raw.decode("utf-8")
        except UnicodeDecodeError:
            value = "0x" + raw.hex()
    if isinstance(value, datetime.date | datetime.time | datetime.timedelta):
        value = str(value)
    if isinstance(value, str):
        if len(value) > MAX_CELL_CHARS:
            value = value[:MAX_CELL_CHARS] + "..."
        return repr(value)
    if isinstance(value, decimal.Decimal | float | int):
        return str(value)
    text = str(value)
    return text if len(text) <= MAX_CELL_CHARS else text[:MAX_CELL_CHARS] + "..."


def format_rows(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A result set as an observation: ``Columns:`` line, up to ``MAX_ROWS_SHOWN`` rows, a note
    on the rows left out."""
    lines = [f"Columns: {', '.join(columns)}"]
    if not rows:
        lines.append("(no rows)")
    for row in rows[:MAX_ROWS_SHOWN]:
        cells = [format_cell(v) for v in row]
        lines.append("(" + ", ".join(cells) + ("," if len(cells) == 1 else "") + ")")
    left_out = len(rows) - MAX_ROWS_SHOWN
    if left_out > 0:
        lines.append(f"[{left_out} more rows not shown; {len(rows)} rows in total]")
    return "\n".join(lines)


def intercode_observation(observation: str | list[tuple[object, ...]] | None) -> str:
    """An observation as InterCode's agents print it: a result list cut to 25 rows, a text cut to
    350 characters, ``None`` for a statement without a result set."""
    if isinstance(observation, list):
        return str(observation[:INTERCODE_MAX_ROWS])
    if isinstance(observation, str):
        return observation[:INTERCODE_MAX_CHARS]
    return str(observation)


class InterCodeSQL(ToolActions, BaseEnvironment):
    """InterCode-SQL (Yang et al., 2023) on MariaDB: Spider questions answered by SQL queries."""

    name: ClassVar[str] = "intercode_sql"
    description: ClassVar[str] = (
        "Answer a natural-language question about a database (Spider, via InterCode) by running "
        "SQL queries on MariaDB and submitting: the reward compares the last query's rows with "
        "the gold query's (intersection over union, scaled by Kendall tau of the row order)."
    )
    config_model: ClassVar[type[BaseModel]] = InterCodeSQLConfig
    default_max_steps: ClassVar[int] = 10
    action_grammar: ClassVar[str] = (
        "execute[<SQL query>]  (run one SQL query on the database, read-only, e.g. "
        "execute[SHOW TABLES] or execute[SELECT count(*) FROM singer])\n"
        "submit  (end the task: the result of your last query is the answer)"
    )
    prompt_package: ClassVar[str | None] = "adapt.envs.intercode_sql"
    #: ``execute`` and ``submit`` as tools (``adapt.envs.intercode_sql.tools``)
    action_tools = TOOLS
    #: what StateAct tracks besides the goal
    state_fields: ClassVar[tuple[str, ...]] = ("tables inspected",)
    #: reward 1 means the goal holds (trials count it, not the executor's claim)
    success_reward: ClassVar[float | None] = 1.0
    #: profile ``paper``: InterCode's 10 turns and its observation format
    paper_profile: ClassVar[dict[str, dict[str, Any]]] = {
        "executor": {"max_steps": 10},
        "environment_config": {"observation": "intercode", "prompts": "paper"},
        # the ReAct baseline: InterCode's 10 turns in all, not 10 per depth level, each turn a
        # numbered thought and action, and no patience rule (InterCode's eval_react.py)
        "by_executor": {"react": {"run": {"react_steps": 10}, "react_format": "numbered",
                                  "patience": None}},
    }
    #: the kinds each prompt set (config ``prompts``) has under ``prompts/<set>/``
    prompt_sets: ClassVar[dict[str, frozenset[str]]] = {"paper": frozenset({"executor"})}
    #: sent by the engine when the turn limit ends a run before the episode did
    final_action: ClassVar[str | None] = "submit"
    #: the environment's own settings (``ADAPT_SQL_*``)
    settings_model: ClassVar[type[SQLSettings]] = SQLSettings

    def __init__(
        self,
        *,
        host: str | None = None,
        port: int | None = None,
        user: str | None = None,
        password: str | None = None,
        statement_timeout: float | None = None,
    ) -> None:
        self._host = host
        self._port = port
        self._user = user
        self._password = password
        self._statement_timeout = statement_timeout
        self._conn: Connection | None = None
        self._config: InterCodeSQLConfig | None = None
        self._tables: tuple[str, ...] = ()
        self._last_rows: tuple[tuple[object, ...], ...] | None = None
        self._last_query: str | None = None
        self._last_count = 0
        self._inspected: list[str] = []
        self._done = False
        #: the reward of the submitted answer (``None`` until ``submit``), for verification
        self._score: float | None = None
        self._gold_cache: dict[tuple[str, str], tuple[tuple[object, ...], ...] | str] = {}

    # -- connection ----------------------------------------------------------------------------
    def _resolve(self) -> tuple[str, int, str, str, float]:
        """Connection parameters; those not given to the constructor come from the settings."""
        if None in (self._host, self._port, self._user, self._password, self._statement_timeout):
            s = self.settings_model()
            self._host = s.host if self._host is None else self._host
            self._port = s.port if self._port is None else self._port
            self._user = s.agent_user if self._user is None else self._user
            self._password = s.agent_password if self._password is None else self._password
            if self._statement_timeout is None:
                self._statement_timeout = s.statement_timeout_seconds
        if (self._host is None or self._port is None or self._user is None
                or self._password is None or self._statement_timeout is None):
            raise RuntimeError("intercode_sql: the database connection is not configured")
        return self._host, self._port, self._user, self._password, self._statement_timeout

    @property
    def statement_timeout(self) -> float:
        """Seconds a statement may run before the server stops it."""
        return self._resolve()[4]

    def _open(self, database: str | None) -> Connection:
        host, port, user, password, timeout = self._resolve()
        conn = connect(
            host=host,
            port=port,
            user=user,
            password=password,
            database=database,
            role="agent",
            read_timeout=timeout + READ_TIMEOUT_SLACK,
        )
        with conn.cursor() as cur:
            cur.execute(f"SET SESSION max_statement_time = {float(timeout)!r}")
        return conn

    def _connection(self) -> Connection:
        if self._conn is None:
            self._conn = self._open(None)
        return self._conn

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        thread_id = conn.thread_id()
        with contextlib.suppress(Exception):
            conn.close()
        try:  # stop the query the server may still be running (users may kill their own)
            killer = self._open(None)
            try:
                with killer.cursor() as cur:
                    cur.execute(f"KILL QUERY {int(thread_id)}")
            finally:
                killer.close()
        except Exception as exc:
            logger.debug("intercode_sql: could not kill thread %s: %s", thread_id, exc)

    # -- episode -------------------------------------------------------------------------------
    def start(self, cfg: InterCodeSQLConfig) -> str:
        """Start an episode from a validated config (``reset(**config)`` validates first)."""
        pymysql = pymysql_module()
        conn = self._connection()
        try:
            conn.select_db(cfg.db)
            with conn.cursor() as cur:
                cur.execute("SHOW TABLES")
                tables = tuple(str(row[0]) for row in cur.fetchall())
        except pymysql.err.OperationalError as exc:
            code = exc.args[0] if exc.args else None
            if code in (1044, 1049):
                raise InvalidConfig(
                    f"intercode_sql: database {cfg.db!r} does not exist or the agent user may "
                    "not read it; run `adapt data load-sql PATH` to load the InterCode-SQL "
                    "databases"
                ) from exc
            self._drop_connection()
            raise UserError(f"intercode_sql: could not open database {cfg.db!r}: {exc}") from exc
        self._config = cfg
        self._tables = tables
        self._last_rows = None
        self._last_query = None
        self._last_count = 0
        self._inspected = []
        self._done = False
        self._score = None
        return self.task_observation(cfg.question)

    def step(self, action: str) -> StepResult:
        cfg = self._require_config()
        if self._done:
            return StepResult(ALREADY_SUBMITTED, 0.0, True)
        text = action.strip()
        if text.lower().startswith("think:"):
            return StepResult("OK.")
        if _SUBMIT.fullmatch(text):
            return self._submit(cfg)
        m = _EXECUTE.fullmatch(text)
        if m is None:
            return StepResult(INTERCODE_INVALID if cfg.observation == "intercode"
                              else INVALID_ACTION)
        observation, rows = self._execute(cfg, m.group(1).strip())
        if cfg.observation == "intercode":
            return StepResult(intercode_observation(
                observation if rows is _NO_RESULT else rows))
        return StepResult(observation)

    # -- actions -------------------------------------------------------------------------------
    def _execute(self, cfg: InterCodeSQLConfig, sql: str) -> tuple[str, Any]:
        """The observation, and the rows as a list (``None``: no result set; ``_NO_RESULT``:
        an error)."""
        self._last_rows = None  # the answer is the result of the last execute, success or not
        if not sql:
            return f"{ERROR_PREFIX}: the query is empty; write execute[<SQL query>]", _NO_RESULT
        if _SESSION_CHANGE.match(sql) or _TIMEOUT_VARIABLE.search(sql):
            return (
                f"{ERROR_PREFIX}: SET statements are not allowed here; "
                "run a query (SELECT, SHOW, DESCRIBE) instead"
            ), _NO_RESULT
        pymysql = pymysql_module()
        try:
            if self._conn is None:  # reconnect after a lost connection
                self._connection().select_db(cfg.db)
            conn = self._connection()
            with conn.cursor() as cur:
                cur.execute(sql)
                if cur.description is None:
                    return (
                        "Query executed successfully; it returned no result set "
                        f"({max(cur.rowcount, 0)} rows affected)."
                    ), None
                columns = [str(d[0]) for d in cur.description]
                rows = tuple(tuple(row) for row in cur.fetchall())
        except pymysql.err.MySQLError as exc:
            code = exc.args[0] if exc.args else None
            message = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
            if isinstance(exc, pymysql.err.InterfaceError) or code in _LOST_CONNECTION:
                self._drop_connection()
                return (
                    f"{ERROR_PREFIX}: lost the connection to the database ({message}); the "
                    f"query may have run longer than {self.statement_timeout:g}s"
                ), _NO_RESULT
            return f"{ERROR_PREFIX}: {message}", _NO_RESULT
        self._last_rows = rows
        self._last_query = " ".join(sql.split())
        self._last_count = len(rows)
        for table in self._tables:
            if table not in self._inspected and re.search(
                rf"(?<![\w$]){re.escape(table)}(?![\w$])", sql, re.IGNORECASE
            ):
                self._inspected.append(table)
        return format_rows(columns, rows), list(rows)

    def _gold_rows(self, cfg: InterCodeSQLConfig) -> tuple[tuple[object, ...], ...] | str:
        """The gold query's rows, or its error message (cached per database and query)."""
        key = (cfg.db, cfg.gold)
        cached = self._gold_cache.get(key)
        if cached is not None:
            return cached
        pymysql = pymysql_module()
        try:
            conn = self._connection()
            conn.select_db(cfg.db)
            with conn.cursor() as cur:
                cur.execute(cfg.gold)
                rows = tuple(tuple(r) for r in cur.fetchall()) if cur.description else ()
            result: tuple[tuple[object, ...], ...] | str = rows
        except pymysql.err.MySQLError as exc:
            code = exc.args[0] if exc.args else None
            if isinstance(exc, pymysql.err.InterfaceError) or code in _LOST_CONNECTION:
                self._drop_connection()
            result = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
        self._gold_cache[key] = result
        return result

    def _submit(self, cfg: InterCodeSQLConfig) -> StepResult:
        self._done = True
        gold = self._gold_rows(cfg)
        if isinstance(gold, str):
            logger.warning("intercode_sql: the gold query of %r failed: %s", cfg.question, gold)
            return StepResult(
                "Submitted, but the gold query failed, so the answer cannot be scored.",
                0.0,
                True,
                {"success": False, "gold_error": gold},
            )
        score = intercode_reward(self._last_rows, gold)
        self._score = score
        info: dict[str, Any] = {"success": score == 1.0, "gold_rows": len(gold)}
        if self._last_rows is None:
            return StepResult(
                "Submitted without a query result (the last action was not a successful "
                f"query). Reward: {score:g}",
                score,
                True,
                info,
            )
        return StepResult(
            f"Submitted the {len(self._last_rows)} rows of your last query. Reward: {score:g}",
            score,
            True,
            info,
        )

    def _require_config(self) -> InterCodeSQLConfig:
        if self._config is None:
            raise UserError(
                "intercode_sql: call reset(db=..., question=..., gold=...) before step()"
            )
        return self._config

    # -- protocol ------------------------------------------------------------------------------
    @property
    def goal(self) -> str:
        return "" if self._config is None else self._config.question

    def verification_mark(self) -> object:
        return None

    def verify(self, goal: str, *, since: object | None = None) -> Verification:
        """The final reward only: the question is confirmed by a submitted answer with reward
        1, refuted by a lower one (or a submission the gold query could not score); sub-goals
        and an unsubmitted question are ``unknown``."""
        if self._config is None or not same_goal(goal, self._config.question):
            return UNKNOWN
        if not self._done:
            return UNKNOWN
        return reward_verification(self._score or 0.0, True)

    @property
    def tables(self) -> tuple[str, ...]:
        """The tables of the current database (after ``reset``)."""
        return self._tables

    def task_observation(self, goal: str) -> str:
        if self._config is None:
            return f"Task: {goal}"
        return (
            f"Database: {self._config.db}\n"
            f"Tables: {', '.join(self._tables) or '(none)'}\n"
            f"Task: {goal}"
        )

    def salient_state(self) -> str | None:
        if self._config is None:
            return None
        parts = [f"Tables inspected: {', '.join(self._inspected) or 'none'}."]
        if self._last_query is not None:
            query = self._last_query
            if len(query) > MAX_QUERY_IN_STATE:
                query = query[:MAX_QUERY_IN_STATE] + "..."
            parts.append(f"Last successful query: {query} ({self._last_count} rows).")
        return " ".join(parts)

    def current_prompt_set(self) -> str | None:
        """``prompts="paper"``: InterCode's ReAct template (``executor``)."""
        return None if self._config is None else self._config.prompts

    def is_failure(self, observation: str) -> bool:
        return observation.startswith(ERROR_PREFIX)

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception as exc:  # already closed by the server
                logger.debug("intercode_sql: close: %s", exc)
