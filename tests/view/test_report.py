"""The viewer's Python side: loading runs and sweeps, embedding, escaping, errors, the command."""

from __future__ import annotations

import html
import json
import re
import warnings
from pathlib import Path

import pytest

import mint_envkit
from mint_envkit.cli import main as cli_main
from mint_envkit.errors import ConfigError
from mint_envkit.view import write_report
from mint_envkit.view.load import find_runs, load_report_data
from mint_envkit.view.report import render_html, script_json


def test_write_report_is_exported_from_the_package():
    assert mint_envkit.write_report is write_report


def test_a_run_is_written_next_to_it_and_embeds_every_record(run_dir, embedded):
    path = write_report(run_dir)
    assert path == run_dir / "view.html"
    page = path.read_text()
    index = embedded(page, "mev-index")
    assert index["kind"] == "run"
    [run] = index["runs"]
    assert run["metrics"]["steps"] == [0, 1]
    assert run["metrics"]["series"]["env/all/reward/total"] == [0.25, 0.5]
    # The derived parse-failure rate is 1 - parsed.
    assert run["metrics"]["series"]["env/all/parse_failure_rate"] == [0.25, 0.25]
    assert [s["step"] for s in run["steps"]] == [0, 1]
    step0 = run["steps"][0]
    assert step0["episodes"] == 3 and step0["errors"] == 1
    assert step0["splits"] == ["test", "train"]
    assert step0["statuses"] == {"ok": 2, "no_match": 1, "error": 1}
    chunk = embedded(page, f"mev-{step0['chunk']}")
    assert len(chunk["records"]) == 4
    replies = [r.get("replies") for r in chunk["records"]]
    assert ["The answer is 57."] in replies


def test_messages_shared_by_a_group_are_stored_once(run_dir):
    data = load_report_data(run_dir)
    chunk = data.chunks["r0s0"]
    system = [m for m in chunk["msgs"] if m["role"] == "system"]
    assert len(system) == 1
    first, second = chunk["records"][:2]
    assert first["prompt"] == second["prompt"]
    assert all(isinstance(i, int) for i in first["prompt"])
    tool_episode = data.chunks["r0s1"]["records"][0]
    roles = [data.chunks["r0s1"]["msgs"][i]["role"] for i in tool_episode["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    # What the messages list holds is not stored twice.
    assert not {"prompt", "replies", "thinking"} & set(tool_episode)
    assert tool_episode["stop_reasons"] == ["stop"]


def test_text_cannot_close_the_script_element(run_dir, embedded):
    page = write_report(run_dir).read_text()
    # Only the page's own script elements end: one per chunk, the index, and the code.
    data = load_report_data(run_dir)
    assert page.count("</script>") == len(data.chunks) + 2
    assert "<!-- x" not in page
    chunk = embedded(page, "mev-r0s0")
    assert any("</script><script>" in (r.get("replies") or [""])[0] for r in chunk["records"])


def test_script_json_escapes_and_reads_back():
    data = {"a": "</script>&<!--\u2028\u2029", "n": [1, 2.5, None, True]}
    text = script_json(data)
    assert not re.search("[<>&\u2028\u2029]", text)
    assert json.loads(text) == data
    assert script_json({"x": [float("nan"), float("inf")]}) == '{"x":[null,null]}'


def test_non_finite_numbers_become_null(tmp_path, embedded):
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"step": 0, "loss": NaN, "r": Infinity, "ok": 1}\n')
    page = write_report(run).read_text()
    series = embedded(page, "mev-index")["runs"][0]["metrics"]["series"]
    assert series == {"ok": [1]}  # non-numbers are not curves


def test_metric_lines_of_one_step_are_merged(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    lines = [
        {"step": 0, "a": 1},
        {"step": 0, "test/b": 2},
        {"step": 1, "a": 3},
        {"step": 0, "a": 5},
    ]
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    metrics = load_report_data(run).index["runs"][0]["metrics"]
    assert metrics["steps"] == [0, 1]
    assert metrics["series"] == {"a": [5, 3], "test/b": [2, None]}


def test_a_torn_last_line_is_skipped_with_a_warning(run_dir):
    with open(run_dir / "rollouts.jsonl", "a") as fh:
        fh.write('{"step": 1, "group": 7, "repl')
    with pytest.warns(UserWarning, match=r"rollouts.jsonl: skipped 1 unreadable line"):
        path = write_report(run_dir)
    assert path.is_file()


def test_a_sweep_lists_its_runs_in_manifest_order(sweep_dir, embedded):
    assert find_runs(sweep_dir) == (
        "sweep",
        [sweep_dir / "kl0p0-g2", sweep_dir / "kl0p02-g2", sweep_dir / "kl0p05-g2"],
    )
    with pytest.warns(UserWarning, match="kl0p05-g2: no steps recorded"):
        page = write_report(sweep_dir).read_text()
    index = embedded(page, "mev-index")
    assert index["kind"] == "sweep"
    assert [r["name"] for r in index["runs"]] == ["kl0p0-g2", "kl0p02-g2"]
    assert [r["status"] for r in index["runs"]] == ["ok", "ok"]
    # Each run's chunks are its own.
    assert index["runs"][1]["steps"][0]["chunk"] == "r1s0"


def test_a_folder_of_runs_without_manifest_is_a_sweep(tmp_path, run_maker):
    run_maker(tmp_path / "b")
    run_maker(tmp_path / "a", steps=1)
    (tmp_path / "notes").mkdir()
    assert find_runs(tmp_path) == ("sweep", [tmp_path / "a", tmp_path / "b"])


def test_a_run_dir_is_a_run(run_dir):
    assert find_runs(run_dir) == ("run", [run_dir])


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda p: p / "missing", "does not exist"),
        (lambda p: (p / "f.txt").write_text("x") and p / "f.txt", "is a file, not a directory"),
        (lambda p: p, "is not a run directory"),
    ],
)
def test_not_a_run_dir(tmp_path, setup, message):
    with pytest.raises(ConfigError, match=message):
        write_report(setup(tmp_path))


def test_an_empty_run_is_an_error(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text("{}")
    (run / "metrics.jsonl").write_text("")
    with pytest.raises(ConfigError, match=r"empty run: metrics\.jsonl and rollouts\.jsonl hold no"):
        write_report(run)


def test_a_sweep_without_steps_is_an_error(tmp_path):
    (tmp_path / "sweep.json").write_text('{"configs": [{"name": "a"}]}')
    (tmp_path / "a").mkdir()
    with pytest.raises(ConfigError, match="no steps recorded yet"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        write_report(tmp_path)


def test_out_may_be_a_file_or_a_directory(run_dir, tmp_path):
    assert write_report(run_dir, tmp_path / "x" / "r.html") == tmp_path / "x" / "r.html"
    (tmp_path / "d").mkdir()
    assert write_report(run_dir, tmp_path / "d") == tmp_path / "d" / "view.html"


def test_the_page_is_self_contained(run_dir):
    page = render_html(load_report_data(run_dir), generated_at="2026-01-01T00:00:00+00:00")
    assert "default-src 'none'" in page  # the CSP forbids every request
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "{{" not in page.split("<script>")[0]  # every template marker was filled
    assert "2026-01-01T00:00:00+00:00" in page


def test_view_command_prints_the_path(run_dir, capsys, monkeypatch):
    opened = []
    monkeypatch.setattr("webbrowser.open", opened.append)
    assert cli_main(["view", str(run_dir), "--open"]) == 0
    out = capsys.readouterr().out.strip()
    assert Path(out) == run_dir / "view.html"
    assert opened == [(run_dir / "view.html").resolve().as_uri()]


def test_view_command_errors_and_warnings(tmp_path, run_dir, capsys):
    assert cli_main(["view", str(tmp_path / "nope")]) == 2
    assert "mint-envkit view: " in capsys.readouterr().err
    with open(run_dir / "metrics.jsonl", "a") as fh:
        fh.write("{torn")
    assert cli_main(["view", str(run_dir)]) == 0
    captured = capsys.readouterr()
    assert "mint-envkit view: warning:" in captured.err and "metrics.jsonl" in captured.err
    assert captured.out.strip().endswith("view.html")


def test_view_is_listed_in_the_help(capsys):
    assert cli_main(["--help"]) == 0
    assert "view" in capsys.readouterr().out


# ------------------------------------------- held-out answers and collapse


def banners(page: str) -> list[str]:
    """The text of the page's collapse banners (written into the markup, not by the script)."""
    found = re.findall(r'<div class="banner collapse"[^>]*>(.*?)</div>', page, re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", text)) for text in found]


def test_a_collapsed_run_gets_a_banner_and_its_answers(run_dir, evals, embedded):
    page = write_report(evals(run_dir, "collapsed")).read_text()
    assert banners(page) == [
        "Answer collapse run, the final evaluation: 100% of its replies give one answer, "
        "1 distinct; held-out correct 0.475 -> 0.575 does not beat the best trivial "
        "baseline 0.575 (always giving the most common answer), so the rise is no evidence "
        "of learning."
    ]
    [run] = embedded(page, "mev-index")["runs"]
    answers = run["answers"]
    assert answers["flag"] == "COLLAPSE" and answers["known"] is True
    assert (answers["split"], answers["step"]) == ("test_final", 1)
    assert (answers["correct_before"], answers["correct_after"]) == (0.475, 0.575)
    assert (answers["baseline"], answers["distinct"], answers["top_share"]) == (0.575, 1, 1.0)
    # The answers/* metrics are curves like every other metric.
    series = run["metrics"]["series"]
    assert series["test/env/all/answers/top_share"] == [0.55, 1.0]
    assert series["test_final/env/all/answers/collapse"] == [None, 1.0]


def test_a_healthy_run_and_an_old_run_get_no_banner(tmp_path, run_maker, evals, embedded):
    healthy = evals(run_maker(tmp_path / "healthy"), "healthy", after=0.8)
    page = write_report(healthy).read_text()
    assert banners(page) == []
    answers = embedded(page, "mev-index")["runs"][0]["answers"]
    assert (answers["flag"], answers["note"], answers["correct_after"]) == ("", None, 0.8)

    old = write_report(run_maker(tmp_path / "old")).read_text()  # no evals, no answers/*
    assert banners(old) == []
    answers = embedded(old, "mev-index")["runs"][0]["answers"]
    assert answers["known"] is False and answers["flag"] == ""
    assert {answers[k] for k in ("baseline", "distinct", "top_share", "collapse")} == {None}


def test_a_sweep_names_the_collapsed_config(sweep_dir, evals, embedded):
    evals(sweep_dir / "kl0p0-g2", "collapsed")
    with pytest.warns(UserWarning, match="no steps recorded"):
        page = write_report(sweep_dir).read_text()
    [banner] = banners(page)
    assert banner.startswith("Answer collapse kl0p0-g2, the final evaluation: 100%")
    runs = embedded(page, "mev-index")["runs"]
    assert [r["answers"]["flag"] for r in runs] == ["COLLAPSE", ""]


def test_many_collapsed_runs_share_one_banner(tmp_path, run_maker, evals):
    for name in "abcd":
        evals(run_maker(tmp_path / name), "collapsed")
    evals(run_maker(tmp_path / "e"), "healthy", after=0.8)
    [banner] = banners(write_report(tmp_path).read_text())
    assert banner.startswith(
        "Answer collapse in 4 of 5 runs: a, b, c, d (see the flag column below). "
        "The first: a, the final evaluation: 100% of its replies give one answer, 1 distinct; "
    )
    one = run_maker(tmp_path / "one")
    evals(one, "collapsed", before=0.0, after=0.0)  # the tiny model: nothing parses
    (one / "metrics.jsonl").write_text(
        (one / "metrics.jsonl").read_text().replace('answers/distinct": 1', 'answers/distinct": 0')
    )
    assert banners(write_report(one).read_text()) == [
        "Answer collapse one, the final evaluation: none of its replies parse to an answer; "
        "held-out correct 0.000 -> 0.000 does not beat the best trivial baseline 0.575 "
        "(always giving the most common answer)."
    ]


@pytest.mark.parametrize("odd", [None, "0.5", "n/a", float("nan"), -1, 2.5, [0.5], {"a": 1}])
def test_odd_answer_values_are_no_values(run_dir, evals, embedded, odd):
    figures = {key: odd for key in ("baseline_correct", "distinct", "top_share", "collapse")}
    page = write_report(evals(run_dir, figures, before=odd, after=odd)).read_text()
    assert banners(page) == []
    answers = embedded(page, "mev-index")["runs"][0]["answers"]
    assert answers["flag"] == "" and answers["note"] is None
    for key in ("correct_before", "correct_after", "baseline", "distinct", "top_share"):
        assert answers[key] is None, key


def test_the_banner_is_escaped(tmp_path, run_maker, evals):
    run = run_maker(tmp_path / "run")
    evals(run, "collapsed")
    with open(run / "metrics.jsonl", "a") as fh:
        fh.write(json.dumps({"step": 1, "test_final/env/all/answers/top": "<b>no</b>"}) + "\n")
    page = write_report(run).read_text()
    [banner] = banners(page)
    assert "give one answer ('<b>no</b>'), 1 distinct" in banner
    head = page.split("<script")[0]
    assert "&lt;b&gt;no&lt;/b&gt;" in head and "<b>no</b>" not in head
