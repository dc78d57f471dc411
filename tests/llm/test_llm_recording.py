"""Recording LLM calls, and replaying them (then continuing live)."""

from __future__ import annotations

import pytest

from adapt.errors import ReplayDivergence
from adapt.llm import ChatRequest, Message, Recording, RecordingModel, ReplayModel
from adapt.llm.recording import RecordedCall, request_diff
from adapt.llm.testing import ScriptedModel


def requests() -> list[ChatRequest]:
    return [
        ChatRequest(prompt="craft a stick\n> ", stop=["\n"], role="executor"),
        ChatRequest(
            messages=[Message(role="system", content="plan"), Message(role="user", content="go")],
            max_tokens=64,
            seed=3,
            role="planner",
        ),
        ChatRequest(prompt="third", temperature=0.7),
    ]


async def record(n: int = 3) -> Recording:
    model = RecordingModel(ScriptedModel(["get 1 stick", "Step 1: x", "done"], name="scripted"))
    for request in requests()[:n]:
        await model.complete(request)
    return model.recording


async def test_recording_model_records_in_order() -> None:
    inner = ScriptedModel(["a", "b"], name="inner")
    model = RecordingModel(inner)
    assert (model.name, model.simulated) == ("inner", True)
    r1 = await model.complete(ChatRequest(prompt="1"))
    r2 = await model.complete(ChatRequest(prompt="2"))
    calls = model.recording.calls
    assert [c.index for c in calls] == [0, 1]
    assert [c.request.prompt for c in calls] == ["1", "2"]
    assert [c.response for c in calls] == [r1, r2]
    assert model.recording.model == "inner"
    assert len(model.recording) == 2


async def test_callbacks_sync_and_async() -> None:
    seen_sync: list[RecordedCall] = []
    seen_async: list[int] = []

    async def persist(call: RecordedCall) -> None:
        seen_async.append(call.index)

    sync_model = RecordingModel(ScriptedModel(["a"]), on_record=seen_sync.append)
    await sync_model.complete(ChatRequest(prompt="x"))
    async_model = RecordingModel(ScriptedModel(["a", "b"]), on_record=persist)
    await async_model.complete(ChatRequest(prompt="x"))
    await async_model.complete(ChatRequest(prompt="y"))
    assert [c.response.text for c in seen_sync] == ["a"]
    assert seen_async == [0, 1]


async def test_failed_calls_are_not_recorded() -> None:
    model = RecordingModel(ScriptedModel([]))
    with pytest.raises(AssertionError):
        await model.complete(ChatRequest(prompt="x"))
    assert len(model.recording) == 0


async def test_json_round_trip() -> None:
    recording = await record()
    again = Recording.model_validate_json(recording.model_dump_json())
    assert again == recording
    assert again.calls[1].request.messages is not None
    assert again.calls[1].request.role == "planner"


async def test_replay_answers_from_the_recording() -> None:
    recording = Recording.model_validate_json((await record()).model_dump_json())
    replay = ReplayModel(recording)
    out = []
    for request in requests():
        # role is metadata: it may differ without breaking the replay
        out.append(await replay.complete(request.model_copy(update={"role": "other"})))
    assert [r.text for r in out] == ["get 1 stick", "Step 1: x", "done"]
    assert [r.usage for r in out] == [c.response.usage for c in recording.calls]
    assert (replay.replayed, replay.live_calls, replay.remaining) == (3, 0, 0)
    assert replay.simulated is True and replay.name == "scripted"
    with pytest.raises(ReplayDivergence, match="recording exhausted after 3 calls"):
        await replay.complete(ChatRequest(prompt="fourth"))


async def test_replay_then_continue_live() -> None:
    recording = await record(2)
    live = ScriptedModel(["live answer"], name="live")
    replay = ReplayModel(recording, live=live)
    for request in requests()[:2]:
        await replay.complete(request)
    assert live.requests == []  # replayed calls are free
    response = await replay.complete(requests()[2])
    assert response.text == "live answer"
    assert (replay.replayed, replay.live_calls, replay.position) == (2, 1, 3)
    assert live.prompts == ["third"]
    assert replay.name == "live"


async def test_record_the_replay_to_resume_a_crashed_run() -> None:
    """A resumed run: replay what was done, go on live, and record the whole run again."""
    first = await record(2)
    replay = ReplayModel(first, live=ScriptedModel(["done"]))
    resumed = RecordingModel(replay)
    for request in requests():
        await resumed.complete(request)
    assert [c.response.text for c in resumed.recording.calls] == [
        "get 1 stick",
        "Step 1: x",
        "done",
    ]
    assert (replay.replayed, replay.live_calls) == (2, 1)


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        ({"prompt": "craft a stone\n> "}, ["call 0", "prompt differs at character 10", "stick"]),
        ({"stop": []}, ["call 0", "stop: recorded ['\\n'], got []"]),
        ({"max_tokens": 10}, ["max_tokens: recorded 256, got 10"]),
        ({"temperature": 1.0}, ["temperature: recorded 0.0, got 1.0"]),
        ({"seed": 1}, ["seed: recorded None, got 1"]),
        (
            {"prompt": None, "messages": [Message(role="user", content="x")]},
            ["messages: recorded not set, got set", "prompt: recorded set, got not set"],
        ),
    ],
)
async def test_divergence_names_call_and_diff(
    change: dict[str, object], needles: list[str]
) -> None:
    replay = ReplayModel(await record(1), live=ScriptedModel(["never"]))
    with pytest.raises(ReplayDivergence) as info:
        await replay.complete(requests()[0].model_copy(update=change))
    for needle in needles:
        assert needle in str(info.value)
    assert replay.live_calls == 0


async def test_divergence_in_messages_is_pinpointed() -> None:
    replay = ReplayModel(await record(2))
    await replay.complete(requests()[0])
    changed = requests()[1].model_copy(
        update={
            "messages": [
                Message(role="system", content="plan"),
                Message(role="user", content="stop"),
            ]
        }
    )
    with pytest.raises(ReplayDivergence) as info:
        await replay.complete(changed)
    message = str(info.value)
    assert "call 1" in message and "'planner'" in message
    assert "messages[1].content differs at character 0" in message
    assert "'go'" in message and "'stop'" in message


def test_request_diff_lengths_and_roles() -> None:
    a = ChatRequest(messages=[Message(role="user", content="x")])
    b = ChatRequest(messages=[Message(role="user", content="x"), Message(role="user", content="y")])
    c = ChatRequest(messages=[Message(role="system", content="x")])
    assert request_diff(a, a) == []
    assert request_diff(a, b) == ["messages: recorded 1 messages, got 2"]
    assert request_diff(a, c) == ["messages[0].role: recorded 'user', got 'system'"]
    long_a = ChatRequest(prompt="z" * 500 + "A" + "z" * 500)
    long_b = ChatRequest(prompt="z" * 500 + "B" + "z" * 500)
    (diff,) = request_diff(long_a, long_b)
    assert "character 500" in diff and len(diff) < 250


async def test_fingerprint_only_recording_and_shared_cursor() -> None:
    from adapt.llm import RecordedCall, Recording, ReplayCursor, ReplayModel, request_fingerprint
    from adapt.llm.base import ChatRequest, ChatResponse
    from adapt.llm.testing import ScriptedModel

    a = ChatRequest(prompt="executor prompt", stop=["\n"], role="executor")
    b = ChatRequest(prompt="planner prompt", role="planner")
    rec = Recording(calls=[
        RecordedCall(index=0, fingerprint=request_fingerprint(a), response=ChatResponse(text="A")),
        RecordedCall(index=1, fingerprint=request_fingerprint(b), response=ChatResponse(text="B")),
    ])
    cursor = ReplayCursor()
    live_ex, live_pl = ScriptedModel(["live-ex"]), ScriptedModel(["live-pl"])
    ex = ReplayModel(rec, live=live_ex, cursor=cursor)
    pl = ReplayModel(rec, live=live_pl, cursor=cursor)
    assert (await ex.complete(a)).text == "A"
    assert (await pl.complete(b)).text == "B"
    assert (await ex.complete(a)).text == "live-ex"
    assert (await pl.complete(b)).text == "live-pl"
    assert ex.replayed == 1 and pl.replayed == 1 and ex.remaining == 0

    diverging = ReplayModel(rec)
    with pytest.raises(ReplayDivergence, match="fingerprint"):
        await diverging.complete(ChatRequest(prompt="something else"))
