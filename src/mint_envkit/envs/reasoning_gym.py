"""reasoning-gym tasks as envs: its problems, scored by each task's own ``score_answer``.

`reasoning-gym <https://github.com/open-thought/reasoning-gym>`_ generates problems of
about a hundred tasks (``leg_counting``, ``word_sorting``, ``simple_equations``...), each
with its own scorer ``dataset.score_answer(answer, entry) -> float in [0, 1]``.
:func:`reasoning_gym_problems` draws problems of one task; :class:`ReasoningGymEnv`
asks them and scores each reply with that task's scorer, through the env's one scoring
contract (``correct``, the ordering rule, the audit and the baselines all apply):

- the answer is read from ``<answer>...</answer>`` (:func:`~mint_envkit.xml_tag`, the
  last complete pair, stripped: what reasoning-gym's own ``extract_answer`` reads, except
  that nested tags give the innermost content);
- ``correct`` is 1 when the task scores the answer 1.0 (:meth:`ReasoningGymEnv.check`);
- a task's partial credit (0 < score < 1) is the metric ``reward/partial`` and is added
  to the reward with the weight ``ReasoningGymEnv.partial_credit`` (1.0: the reward is
  the task's score; 0.0: only an exact answer pays). Both parts have bounds (0, 1), so the
  ordering rule is checked: a reply without an answer earns 0, what a wrong one earns.

A problem carries what the scorer needs to rebuild the task's entry: ``task``,
``task_config`` (the task's config, with its ``seed`` and ``size``, JSON values only) and
``index``; the env regenerates the entry (cached) and refuses a problem whose question or
answer is not the one regenerated (another reasoning-gym version, or a hand-edited
problem). The entries' ``metadata`` is not stored (many are not JSON-safe).

Needs the ``reasoning-gym`` extra: ``pip install 'mint-envkit[reasoning-gym]'``.

Example::

    from mint_envkit.envs import ReasoningGymEnv, reasoning_gym_problems

    problems = reasoning_gym_problems("leg_counting", 4, seed=0, max_animals=3)
    env = ReasoningGymEnv(**problems[0])
    right = {"role": "assistant", "content": f"<answer>{problems[0]['answer']}</answer>"}
    assert env.score_answer(right).correct
    assert env.score_answer({"role": "assistant", "content": "no idea"}).reward == 0.0
"""

from __future__ import annotations

import difflib
import functools
import json
import math
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs

from mint_envkit.checks import is_integer, is_number
from mint_envkit.envs.single_turn import SingleTurnEnv
from mint_envkit.errors import ConfigError, MissingExtraError, ProblemError
from mint_envkit.parsers import Parser, xml_tag
from mint_envkit.rewards import PartScore, Reward, RewardContext, weighted

INSTALL = "pip install 'mint-envkit[reasoning-gym]' (or: pip install reasoning-gym)"
"""The command that installs what this module needs.

Example::

    "reasoning-gym" in INSTALL   # True
"""

FIELDS = ("question", "answer", "task", "task_config", "index")
"""The fields of a reasoning-gym problem, as :func:`reasoning_gym_problems` writes them.

Example::

    FIELDS[2:]   # ('task', 'task_config', 'index'): what rebuilds the task's entry
"""


def import_reasoning_gym() -> Any:
    """The ``reasoning_gym`` module, or :class:`~mint_envkit.MissingExtraError` naming the extra.

    Example::

        import_reasoning_gym().create_dataset("leg_counting", size=1, seed=0)[0]["answer"]
    """
    try:
        import reasoning_gym
    except ImportError as err:
        raise MissingExtraError(
            f"reasoning-gym tasks need the reasoning-gym package ({err}); run {INSTALL}"
        ) from None
    return reasoning_gym


def _task_names() -> list[str]:
    import_reasoning_gym()
    from reasoning_gym.factory import DATASETS

    return sorted(DATASETS)


def _known_task(task: object) -> str:
    names = _task_names()
    if isinstance(task, str) and task in names:
        return task
    close = difflib.get_close_matches(str(task), names, n=3)
    hint = f"did you mean {', '.join(map(repr, close))}? " if close else ""
    raise ConfigError(
        f"reasoning-gym has no task {task!r}; {hint}it has {len(names)}: "
        f"{', '.join(names[:8])}, ... (reasoning_gym.factory.DATASETS lists them all)"
    )


def _config_key(task: str, config: Mapping[str, Any]) -> str:
    """``config`` as canonical JSON: the cache key, and proof that it is JSON-safe."""
    try:
        return json.dumps(dict(config), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise ConfigError(
            f"the config of reasoning-gym task {task!r} must hold JSON values only (numbers, "
            f"strings, lists, dicts) so problems can be saved and rebuilt; {config!r}: {err}"
        ) from None


@functools.lru_cache(maxsize=32)
def _dataset(task: str, key: str) -> Any:
    """The task's dataset for a config (its canonical JSON), made once per process."""
    reasoning_gym = import_reasoning_gym()
    from reasoning_gym.factory import DATASETS

    try:
        return reasoning_gym.create_dataset(task, **json.loads(key))
    except (TypeError, ValueError, AssertionError) as err:
        import dataclasses

        fields = [f.name for f in dataclasses.fields(DATASETS[task][1])]
        raise ConfigError(
            f"reasoning-gym task {task!r} refused the config {key}: {err or type(err).__name__}; "
            f"its config takes {fields}"
        ) from None


@functools.lru_cache(maxsize=4096)
def _entry(task: str, key: str, index: int) -> dict[str, Any]:
    return _dataset(task, key)[index]


def _answer_text(task: str, index: int, answer: Any) -> str:
    if answer is None:
        raise ProblemError(
            f"reasoning-gym task {task!r} gives no reference answer for item {index}; "
            "pick a task whose items have one"
        )
    return answer if isinstance(answer, str) else str(answer)


def reasoning_gym_problems(task: str, n: int, seed: int, **task_config: Any) -> list[dict]:
    """``n`` problems of the reasoning-gym task ``task``, drawn with ``seed``.

    ``task_config`` is the task's own config (``max_animals=3`` for ``leg_counting``...;
    JSON values only). Each problem is ``{"question", "answer", "task", "task_config",
    "index"}`` (:data:`FIELDS`): the item ``index`` of ``create_dataset(task, size=n,
    seed=seed, **task_config)``, what :class:`ReasoningGymEnv` needs to rebuild the entry
    and score a reply. Problems drawn with another seed are another draw, but may repeat
    a question (small tasks have few): drop repeats yourself when you need disjoint sets.

    Raises:
        ConfigError: an unknown task (close names suggested), a config the task refuses
            (its fields listed), a value that is not JSON, ``seed`` or ``size`` in
            ``task_config``.
        MissingExtraError: reasoning-gym is not installed.

    Example::

        problems = reasoning_gym_problems("basic_arithmetic", 2, seed=1, max_terms=2)
        sorted(problems[0])   # ['answer', 'index', 'question', 'task', 'task_config']
        problems[0]["task_config"]   # {'max_terms': 2, 'seed': 1, 'size': 2}
    """
    if not is_integer(n) or n < 1:
        raise ConfigError(f"reasoning_gym_problems(n={n!r}) needs a whole number >= 1")
    if not is_integer(seed):
        raise ConfigError(f"reasoning_gym_problems(seed={seed!r}) needs a whole number")
    task = _known_task(task)
    for name in ("seed", "size"):
        if name in task_config:
            raise ConfigError(
                f"reasoning_gym_problems got {name}= in the task config; it is the "
                f"function's own argument: reasoning_gym_problems({task!r}, n, seed, ...)"
            )
    key = _config_key(task, {**task_config, "seed": seed, "size": n})
    config = json.loads(key)
    problems = []
    for index in range(n):
        entry = _entry(task, key, index)
        problems.append(
            {
                "question": entry["question"],
                "answer": _answer_text(task, index, entry["answer"]),
                "task": task,
                "task_config": config,
                "index": index,
            }
        )
    return problems


def _rebuilt(problem: Mapping[str, Any]) -> dict[str, Any]:
    """The task's entry of a problem, regenerated from its task, config and index."""
    task, config, index = problem.get("task"), problem.get("task_config"), problem.get("index")
    if not isinstance(config, Mapping):
        raise ProblemError(
            f"a reasoning-gym problem's task_config must be a dict, got {config!r}; make the "
            "problems with reasoning_gym_problems(task, n, seed, ...)"
        )
    size = config.get("size")
    if not is_integer(index) or not is_integer(size):
        raise ProblemError(
            f"a reasoning-gym problem needs an integer index and a task_config with its "
            f"size; got index {index!r}, size {size!r}: make the problems with "
            "reasoning_gym_problems(task, n, seed, ...)"
        )
    if not 0 <= index < size:
        raise ProblemError(
            f"reasoning-gym problem index {index} is outside its task's size {size}; make "
            "the problems with reasoning_gym_problems(task, n, seed, ...)"
        )
    task = _known_task(task)
    return _entry(task, _config_key(task, config), index)


def _check_same(problem: Mapping[str, Any], entry: Mapping[str, Any]) -> None:
    task, index = problem["task"], problem["index"]
    if entry["question"] != problem.get("question") or _answer_text(
        task, index, entry["answer"]
    ) != problem.get("answer"):
        version = getattr(import_reasoning_gym(), "__version__", "?")
        raise ProblemError(
            f"reasoning-gym task {task!r} item {index} (config {problem['task_config']}) is "
            f"no longer the problem's: this reasoning-gym ({version}) generates the question "
            f"{entry['question'][:80]!r}, the problem holds {str(problem.get('question'))[:80]!r}. "
            "The problems were made with another version, or edited: make them again with "
            "reasoning_gym_problems (the task's scorer judges the entry it generates)"
        )


@functools.lru_cache(maxsize=4096)
def _score(task: str, key: str, index: int, reply: str) -> float:
    entry = _entry(task, key, index)
    value = _dataset(task, key).score_answer(reply, entry)
    if not (is_number(value) and math.isfinite(value) and 0 <= value <= 1):
        raise ConfigError(
            f"reasoning-gym task {task!r} scored the answer {reply[:80]!r} {value!r}; a "
            "score must be a number in [0, 1] (a reasoning-gym bug: report it there)"
        )
    return float(value)


def task_score(problem: Mapping[str, Any], answer: str) -> float:
    """The task's own score of ``answer`` (already read from the reply) on ``problem``.

    ``score_answer(answer, entry)`` of the problem's task, on its regenerated entry; a
    value in [0, 1] (anything else is a :class:`~mint_envkit.errors.ConfigError`).
    Cached: the same answer to the same problem is scored once.

    Example::

        problem = reasoning_gym_problems("spell_backward", 1, seed=3)[0]
        task_score(problem, problem["answer"])   # 1.0
    """
    entry = _rebuilt(problem)
    _check_same(problem, entry)
    task = problem["task"]
    return _score(task, _config_key(task, problem["task_config"]), problem["index"], answer)


def task_reward(parser: Parser, partial_credit: float) -> Reward:
    """The reward of a reasoning-gym env: ``correct`` (1 for a score of 1.0) plus
    ``partial_credit`` times the task's partial credit (``partial``: the score when it is
    between 0 and 1, else 0). Both parts read the answer with ``parser`` and have bounds
    (0, 1), and so has the total (``partial`` is 0 when ``correct`` is 1; ``partial_credit``
    is from 0.0 to 1.0, else a :class:`~mint_envkit.errors.ConfigError`). With
    ``partial_credit`` 1.0 the total is the task's score.

    Example::

        reward = task_reward(xml_tag("answer"), 1.0)
        reward.checks_answer, reward.bounds   # (True, (0.0, 1.0))
    """

    def scored(completion: str, context: RewardContext) -> tuple[Any, float]:
        read = parser(completion)
        return read, (task_score(context.problem, read.value or "") if read else 0.0)

    def exact(completion: str, answer: Any, context: RewardContext) -> PartScore:
        read, score = scored(completion, context)
        return PartScore(float(score == 1.0), read)

    def partial(completion: str, answer: Any, context: RewardContext) -> PartScore:
        _read, score = scored(completion, context)
        return PartScore(score if 0.0 < score < 1.0 else 0.0)

    if not (is_number(partial_credit) and 0.0 <= partial_credit <= 1.0):
        raise ConfigError(
            f"partial_credit={partial_credit!r}: the weight of a task's partial credit must be "
            "a number from 0.0 (exact answers only) to 1.0 (the reward is the task's score); "
            "below 0 an unparsed reply would beat a partly right one, above 1 it beats a right one"
        )
    reward = weighted(
        correct=(Reward(name="correct", leaf=exact, checks_answer=True, bounds=(0.0, 1.0)), 1.0),
        partial=(Reward(name="partial", leaf=partial, bounds=(0.0, 1.0)), partial_credit),
    ).named("score")
    # the parts exclude each other (partial is 0 when correct is 1): tighter than the sum's
    return attrs.evolve(reward, bounds=(0.0, 1.0))


ANSWER = xml_tag("answer")


class ReasoningGymEnv(SingleTurnEnv):
    """One reasoning-gym problem (from :func:`reasoning_gym_problems`), scored by its task.

    The system prompt asks for the answer in ``<answer>`` tags; the reward is the task's
    ``score_answer`` of the tags' content (see the module docstring): ``correct`` for a
    score of 1.0, partial credit as ``reward/partial``, weighted by ``partial_credit``.

    Class attributes (a subclass may set them; its reward is made from them, unless it
    sets ``reward_fn`` itself):
        parser: reads the answer (default ``xml_tag("answer")``).
        partial_credit: the weight of the task's partial credit in the reward (1.0: the
            reward is the task's score; 0.0: only a fully right answer pays, the partial
            credit is still reported).
        system_prompt: the instruction (reasoning-gym's own prompts are
            ``reasoning_gym.utils.SYSTEM_PROMPTS``).

    ``perturb`` gives None: the task's scorer judges the entry it generated, so a
    question with its candidates moved has no reference to score against.

    Example::

        class ExactOnly(ReasoningGymEnv):
            partial_credit = 0.0

        ExactOnly.scoring.wrong_answer   # 0.0: an unparsed reply earns what a wrong one does
    """

    system_prompt: ClassVar[str | None] = (
        "Answer the question. Write your final answer inside the tags <answer></answer>, "
        "with nothing else inside them."
    )
    parser: ClassVar[Parser] = ANSWER
    partial_credit: ClassVar[float] = 1.0
    reward_fn: ClassVar[Any] = task_reward(ANSWER, 1.0)
    required_fields: ClassVar[tuple[str, ...]] = FIELDS

    def __init_subclass__(cls, **kwargs: Any) -> None:
        own = vars(cls)
        if "reward_fn" not in own and ("parser" in own or "partial_credit" in own):
            cls.reward_fn = task_reward(cls.parser, cls.partial_credit)
        super().__init_subclass__(**kwargs)

    def __init__(self, **problem: Any) -> None:
        super().__init__(**problem)
        _check_same(self.problem, _rebuilt(self.problem))

    def check(self, parsed: str, answer: Any) -> bool:
        """Whether the task scores ``parsed`` 1.0 on this problem (``answer`` is not read:
        the task's scorer compares with its own entry).

        Example::

            env = ReasoningGymEnv(**reasoning_gym_problems("leg_counting", 1, seed=0)[0])
            env.check(env.answer, env.answer), env.check("-1", env.answer)   # (True, False)
        """
        return task_score(self.problem, parsed) == 1.0

    def perturb(self, problem: Mapping[str, Any]) -> dict[str, Any] | None:
        """None: no counterfactual of a reasoning-gym problem (see the class docstring)."""
        return None
