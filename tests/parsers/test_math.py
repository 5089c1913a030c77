"""math_answer / math_equal / grade_math / math_correct: math-verify in a killable worker."""

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import math_verify  # noqa: F401  (the math extra: a missing one fails here, never skips)
import pytest

from mint_envkit.errors import ConfigError
from mint_envkit.parsers import math_answer, math_equal
from mint_envkit.parsers.math import grade_math, read_math_answer
from mint_envkit.rewards import correct, math_correct

PATHOLOGICAL = r"so \boxed{9^{9^{9^{9}}}}"


@pytest.mark.parametrize(
    ("value", "answer"),
    [
        ("0.5", "1/2"),
        (r"\frac{1}{2}", "0.5"),
        (r"\dfrac12", "0.5"),
        (r"\{2, 1\}", r"\{1,2\}"),
        ("(0,1]", "(0, 1]"),
        (r"5\text{ cm}", "5"),
        ("x = 2", "2"),
        (r"\frac{\sqrt{2}}{2}", r"\frac{1}{\sqrt{2}}"),
        ("1,000", "1000"),
        ("Paris", "Paris"),
    ],
)
def test_math_equal_accepts_equivalent_answers(value: str, answer: str) -> None:
    assert math_equal(value, answer)
    assert math_equal(answer, value)


@pytest.mark.parametrize(
    ("value", "answer"), [("3", "4"), ("0.3333", "1/3"), ("(0,1]", "[0,1]"), ("Paris", "Rome")]
)
def test_math_equal_rejects_different_answers(value: str, answer: str) -> None:
    assert not math_equal(value, answer)


def test_math_answer_statuses() -> None:
    assert math_answer(r"work... so \boxed{\frac{1}{2}}").value == r"\frac{1}{2}"
    assert math_answer("The answer is 42.").value == "42"
    assert math_answer("no answer here").status == "no_match"
    assert math_answer("   ").status == "empty"
    assert math_answer(r"so \boxed{}").status == "empty"
    assert math_answer(r"so \boxed{12").status == "truncated"


def test_correct_with_math_parser_and_check() -> None:
    reward = correct(math_answer, check=math_equal)
    assert reward(r"\boxed{0.5}", r"\frac{1}{2}").total == 1.0
    assert reward(r"\boxed{0.6}", r"\frac{1}{2}").total == 0.0


def test_math_correct_reports_statuses_and_strips_thinking() -> None:
    reward = math_correct()
    assert reward(r"<think>\boxed{3}</think> so \boxed{\{1,2\}}", r"\{2,1\}").total == 1.0
    assert reward(r"<think>\boxed{3}", "3").metrics["parse/correct/unclosed_think"] == 1.0
    assert reward("no idea", "3").metrics["parse/correct/no_match"] == 1.0


def test_pathological_answer_times_out_off_the_main_thread() -> None:
    results: list[object] = []
    started = time.monotonic()
    worker = threading.Thread(
        target=lambda: results.append(grade_math(PATHOLOGICAL, "1", timeout=1.0))
    )
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive()
    ((result, equal),) = results
    assert result.status == "timeout" and result.value is None and not equal
    assert time.monotonic() - started < 30
    # the killed worker is replaced: the next call works
    assert grade_math(r"\boxed{2}", "2")[1]


def test_math_correct_counts_a_timeout_as_unparsed() -> None:
    breakdown = math_correct(timeout=1.0)(PATHOLOGICAL, "1")
    assert breakdown.total == 0.0
    assert breakdown.metrics["parse/correct/timeout"] == 1.0
    assert not math_equal("9^{9^{9^{9}}}", "1", timeout=1.0)


def test_calls_from_many_threads_agree() -> None:
    answers: dict[int, bool] = {}

    def run(i: int) -> None:
        answers[i] = math_equal(f"{i}/2", str(i / 2))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == dict.fromkeys(range(8), True)


def _equal_in_child(queue) -> None:
    queue.put(math_equal("1/2", "0.5"))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_gets_its_own_workers() -> None:
    import multiprocessing

    assert math_equal("2", "2")  # the parent has a worker now
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_equal_in_child, args=(queue,))
    child.start()
    assert queue.get(timeout=60) is True
    child.join(timeout=60)
    assert child.exitcode == 0
    assert math_equal("3", "3")  # the parent's worker still answers


@pytest.mark.parametrize("timeout", [0, -1.0, "5", True])
def test_bad_timeout_is_a_config_error(timeout: object) -> None:
    with pytest.raises(ConfigError, match="timeout"):
        read_math_answer(r"\boxed{1}", timeout=timeout)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="timeout"):
        math_correct(timeout=timeout)  # type: ignore[arg-type]


def test_missing_math_verify_names_the_install_command(tmp_path: Path) -> None:
    (tmp_path / "math_verify.py").write_text("raise ImportError('not really installed')\n")
    src = Path(__file__).resolve().parents[2] / "src"
    code = (
        "from mint_envkit.errors import MissingExtraError\n"
        "from mint_envkit.parsers import math_answer\n"
        "try:\n    math_answer(r'\\boxed{1}')\n"
        "except MissingExtraError as err:\n    print('ERR', err)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(src)])}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert "ERR" in out.stdout and "pip install 'mint-envkit[math]'" in out.stdout, out
