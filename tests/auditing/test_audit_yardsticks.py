"""The audit's yardsticks where a game offers no options, and a near miss is no trivial
reply: a multi-turn env whose answer is a number but whose prompt lists no moves still
has an honest losing episode (wrong numbers), so a silent episode that earns more is an
exploit; a closeness reward that pays a near miss (the ``wrong`` probe, made from the
answer) is not flagged as partial credit, while one that pays a trivial reply is."""

from __future__ import annotations

from mint_envkit import DatasetBuilder, Feedback, MultiTurnEnv, SingleTurnEnv, component
from mint_envkit.auditing import audit

DIVISIONS = [{"question": f"What is {a * b} / {b}?", "answer": str(a)} for a, b in
             [(3, 4), (7, 2), (9, 3), (12, 5), (6, 6), (8, 7)]]  # fmt: skip


def _builder(env, problems=DIVISIONS):
    return DatasetBuilder(
        env=env,
        problems=problems,
        batch_size=len(problems),
        group_size=1,
        model_name="mint-envkit/tiny-qwen3",
        shuffle=False,
    )


class Tutor(MultiTurnEnv):
    """Two tries at a division; a wrong number costs 0.5, a reply with no number asks
    again for free (the planted fault: silence until out of turns earns 0.0)."""

    system_prompt = "Answer with a number; you have two tries."
    required_fields = ("question", "answer")
    max_turns = 2

    async def respond(self, message):
        text = message["content"].strip()
        if not text.lstrip("-").isdigit():
            return Feedback(reply="A number, please.")
        if text == self.problem["answer"]:
            return Feedback(reward=1.0, done=True)
        return Feedback(reply="No.", reward=-0.5)


class TutorFixed(Tutor):
    max_turns_reward = -1.0

    async def respond(self, message):
        text = message["content"].strip()
        if not text.lstrip("-").isdigit():
            return Feedback(reply="A number, please.", reward=-0.5)
        return await super().respond(message)


async def test_a_game_without_options_is_held_to_wrong_numbers():
    report = await audit(_builder(Tutor), search=0, quiet=True)
    rows = {p.name: p for p in report.probes}
    losing = rows["loses_honestly"]
    assert losing.mean_reward < 0 and losing.example not in ("", "3"), report.table()
    assert any(f.kind == "exploit" and f.probe == "says_nothing" for f in report.findings)
    clean = await audit(_builder(TutorFixed), search=0, quiet=True)
    assert not [f for f in clean.findings if f.probe == "says_nothing"], clean.table()


def _number(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:
        return None


def closeness(completion: str, answer: str) -> float:
    value = _number(completion)
    return 0.0 if value is None else max(0.0, 1.0 - abs(value - float(answer)) / 4)


def flat_half(completion: str, answer: str) -> float:
    value = _number(completion)
    return 0.0 if value is None else (1.0 if value == float(answer) else 0.5)


class Closeness(SingleTurnEnv):
    reward_fn = component(closeness, bounds=(0.0, 1.0))


class AnyNumberHalf(SingleTurnEnv):
    reward_fn = component(flat_half, bounds=(0.0, 1.0))


async def test_a_near_miss_is_no_trivial_reply_but_any_number_paid_half_is():
    near = await audit(_builder(Closeness), search=0, quiet=True)
    assert {p.name: p for p in near.probes}["wrong"].mean_reward == 0.75
    assert not [f for f in near.findings if f.kind == "partial_credit"], near.table()
    half = await audit(_builder(AnyNumberHalf), search=0, quiet=True)
    partial = [f for f in half.findings if f.kind == "partial_credit"]
    assert partial and "wrong" not in partial[0].covers, half.table()
