"""The InterCode-SQL environment against the real MariaDB server and the real dump."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from adapt.envs import registry
from adapt.envs.intercode_sql import InterCodeSQL, tasks
from adapt.envs.intercode_sql.env import (
    ERROR_PREFIX,
    INTERCODE_MAX_CHARS,
    INTERCODE_MAX_ROWS,
    INVALID_ACTION,
    MAX_ROWS_SHOWN,
    intercode_observation,
)
from adapt.envs.testing import check_environment
from adapt.errors import InvalidConfig, UserError
from tests.support.sqldb import TIMEOUT, Server, make_env

POKER = {
    "db": "poker_player",
    "question": "What are the names of poker players, ordered ascending by the number of final "
    "tables they have made?",
    "gold": "SELECT T1.Name FROM people AS T1 JOIN poker_player AS T2 "
    "ON T1.People_ID = T2.People_ID ORDER BY T2.Final_Table_Made",
}
#: the gold rows, in order: Teodor Salparov, Maksim Botin, Yevgeni Sivozhelez, Semen Poltavskiy,
#: Aleksey Ostapenko (final tables 10, 19, 21, 26, 42)
JOIN = "FROM people AS T1 JOIN poker_player AS T2 ON T1.People_ID = T2.People_ID"


def play(env: InterCodeSQL, *queries: str, config: dict[str, str] = POKER) -> float:
    env.reset(**config)
    for q in queries:
        env.step(f"execute[{q}]")
    result = env.step("submit")
    assert result.done
    return result.reward


def test_gold_queries_of_a_stratified_sample_score_one(
    env: InterCodeSQL, server: Server, data_dir: Path
) -> None:
    rng = random.Random(2024)
    sample = [
        t for h in ("easy", "medium", "hard", "extra") for t in rng.sample(tasks(data_dir, h), 15)
    ]
    perfect, gold_failed = [], []
    for task in sample:
        env.reset(**task.config)
        env.step(f"execute[{task.gold}]")
        result = env.step("submit")
        if result.reward == 1.0:
            assert result.info["success"] is True
            perfect.append(task.id)
        else:
            # only a gold query this server cannot run may miss; with case-sensitive table
            # names (lower_case_table_names=0) gold queries spelling a table in another case fail
            assert "gold_error" in result.info, (task.id, task.gold, result)
            gold_failed.append((task.id, result.info["gold_error"]))
    print(f"\n{len(perfect)}/{len(sample)} gold queries reach 1.0; gold failed: {gold_failed}")
    if server.lower_case_table_names == 0:
        assert len(perfect) >= 48, gold_failed
    else:
        assert len(perfect) >= 58, gold_failed


def test_wrong_partial_and_misordered_answers(env: InterCodeSQL) -> None:
    assert play(env, POKER["gold"]) == 1.0
    assert play(env, "SELECT 'Nobody'") == 0.0  # nothing in common
    assert play(env, f"SELECT T1.Name {JOIN} WHERE 1 = 0") == 0.0  # empty vs 5 rows
    # the 3 first rows: IoU 3/5, same order (tau 1)
    assert play(env, f"SELECT T1.Name {JOIN} ORDER BY T2.Final_Table_Made LIMIT 3") == 0.6
    # every row twice (T, T, M, M, ...): IoU 5/10; the first occurrences are in gold order
    # (tau 1) -> 0.5
    part = "SELECT T1.Name, T2.Final_Table_Made AS f, {k} AS k " + JOIN
    doubled = f"{part.format(k=1)} UNION ALL {part.format(k=2)}"
    assert play(env, f"SELECT Name FROM ({doubled}) AS D ORDER BY f, k") == 0.5
    # reversed: names in string order A<M<S<T<Y give gold ranks [3,1,4,2,0], agent [0,2,4,1,3]:
    # 4 concordant and 6 discordant pairs -> tau -0.2, IoU 1 -> -0.2 (as InterCode's scipy)
    assert play(env, f"SELECT T1.Name {JOIN} ORDER BY T2.Final_Table_Made DESC") == -0.2
    # an extra column: rows differ as strings -> 0
    assert play(env, f"SELECT T1.Name, T2.Final_Table_Made {JOIN}") == 0.0


def test_duplicates_partial_by_hand(env: InterCodeSQL) -> None:
    # agent: Teodor twice, Maksim once -> counts T:2, M:1 vs gold 1 each of 5 names
    # |A ∩ G| = 2, |A ∪ G| = 2 + 1 + 3 = 6 -> IoU 1/3; common lists [T, M] both -> tau 1
    query = "SELECT 'Teodor Salparov' UNION ALL SELECT 'Teodor Salparov' UNION ALL SELECT 'Maksim Botin'"
    assert play(env, query) == 0.33


def test_no_result_scores_zero_and_both_empty_scores_one(env: InterCodeSQL) -> None:
    assert play(env) == 0.0  # never queried
    assert play(env, POKER["gold"], "SELECT nonsense FROM nowhere") == 0.0  # last query failed
    empty = {**POKER, "gold": "SELECT Name FROM people WHERE 1 = 0"}
    assert play(env, "SELECT Name FROM people WHERE Name = 'nobody'", config=empty) == 1.0
    assert play(env, "SELECT 1", config=empty) == 0.0


def test_observations(env: InterCodeSQL) -> None:
    observation = env.reset(**POKER)
    assert POKER["question"] in observation
    assert "Database: poker_player" in observation and "people, poker_player" in observation
    result = env.step(f"execute[{POKER['gold']}]")
    assert result.observation.splitlines()[:2] == ["Columns: Name", "('Teodor Salparov',)"]
    assert result.reward == 0.0 and not result.done
    assert env.step("think: the names look right").observation == "OK."
    for action in ("", "SELECT 1", "execute SELECT 1", "run[SELECT 1]", "submit now"):
        assert env.step(action).observation == INVALID_ACTION
    error = env.step("execute[SELECT nonsense FROM nowhere]").observation
    assert error.startswith(f"{ERROR_PREFIX}: ") and env.is_failure(error)
    assert env.step("execute[]").observation.startswith(ERROR_PREFIX)
    assert not env.is_failure(result.observation)
    submitted = env.step("submit")
    assert submitted.done and submitted.reward == 0.0  # the last execute failed
    assert env.step("execute[SELECT 1]").done  # the episode is over


def test_long_results_are_truncated(env: InterCodeSQL) -> None:
    env.reset(db="world_1", question="all cities", gold="SELECT * FROM city")
    text = env.step("execute[SELECT * FROM city]").observation
    lines = text.splitlines()
    assert len(lines) == 1 + MAX_ROWS_SHOWN + 1
    assert lines[-1] == f"[{4079 - MAX_ROWS_SHOWN} more rows not shown; 4079 rows in total]"
    long = env.step("execute[SELECT REPEAT('x', 500)]").observation
    assert "x" * 100 + "..." in long and "x" * 101 not in long
    assert env.step("submit").reward == 0.0


def test_intercode_observation_format(env: InterCodeSQL) -> None:
    """Profile paper: results as InterCode's agents print them (list of tuples, 25 rows, errors
    cut at 350 characters); the reward is the same."""
    env.reset(**POKER, observation="intercode")
    result = env.step(f"execute[{POKER['gold']}]")
    assert result.observation == (
        "[('Teodor Salparov',), ('Maksim Botin',), ('Yevgeni Sivozhelez',), "
        "('Semen Poltavskiy',), ('Aleksey Ostapenko',)]")
    assert env.step("execute[SELECT count(*) FROM people]").observation == "[(7,)]"
    assert env.step("execute[SELECT Name FROM people WHERE 1 = 0]").observation == "[]"
    error = env.step("execute[SELECT nonsense FROM nowhere]").observation
    assert error == f"{ERROR_PREFIX}: Table 'poker_player.nowhere' doesn't exist"
    assert env.is_failure(error)
    assert intercode_observation("e" * 400) == "e" * INTERCODE_MAX_CHARS
    assert intercode_observation(None) == "None"
    env.step(f"execute[{POKER['gold']}]")
    assert env.step("submit").reward == 1.0
    env.reset(db="world_1", question="all cities", gold="SELECT * FROM city",
              observation="intercode")
    text = env.step("execute[SELECT ID FROM city ORDER BY ID]").observation
    assert text == str([(i,) for i in range(1, INTERCODE_MAX_ROWS + 1)])


def test_final_action_is_submit() -> None:
    assert InterCodeSQL.final_action == "submit"


def test_agent_cannot_modify_data(env: InterCodeSQL) -> None:
    env.reset(**POKER)
    for sql in (
        "INSERT INTO people (People_ID, Name) VALUES (999, 'Mallory')",
        "UPDATE people SET Name = 'Mallory'",
        "DELETE FROM people",
        "DROP TABLE people",
        "DROP DATABASE poker_player",
        "CREATE TABLE hack (id int)",
        "ALTER TABLE people ADD COLUMN x int",
        "TRUNCATE TABLE people",
        "GRANT ALL ON *.* TO CURRENT_USER",
    ):
        observation = env.step(f"execute[{sql}]").observation
        assert observation.startswith(ERROR_PREFIX), (sql, observation)
        assert "denied" in observation.lower(), (sql, observation)
    assert env.step("execute[SELECT count(*) FROM people]").observation.endswith("(7,)")
    # session settings (and so the statement timeout) cannot be changed
    for sql in (
        "SET SESSION max_statement_time = 0",
        "SET STATEMENT max_statement_time=0 FOR SELECT 1",
    ):
        assert env.step(f"execute[{sql}]").observation.startswith(ERROR_PREFIX)


def test_statement_timeout(env: InterCodeSQL) -> None:
    env.reset(**POKER)
    for sql in (
        "SELECT SLEEP(10)",
        "SELECT count(*) FROM people a, people b, people c, people d, people e, people f, "
        "people g, people h, people i, people j, people k, people l",
    ):
        started = time.monotonic()
        observation = env.step(f"execute[{sql}]").observation
        elapsed = time.monotonic() - started
        assert observation.startswith(ERROR_PREFIX), observation
        assert "max_statement_time" in observation
        assert elapsed < TIMEOUT + 2.0
    assert env.step(f"execute[{POKER['gold']}]").observation.startswith("Columns: Name")
    assert env.step("submit").reward == 1.0


def test_salient_state_and_state_fields(env: InterCodeSQL) -> None:
    assert InterCodeSQL.state_fields == ("tables inspected",)
    assert env.salient_state() is None
    env.reset(**POKER)
    assert env.salient_state() == "Tables inspected: none."
    env.step("execute[DESCRIBE poker_player]")
    env.step("execute[SELECT * FROM nowhere]")
    state = env.salient_state()
    assert state == (
        "Tables inspected: poker_player. Last successful query: DESCRIBE poker_player (6 rows)."
    )
    env.step(f"execute[{POKER['gold']}]")
    state = env.salient_state()
    assert state is not None and state.startswith("Tables inspected: poker_player, people.")
    assert len(state) < 300
    env.reset(**POKER)
    assert env.salient_state() == "Tables inspected: none."


def test_conformance(server: Server, data_dir: Path) -> None:
    configs = [tasks(data_dir, "easy", db="singer")[0].config, POKER]
    report = check_environment(
        lambda: make_env(server),
        configs=configs,
        actions=["execute[SHOW TABLES]", "think: look", f"execute[{POKER['gold']}]", "submit"],
    )
    assert report.passed[-1] == "close"
    assert report.tools == ["execute", "submit"]


def test_prompts() -> None:
    env = InterCodeSQL()
    for kind in ("executor", "planner", "plan_and_execute"):
        text = env.prompt_template(kind)
        assert text.endswith("\n\n$task\n$context\n")
    assert "> execute[" in env.prompt_template("executor")
    assert "Execution Order:" in env.prompt_template("planner")
    with pytest.raises(KeyError):
        env.prompt_template("nope")


def test_registered_and_bad_configs(server: Server) -> None:
    assert registry.get("intercode_sql") is InterCodeSQL
    assert registry.environment_info("intercode_sql").default_max_steps == 10
    env = make_env(server)
    try:
        with pytest.raises(InvalidConfig, match="gold"):
            env.reset(db="poker_player", question="q")
        with pytest.raises(InvalidConfig, match="extra"):
            env.reset(**POKER, extra="x")
        with pytest.raises(InvalidConfig, match="no_such_db"):
            env.reset(db="no_such_db", question="q", gold="SELECT 1")
        with pytest.raises(InvalidConfig, match="mysql"):  # no grant outside the loaded dbs
            env.reset(db="mysql", question="q", gold="SELECT 1")
    finally:
        env.close()
    with pytest.raises(UserError, match="reset"):
        InterCodeSQL().step("submit")


def test_bad_agent_credentials(server: Server) -> None:
    env = InterCodeSQL(host=server.host, port=server.port, user="nobody_here", password="x")
    with pytest.raises(UserError, match="refused the agent user"):
        env.reset(**POKER)
    env.close()


def test_settings_defaults_are_used_lazily(monkeypatch: pytest.MonkeyPatch, server: Server) -> None:
    monkeypatch.setenv("ADAPT_SQL_AGENT_USER", server.agent_user)
    monkeypatch.setenv("ADAPT_SQL_AGENT_PASSWORD", server.agent_password)
    monkeypatch.setenv("ADAPT_SQL_STATEMENT_TIMEOUT_SECONDS", "2.5")
    env = InterCodeSQL()  # reads nothing yet
    try:
        assert env.statement_timeout == 2.5
        assert "poker_player" in env.reset(**POKER)
    finally:
        env.close()


def test_verify_by_the_final_reward_only(env: InterCodeSQL) -> None:
    env.reset(**POKER)
    assert env.verify(POKER["question"]).verdict == "unknown"  # nothing submitted yet
    env.step(f"execute[{POKER['gold']}]")
    assert env.verify("find the players").verdict == "unknown"  # sub-goals: never decided
    env.step("submit")
    assert env.verify(POKER["question"]).verdict == "confirmed"
    env.reset(**POKER)
    env.step("execute[SELECT 1]")
    env.step("submit")
    check = env.verify(POKER["question"])
    assert check.verdict == "refuted" and "reward 0" in check.evidence
