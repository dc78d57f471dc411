"""The InterCode-SQL paper prompt (profile paper): InterCode's ReAct template, numbered Thought,
Action and Observation lines, whose demonstrations show observations exactly as our environment
gives them in InterCode's format (a Python list of row tuples, no Columns line, no row cap of
20): this module replays them on the real databases and compares. Also the numbered turns
themselves: 10 turns in all under paper, one call per thought and action (scripted model)."""

from __future__ import annotations

from pathlib import Path

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs.intercode_sql import InterCodeSQL
from adapt.llm.base import ChatRequest
from adapt.llm.testing import FunctionModel

PROMPT = Path(__file__).parents[3] / "adapt/envs/intercode_sql/prompts/paper/executor.txt"

#: (database, question, [(thought, action)])
DEMOS: list[tuple[str, str, list[tuple[str, str]]]] = [
    ("museum_visit", "Which museums opened after 2009?", [
        ("I should write a SQL query that selects the names of the museums opened after 2009 "
         "from a table of museums.", "execute[SELECT Name FROM museums WHERE Open_Year > 2009]"),
        ("There is no museums table. I need to see which tables there are.",
         "execute[SHOW TABLES]"),
        ("The table is called museum. I should check which columns it has.",
         "execute[DESC museum]"),
        ("The museum table has the columns Name and Open_Year. I can now write the query.",
         "execute[SELECT Name FROM museum WHERE Open_Year > 2009]"),
        ("The output lists the names of the museums opened after 2009, which answers the "
         "question. I submit it.", "submit"),
    ]),
    ("battle_death", "List the names of the ships of type Brig.", [
        ("I should select the names from a ship table, keeping the ships whose type is Brig.",
         "execute[SELECT name FROM ship WHERE type = 'Brig']"),
        ("The ship table exists, but it has no type column. I should ask which columns it has.",
         "execute[Which columns does the ship table have?]"),
        ("An action must be SQL code, not a question in words. DESC shows the columns.",
         "execute[DESC ship]"),
        ("The type of a ship is in the ship_type column. I use it in my query.",
         "execute[SELECT name FROM ship WHERE ship_type = 'Brig']"),
        ("The output holds the names of the ships of type Brig. I am done.", "submit"),
    ]),
    ("orchestra", "Which conductors lead an orchestra that records for Decca Records?", [
        ("I should first find out which tables this database has.", "execute[SHOW TABLES]"),
        ("The record company is probably a column of the orchestra table. I check its columns.",
         "execute[DESC orchestra]"),
        ("orchestra has Record_Company and a Conductor_ID, so the names must be in the "
         "conductor table. I check it too.", "execute[DESC conductor]"),
        ("I join conductor and orchestra on Conductor_ID and keep the orchestras of Decca "
         "Records.", "execute[SELECT T1.Name FROM conductor AS T1 JOIN orchestra AS T2 ON "
         "T1.Conductor_ID = T2.Conductor_ID WHERE T2.Record_Company = 'Decca Records']"),
        ("The output gives the two conductors' names and nothing else. I submit.", "submit"),
    ]),
]


def played(env: InterCodeSQL) -> str:
    """The demonstrations as the prompt shows them, observations from the environment."""
    lines: list[str] = []
    for db, question, steps in DEMOS:
        env.reset(db=db, question=question, gold="SELECT 1", observation="intercode")
        lines.append(f"Question: {question}")
        for number, (thought, action) in enumerate(steps, start=1):
            lines += [f"Thought {number}: {thought}", f"Action {number}: {action}"]
            if action != "submit":
                lines.append(f"Observation {number}: {env.step(action).observation}")
    return "\n".join(lines) + "\n"


def test_the_demonstrations_are_exact_for_our_environment(env: InterCodeSQL) -> None:
    text = PROMPT.read_text(encoding="utf-8")
    assert played(env) in text
    assert "Columns:" not in text and "20 rows" not in text
    assert text.endswith("Question: $goal\n$context\n")


async def test_paper_react_takes_ten_numbered_turns_in_all(env: InterCodeSQL) -> None:
    task = {"db": "poker_player", "question": "How many poker players are there?",
            "gold": "SELECT count(*) FROM poker_player"}
    replies: list[str] = []

    def reply(request: ChatRequest) -> str:
        prompt = request.prompt or ""
        replies.append(prompt)
        if prompt.endswith("Action 3:"):  # the retry call: the action alone
            return " execute[SHOW TABLES]"
        if prompt.endswith("Thought 3:"):  # no action written: InterCode asks again
            return " I look at the tables."
        return " I count the players.\nAction {n}: execute[SELECT count(*) FROM people]".format(
            n=prompt.rsplit("Thought ", 1)[1].rstrip(":"))

    sink = MemorySink()
    result = await run_task(env, task, RunConfig(profile="paper", strategy="react"),
                            FunctionModel(reply), sink=sink)
    steps = sink.steps[1]
    # 10 turns (not 10 x d_max), then the engine submits the last result, as InterCode does
    assert [s.text for s in steps].count("submit") == 1 and len(steps) == 11
    assert len(replies) == 11  # one call per turn, two for the turn without an action
    assert replies[0].endswith("Question: How many poker players are there?\nThought 1:")
    assert "Database:" not in replies[0] and "Tables:" not in replies[0]
    assert "Observation 1: [(" in replies[1] and "Thought 2:" in replies[1]
    assert steps[2].text == "execute[SHOW TABLES]"
    assert steps[0].extra == {"thought": "I count the players."}
    assert result.reward == 0.0
