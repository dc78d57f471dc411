"""InterCode-Bash's reward against InterCode's formula, on many random agent/gold pairs."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from adapt.envs.intercode_bash.changes import parse_status, quote_path, status_text
from adapt.envs.intercode_bash.reward import reward, tfidf_similarity, tokens

WORDS = ["foo", "Foo", "bar", "a", "b1", "hello", "world", "/testbed/dir1", "x.txt", "42",
         "3.14", "é", "naïve", "__init__", "-", "::", "total", "rm:", "No", "such", "file"]


def _doc(rng: random.Random) -> str:
    return rng.choice([" ", "\n", "\t", ", "]).join(rng.choice(WORDS)
                                                   for _ in range(rng.randint(0, 12)))


def _reference_similarity(a: str, b: str) -> float:
    """The TF-IDF cosine written the textbook way: unnormalised tf * idf vectors, then
    dot / (|a| |b|) (what L2-normalised rows give)."""
    docs = [Counter(t for t in tokens(a)), Counter(t for t in tokens(b))]
    vocab = set(docs[0]) | set(docs[1])
    if not vocab:
        raise ValueError("empty vocabulary")
    idf = {t: math.log(3 / (1 + sum(t in d for d in docs))) + 1 for t in vocab}
    va = {t: docs[0][t] * idf[t] for t in vocab}
    vb = {t: docs[1][t] * idf[t] for t in vocab}
    na = math.sqrt(sum(v * v for v in va.values()))
    nb = math.sqrt(sum(v * v for v in vb.values()))
    if na == 0 or nb == 0:
        return 0.0
    return sum(va[t] * vb[t] for t in vocab) / (na * nb)


def _intercode(agent_status: str, gold_status: str, agent_out: str | None,
               gold_out: str | None, agrees: dict[str, bool]) -> float:
    """InterCode's ``BashEnv.get_reward``, step by step, on status texts."""
    def parse(text: str) -> list[tuple[str, str]]:
        lst = text.split()
        return [(lst[i + 1], lst[i]) for i in range(0, len(lst) - 1, 2)]

    diff_agent, diff_eval = parse(agent_status), parse(gold_status)
    miss = set(diff_eval) - set(diff_agent)
    extra = set(diff_agent) - set(diff_eval)
    total = 0.01
    total += round(0.33 * (1 - math.erf(len(miss) + len(extra))), 2)
    p2 = 0.33
    same = [x for x in set(diff_agent) & set(diff_eval) if x[1] in ["A", "??", "C"]]
    if same:
        ok = sum(1 for x in same if ("." not in x[0]) or agrees[x[0]])
        p2 = round(0.33 * (ok / len(same)), 2)
    total += p2
    try:
        if agent_out is None or gold_out is None:
            raise TypeError
        sim = _reference_similarity(agent_out, gold_out)
        total += round((0.33 * sim) * 100) / 100  # np.round(x, 2): rint(x * 100) / 100
    except (ValueError, TypeError):
        total += round(0.33 * (1 if agent_out == gold_out else 0), 2)
    return total


STATUS_POOL = [(" M", "testbed/a.txt"), (" D", "testbed/a.txt"), ("??", "testbed/new.txt"),
               ("??", "testbed/dir/"), (" D", "testbed/b"), ("??", "tmp/"),
               ("??", "testbed/x y.txt"), (" M", "index.html"), ("??", "f.c")]


def test_tokens_are_sklearns_defaults() -> None:
    assert tokens("Hello, World! a b1 x.txt é naïve __init__ 42") == [
        "hello", "world", "b1", "txt", "naïve", "__init__", "42"]


def test_similarity_matches_the_formula_on_random_pairs() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        a, b = _doc(rng), _doc(rng)
        try:
            expected = _reference_similarity(a, b)
        except ValueError:
            assert tfidf_similarity(a, b) == ((1.0 if a == b else 0.0), False)
            continue
        got, fitted = tfidf_similarity(a, b)
        assert fitted
        assert got == pytest.approx(expected, abs=1e-12)
    assert tfidf_similarity("same words", "same words")[0] == pytest.approx(1.0)
    assert tfidf_similarity(None, "x") == (0.0, False)
    assert tfidf_similarity("", "") == (1.0, False)
    assert tfidf_similarity("! ?", "a") == (0.0, False)


def test_similarity_matches_scikit_learn() -> None:
    sklearn_text = pytest.importorskip("sklearn.feature_extraction.text")
    rng = random.Random(11)
    for _ in range(500):
        a, b = _doc(rng), _doc(rng)
        try:
            m = sklearn_text.TfidfVectorizer().fit_transform([a, b])
        except ValueError:
            assert not tfidf_similarity(a, b)[1]
            continue
        expected = (m * m.T).toarray()[0][1]
        assert tfidf_similarity(a, b)[0] == pytest.approx(expected, abs=1e-12)


def test_reward_matches_intercode_on_random_pairs() -> None:
    rng = random.Random(3)
    for _ in range(3000):
        agent_entries = rng.sample(STATUS_POOL, rng.randint(0, 4))
        gold_entries = rng.sample(STATUS_POOL, rng.randint(0, 4))
        agent_text = status_text(sorted(agent_entries, key=lambda e: e[1]))
        gold_text = status_text(sorted(gold_entries, key=lambda e: e[1]))
        agent_out = None if rng.random() < 0.05 else _doc(rng)
        gold_out = rng.choice([agent_out, _doc(rng), _doc(rng)])
        agrees = {p: rng.random() < 0.5 for _, p in STATUS_POOL}
        agrees.update({quote_path(p): v for p, v in list(agrees.items())})
        agrees.update({t: rng.random() < 0.5 for _, p in STATUS_POOL for t in quote_path(p).split()})
        got = reward(parse_status(agent_text), parse_status(gold_text), agent_out, gold_out,
                     agrees.__getitem__)
        expected = _intercode(agent_text, gold_text, agent_out, gold_out, agrees)
        assert got.reward == pytest.approx(expected, abs=1e-9), (agent_text, gold_text,
                                                                  agent_out, gold_out)
        assert 0.01 <= got.reward <= 1.0 + 1e-12


def test_perfect_is_exactly_one_and_parts_are_rounded() -> None:
    same = [("testbed/a.txt", "??")]
    r = reward(same, same, "5\n", "5\n", lambda p: True)
    assert r.reward == 1.0
    r = reward([("a", " M")], [], "x", "y", lambda p: True)
    assert (r.file_diff, r.file_changes, r.answer_similarity) == (0.05, 0.33, 0.0)
    r = reward([], [], None, None, lambda p: True)  # nothing ran on either side
    assert r.reward == 1.0


def test_paths_without_a_dot_always_agree() -> None:
    # InterCode hashes them with md5deep, which its image lacks: both sides print one error
    calls: list[str] = []
    same = [("testbed/newdir/", "??"), ("testbed/n.txt", "??")]
    r = reward(same, same, "", "", lambda p: calls.append(p) or False)  # type: ignore[func-returns-value]
    assert calls == ["testbed/n.txt"] and r.same_correct == 1 and r.file_changes == 0.17


def test_parse_status_reads_like_intercode() -> None:
    text = status_text([(" M", "testbed/a.txt"), ("??", "testbed/x y.txt"), (" D", "b")])
    assert text == ' M testbed/a.txt\n?? "testbed/x y.txt"\n D b\n'
    assert parse_status(text) == [("testbed/a.txt", "M"), ('"testbed/x', "??"),
                                  ("D", 'y.txt"')]  # the space shifts the pairs, as there
