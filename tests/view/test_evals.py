"""An evaluation's folder in the viewer (view/evals.py), and what a run embeds for the headline:
the baseline's name, each episode's problem, an evaluation's figures read as held-out ones."""

from __future__ import annotations

from mint_envkit.runs.files import append_jsonl
from mint_envkit.runs.record import EVAL, Figures
from mint_envkit.sweep import HeldOutAnswers
from mint_envkit.view.evals import is_eval_line, problem_of, problems_by_label
from mint_envkit.view.load import TEXT_LIMIT, load_report_data


def test_results_lines_give_each_record_its_problem():
    lines = [
        {"label": "base", "split": "train", "index": 0, "problem": {"secret": 1}},
        {"label": "base", "split": "test", "index": 0, "problem": {"secret": 2}},
        {"label": "base", "split": "test", "index": 1, "problem": {"secret": 3}},
        {"label": "final", "split": "test", "index": 1, "problem": {"secret": 3}},
        {"label": None, "index": 5, "problem": {}},  # no label
        {"label": "base", "index": True, "problem": {}},  # not an index
        {"label": "base", "index": 6},  # no problem
    ]
    problems = problems_by_label(lines)
    assert set(problems) == {"base", "final"}
    base = problems["base"]
    # Both splits ran: the record's split names one; index 0 is in both, so a plain
    # `eval` record cannot tell which (None), index 1 only in one.
    assert problem_of({"split": "eval:train", "group": 0}, base) == {"secret": 1}
    assert problem_of({"split": "eval:test", "group": 0}, base) == {"secret": 2}
    assert problem_of({"split": "eval", "group": 0}, base) is None
    assert problem_of({"split": "eval", "group": 1}, base) == {"secret": 3}
    assert problem_of({"split": "eval", "group": [1]}, base) is None
    assert problem_of({"split": "eval", "group": 9}, base) is None


def test_an_evaluation_line_reads_as_a_final_held_out_one():
    line = {"step": 0, "eval/correct": 0.5, "eval/mean_reward": 0.1, "eval/pass@2": 0.75,
            "eval/answers/baseline_name": "first option", "eval/answers/collapse": 0.0}  # fmt: skip
    assert is_eval_line(line)
    assert not is_eval_line({"step": 0, "eval/correct": 0.5, "test/env/all/correct": 0.5})
    figures = Figures.from_metrics(line, EVAL)
    assert (figures.correct, figures.mean_reward, figures.pass_at) == (0.5, 0.1, {"2": 0.75})
    answers = HeldOutAnswers.from_figures(None, figures, split=EVAL, step=0)
    assert (answers.baseline_name, answers.collapse, answers.correct_after) == (
        "first option",
        False,
        0.5,
    )


def test_an_eval_folder_is_an_eval_page(eval_dir):
    data = load_report_data(eval_dir)
    assert data.index["kind"] == "eval" and data.notes == []
    base, final = data.index["runs"]
    assert (base["name"], base["eval"], final["name"]) == ("base", True, "final")
    # The figures as the held-out columns read them; the name from config.json (its
    # metrics line has no text figures).
    answers = final["answers"]
    assert (answers["correct_after"], answers["baseline"]) == (2 / 3, 0.0)
    assert answers["baseline_name"] == "constant '50'" and answers["correct_before"] is None
    assert final["metrics"]["texts"] == {"eval/answers/baseline_name": ["constant '50'"]}
    # Every episode has its problem, stored once per step.
    chunk = data.chunks["r0s0"]
    assert chunk["problems"] == [{"secret": 37}, {"secret": 64}, {"secret": 7, "high": 10}]
    assert [r["problem"] for r in chunk["records"]] == [0, 0, 1, 1, 2, 2]


def test_a_checkpoint_folder_alone_finds_its_problems_beside_it(eval_dir):
    data = load_report_data(eval_dir / "final")
    assert data.index["kind"] == "eval"
    assert data.chunks["r0s0"]["problems"][1] == {"secret": 64}


def test_a_training_run_is_no_eval_and_embeds_its_baseline_names(run_dir, evals):
    evals(run_dir, "collapsed")
    long_name = "x" * (TEXT_LIMIT + 50)
    append_jsonl(
        run_dir / "metrics.jsonl",
        {"step": 1, "test_final/env/all/answers/baseline_name": long_name,
         "test/env/all/answers/baseline_name": "constant 'no'", "note": "not an answer text"},
    )  # fmt: skip
    data = load_report_data(run_dir)
    [run] = data.index["runs"]
    assert data.index["kind"] == "run" and run["eval"] is False
    texts = run["metrics"]["texts"]
    assert set(texts) == {
        "test/env/all/answers/baseline_name",
        "test_final/env/all/answers/baseline_name",
    }
    assert texts["test/env/all/answers/baseline_name"] == [None, "constant 'no'"]
    clipped = texts["test_final/env/all/answers/baseline_name"][1]
    assert len(clipped) == TEXT_LIMIT and clipped.endswith("…")
    assert run["answers"]["baseline_name"] == clipped  # the final evaluation's
    assert data.chunks["r0s0"]["problems"] == []  # no record has one


def test_a_record_problem_is_stored_once_per_step(run_dir):
    lines = (run_dir / "rollouts.jsonl").read_text().splitlines()
    secret = ', "problem": {"secret": 41}}'
    lines[:2] = [line[:-1] + secret for line in lines[:2]]
    (run_dir / "rollouts.jsonl").write_text("\n".join(lines) + "\n")
    chunk = load_report_data(run_dir).chunks["r0s0"]
    assert chunk["problems"] == [{"secret": 41}]
    assert [r.get("problem") for r in chunk["records"]] == [0, 0, None, None]
