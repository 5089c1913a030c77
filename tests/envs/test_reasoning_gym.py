"""reasoning-gym tasks: problems that rebuild their entry, rewarded by the task's own scorer."""

from __future__ import annotations

import json
import sys

import pytest
from reasoning_gym import create_dataset
from reasoning_gym.utils import extract_answer

from mint_envkit import DatasetBuilder, ScriptedPolicy
from mint_envkit.auditing import audit
from mint_envkit.envs import ReasoningGymEnv, reasoning_gym_problems
from mint_envkit.envs.perturb import permuted_problem
from mint_envkit.envs.reasoning_gym import task_reward, task_score
from mint_envkit.errors import ConfigError, MissingExtraError, ProblemError
from mint_envkit.parsers import xml_tag
from mint_envkit.rendering import TINY_MODEL_NAME


class ExactOnly(ReasoningGymEnv):
    partial_credit = 0.0


def _reply(text: str) -> dict:
    return {"role": "assistant", "content": text}


def _builder(env: type, task: str, n: int = 8, **fields) -> DatasetBuilder:
    return DatasetBuilder(
        env=env,
        problems=reasoning_gym_problems(task, n, seed=0),
        batch_size=2,
        group_size=2,
        model_name=TINY_MODEL_NAME,
        **fields,
    )


def test_problems_carry_what_rebuilds_the_entry_as_json():
    problems = reasoning_gym_problems("leg_counting", 5, seed=3, max_animals=3)
    dataset = create_dataset("leg_counting", size=5, seed=3, max_animals=3)
    for index, problem in enumerate(problems):
        assert json.loads(json.dumps(problem)) == problem  # JSON-safe, exactly
        assert problem["question"] == dataset[index]["question"]
        assert problem["answer"] == dataset[index]["answer"]
        assert (problem["task"], problem["index"]) == ("leg_counting", index)
        assert problem["task_config"] == {"max_animals": 3, "seed": 3, "size": 5}
    assert reasoning_gym_problems("leg_counting", 5, seed=3, max_animals=3) == problems
    other = reasoning_gym_problems("leg_counting", 5, seed=4, max_animals=3)
    assert [p["question"] for p in other] != [p["question"] for p in problems]


def test_bad_tasks_and_configs_are_named_with_the_fix():
    with pytest.raises(ConfigError, match="did you mean 'leg_counting'"):
        reasoning_gym_problems("leg_count", 2, seed=0)
    with pytest.raises(ConfigError, match=r"refused the config .*max_animals"):
        reasoning_gym_problems("leg_counting", 2, seed=0, animals=3)
    with pytest.raises(ConfigError, match="function's own argument"):
        reasoning_gym_problems("leg_counting", 2, seed=0, size=3)
    with pytest.raises(ConfigError, match="JSON values only"):
        reasoning_gym_problems("leg_counting", 2, seed=0, max_animals=object())
    with pytest.raises(ConfigError, match="n=0"):
        reasoning_gym_problems("leg_counting", 0, seed=0)


def test_a_task_without_reference_answers_is_refused():
    with pytest.raises(ProblemError, match="no reference answer"):
        reasoning_gym_problems("rubiks_cube", 1, seed=0)


def test_the_reward_is_the_tasks_own_score_of_what_its_extract_answer_reads():
    cases = {
        "leg_counting": lambda a: [a, f"{a}0", f"{a} legs", "7", f"either {a} or 1"],
        "spell_backward": lambda a: [a, a[:-1], a.upper(), a[::-1], "zzz"],
        "word_sorting": lambda a: [a, ", ".join(a.split(", ")[::-1]), a.replace(", ", ",")],
    }
    seen_partial = set()
    for task, variants in cases.items():
        dataset = create_dataset(task, size=4, seed=0)
        for problem in reasoning_gym_problems(task, 4, seed=0):
            env = ReasoningGymEnv(**problem)
            entry = dataset[problem["index"]]
            for answer in variants(problem["answer"]):
                reply = f"Thinking it over. <answer> {answer} </answer>"
                own = dataset.score_answer(extract_answer(reply), entry)
                scored = env.score_answer(_reply(reply))
                assert scored.reward == pytest.approx(own), (task, answer)
                assert scored.correct is (own == 1.0)
                assert env.check(answer, problem["answer"]) is (own == 1.0)
                partial = scored.metrics["reward/partial"]
                assert partial == (pytest.approx(own) if 0 < own < 1 else 0.0)
                if 0 < own < 1:
                    seen_partial.add(task)
    assert seen_partial == {"leg_counting", "spell_backward", "word_sorting"}


def test_the_parser_reads_what_reasoning_gyms_extract_answer_reads():
    answer = xml_tag("answer")
    for text in [
        "<answer>5</answer>",
        "<answer> 5 </answer>",
        "So <answer>4</answer>, no: <answer>\n5\n</answer> done",
        "<answer>a, b</answer> and </answer>",
    ]:
        assert answer(text).value == extract_answer(text), text
    # where they part: nested tags (reasoning-gym reads from the first opening tag)
    assert answer("<answer><answer>5</answer></answer>").value == "5"
    assert extract_answer("<answer><answer>5</answer></answer>") == "<answer>5"


def test_partial_credit_is_reported_and_weighted_and_a_non_answer_earns_least():
    problem = reasoning_gym_problems("word_sorting", 1, seed=0)[0]
    shuffled = ", ".join(sorted(problem["answer"].split(", "), key=len))
    assert shuffled != problem["answer"]
    full, exact = ReasoningGymEnv(**problem), ExactOnly(**problem)
    half = full.score_answer(_reply(f"<answer>{shuffled}</answer>"))
    assert 0 < half.reward < 1 and half.correct is False
    assert half.metrics["reward/partial"] == half.reward
    only = exact.score_answer(_reply(f"<answer>{shuffled}</answer>"))
    assert only.reward == 0.0 and only.metrics["reward/partial"] == half.reward
    for env in (ReasoningGymEnv, ExactOnly):
        assert env.scoring.ordering_known and env.scoring.wrong_answer == 0.0
        assert env.scoring.reward.bounds == (0.0, 1.0)
        for text in ["", "no tags at all", "<answer></answer>", "<answer>cut off"]:
            scored = env(**problem).score_answer(_reply(text))
            assert scored.reward == 0.0 and scored.correct is False, text
            assert scored.metrics["parsed"] == 0.0


def test_a_subclass_gets_its_own_reward_and_bad_weights_are_refused():
    class Loose(ReasoningGymEnv):
        parser = xml_tag("final")

    problem = reasoning_gym_problems("leg_counting", 1, seed=0)[0]
    env = Loose(**problem)
    assert env.score_answer(_reply(f"<final>{problem['answer']}</final>")).correct
    assert not env.score_answer(_reply(f"<answer>{problem['answer']}</answer>")).correct
    with pytest.raises(ConfigError, match=r"partial_credit=1\.5"):
        task_reward(xml_tag("answer"), 1.5)
    with pytest.raises(ConfigError, match=r"partial_credit=-0\.5"):

        class Punishing(ReasoningGymEnv):
            partial_credit = -0.5


def test_a_problem_that_is_not_the_generated_one_is_refused():
    problem = reasoning_gym_problems("leg_counting", 2, seed=0)[0]
    with pytest.raises(ProblemError, match="no longer the problem's"):
        ReasoningGymEnv(**{**problem, "question": problem["question"] + " (edited)"})
    with pytest.raises(ProblemError, match="no longer the problem's"):
        task_score({**problem, "answer": "0"}, problem["answer"])
    with pytest.raises(ProblemError, match="outside its task's size 2"):
        ReasoningGymEnv(**{**problem, "index": 2})
    with pytest.raises(ProblemError, match="task_config must be a dict"):
        ReasoningGymEnv(**{**problem, "task_config": "seed=0"})
    with pytest.raises(ProblemError, match="needs field"):
        ReasoningGymEnv(question=problem["question"], answer=problem["answer"])


def test_no_counterfactual_is_made_of_a_reasoning_gym_problem():
    problem = reasoning_gym_problems("word_sorting", 1, seed=0)[0]
    offered = {**problem, "question": "Which comes first: 'pear' or 'apple'?", "answer": "apple"}
    assert permuted_problem(offered) is not None  # the default would swap the quoted words
    env = ReasoningGymEnv(**problem)
    assert env.perturb(problem) is None and env.perturb(offered) is None


def test_a_missing_extra_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "reasoning_gym", None)  # import reasoning_gym fails
    with pytest.raises(MissingExtraError, match=r"pip install 'mint-envkit\[reasoning-gym\]'"):
        reasoning_gym_problems("leg_counting", 1, seed=0)


async def test_the_real_token_path_scores_with_the_tasks_scorer():
    builder = _builder(ReasoningGymEnv, "spell_backward", n=4)
    problems = reasoning_gym_problems("spell_backward", 4, seed=0)
    dataset = create_dataset("spell_backward", size=4, seed=0)
    by_question = {p["question"]: p["answer"] for p in problems}
    partial = {  # the reference answer less its last letter: what the task's scorer pays
        p["answer"]: dataset.score_answer(p["answer"][:-1], dataset[p["index"]]) for p in problems
    }
    assert all(0 < value < 1 for value in partial.values())

    def answering(cut: int):
        return lambda messages: f"<answer>{by_question[messages[-1]['content']][:cut]}</answer>"

    right = await ScriptedPolicy(answering(None)).run(builder)
    assert right.mean_reward == 1.0
    assert all(m["correct"] == 1.0 for g in right.groups for m in g.metrics)
    close = await ScriptedPolicy(answering(-1)).run(builder)
    for group in close.groups:
        expected = partial[group.logs[0]["answer"]]
        assert group.rewards == pytest.approx([expected] * 2)
        assert [m["reward/partial"] for m in group.metrics] == pytest.approx([expected] * 2)
        assert [m["correct"] for m in group.metrics] == [0.0, 0.0]
    nothing = await ScriptedPolicy(["no idea", ""]).run(builder)
    assert {r for g in nothing.groups for r in g.rewards} == {0.0}


async def test_the_audit_fails_substring_credit_and_passes_exact_answers():
    gameable = await audit(_builder(ReasoningGymEnv, "leg_counting", n=10), quiet=True)
    assert not gameable.ok
    assert {"buried", "hedge"} <= {f.probe for f in gameable.exploits}
    honest = await audit(_builder(ExactOnly, "leg_counting", n=10), quiet=True)
    assert honest.ok, honest.table()
    by_name = {p.name: p for p in honest.probes}
    assert by_name["correct"].correct_rate == 1.0 and by_name["wrong"].mean_reward == 0.0
    sorting = await audit(_builder(ReasoningGymEnv, "word_sorting", n=10), quiet=True)
    assert sorting.ok, sorting.table()  # its partial credit needs the words in order


@pytest.mark.integration
@pytest.mark.slow  # 22-39 s here at load 5-7 (SmolLM2 runs beside it): the loop starts its own server
@pytest.mark.timeout(300)  # the same under CI's load; 120 s is tight for a server and two evals
async def test_a_task_trains_through_the_loop_with_its_own_scorer(tmp_path):
    from mint_envkit import Config
    from mint_envkit.rl import run_training

    model = "mint-envkit/tiny-qwen3-small"
    builder = DatasetBuilder(
        env=ReasoningGymEnv,
        problems=reasoning_gym_problems("letter_counting", 4, seed=0),
        test_problems=reasoning_gym_problems("letter_counting", 2, seed=1),
        batch_size=2,
        group_size=2,
        model_name=model,
        max_generation_tokens=6,
        score_truncated=True,  # the random model rarely stops: score its cut-off replies too
    )
    config = Config(
        dataset_builder=builder,
        model_name=model,
        log_path=str(tmp_path / "run"),
        learning_rate=1e-3,
        lora_rank=4,
        max_steps=1,
        eval_every=1,
        save_every=0,
        backend="local",
    )
    result = await run_training(config)
    assert result.steps == 1 and result.claim is not None
    metrics = result.final_metrics
    assert metrics["env/all/rollout_errors"] == 0 and metrics["env/all/episodes"] == 4
    for key in ("reward/score", "reward/correct", "reward/partial", "correct", "parsed"):
        assert f"env/all/{key}" in metrics and f"test_final/env/all/{key}" in metrics, key
    rollouts = [json.loads(line) for line in (tmp_path / "run/rollouts.jsonl").open()]
    trained = [r for r in rollouts if r["split"] == "train"]
    assert len(trained) == 4 and {r["problem"]["task"] for r in trained} == {"letter_counting"}
    for record in trained:  # each reward is what the task's scorer gives the parsed answer
        parsed = record["logs"]["parsed"]
        expected = 0.0 if parsed is None else task_score(record["problem"], parsed)
        assert record["reward"] == pytest.approx(expected)
