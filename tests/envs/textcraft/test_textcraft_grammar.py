"""TextCraft GBNF grammars, checked as grammars (no model): the parser/matcher accepts every
valid action of a game and rejects invalid ones; the env agrees with the grammar."""

from __future__ import annotations

import pytest

from adapt.envs.textcraft import TextCraft
from adapt.envs.textcraft.grammar import craft_lines, fetchable_items
from adapt.envs.textcraft.solver import solve
from adapt.llm.gbnf import GbnfMatcher, GrammarError, validate_gbnf

SEEDS = range(12)


@pytest.fixture(scope="module")
def env() -> TextCraft:
    return TextCraft()


@pytest.mark.parametrize("seed", SEEDS)
def test_action_grammar_accepts_every_valid_action_and_the_solution(env: TextCraft,
                                                                    seed: int) -> None:
    env.reset(seed=seed)
    grammar = GbnfMatcher(env.decoding_grammar("action") or "")
    for recipe in env.game.recipes:
        for line in craft_lines(env.book, recipe):
            assert grammar.matches(line), line
    for item in fetchable_items(env.book, env.game):
        assert grammar.matches(f"get 1 {item}") and grammar.matches(f"get 12 {item}")
    assert grammar.matches("inventory")
    solution = solve(env)
    for action in solution:  # the scripted solver's actions are all in the language...
        assert grammar.matches(action), action
    result = None
    for action in solution:  # ... and they are valid in the game (reward at the end)
        result = env.step(action)
        assert not env.is_failure(result.observation), (action, result.observation)
    assert result is not None and result.reward == 1.0


@pytest.mark.parametrize("seed", SEEDS)
def test_action_grammar_rejects_invalid_actions(env: TextCraft, seed: int) -> None:
    env.reset(seed=seed)
    grammar = GbnfMatcher(env.decoding_grammar("action") or "")
    recipe = env.game.recipes[0]
    line = craft_lines(env.book, recipe)[0]
    wrong_count = line.replace(f"craft {recipe.count} ", f"craft {recipe.count + 1} ", 1)
    for bad in ("", "inventory please", "get 0 oak logs", "get oak logs", "get 1 unobtainium",
                "think: what now", f"{line}.", wrong_count, line.replace(" using ", " with "),
                "Task completed!", f"get 1 {env.game.goal.replace('_', ' ')}"):
        assert not grammar.matches(bad), bad
    react = GbnfMatcher(env.decoding_grammar("react") or "")
    assert react.matches("think: what now") and react.matches(line)
    assert not react.matches("think: two\nlines")


def test_category_ingredients_are_expanded_to_members(env: TextCraft) -> None:
    env.reset(goal="craft beehive", commands=["craft 1 beehive using 6 planks, 3 honeycomb",
                                              "craft 4 oak planks using 1 oak logs"])
    grammar = GbnfMatcher(env.decoding_grammar("action") or "")
    assert grammar.matches("craft 1 beehive using 6 oak planks, 3 honeycomb")
    assert grammar.matches("craft 1 beehive using 6 crimson planks, 3 honeycomb")
    assert not grammar.matches("craft 1 beehive using 6 planks, 3 honeycomb")
    assert not grammar.matches("get 6 oak planks")  # planks have a recipe: not fetchable
    assert grammar.matches("get 3 honeycomb") and grammar.matches("get 1 oak logs")


def test_plan_grammar(env: TextCraft) -> None:
    env.reset(goal="craft beehive", commands=["craft 1 beehive using 6 planks, 3 honeycomb",
                                              "craft 4 oak planks using 1 oak logs"])
    grammar = GbnfMatcher(env.decoding_grammar("plan") or "")
    plan = ("# Think: planks first.\nStep 1: fetch 6 oak planks\nStep 2: fetch 3 honeycomb\n"
            "Step 3: craft 1 beehive using 6 oak planks, 3 honeycomb\n"
            "Execution Order: (Step 1 AND Step 2 AND Step 3)")
    assert grammar.matches(plan)
    assert not grammar.matches(plan.replace("fetch 3 honeycomb", "find some honey"))
    assert not grammar.matches(plan.replace(" AND Step 3)", " OR Step 3)"))
    assert not grammar.matches(plan.replace("Execution Order", "Order"))
    assert env.decoding_grammar("reflection") is None


@pytest.mark.parametrize("bad", [
    "", "item ::= \"a\"\n", "root ::= item\n", "root ::= \"unterminated\n",
    "root ::= [abc\n", "root ::= (\"a\" | \"b\"\n", "root ::= \"a\" ::= \"b\"\n",
    "root ::= \"\\q\"\n", "root ::= *\n", "root ::= \"a\"{3,1}\n", "root ::= [z-a]\n",
    "root ::= \"a\"\nroot ::= \"b\"\n",
])
def test_validator_rejects_malformed_grammars(bad: str) -> None:
    with pytest.raises(GrammarError):
        validate_gbnf(bad)


def test_matcher_semantics() -> None:
    g = GbnfMatcher('root ::= "a" [0-9]{2,3} (x | "-")* .?\nx ::= [^a\\n] # comment\n')
    assert g.matches("a12") and g.matches("a123bb-") and g.matches("a12--z")
    assert not g.matches("a1") and not g.matches("a12a\n") and not g.matches("b12")
    with pytest.raises(GrammarError, match="recursive"):
        GbnfMatcher('root ::= "(" root ")" | "x"\n')
