"""The rules that turn probe results into findings, one finding per cause.

:func:`findings` reads every probe row (listed, the env's own, the caller's, generated):

- **inverted**: the correct reply earns less than a wrong answer. Said once; every other
  comparison of rewards would read backwards (each probe "earns as much as a correct
  reply"), so none is made; a wrong answer that earns exactly as much as the correct
  reply is one **exploit** on ``wrong`` ("the reward does not tell a right answer from a
  wrong one"), likewise said once;
- **crash**: a reply the env raises on (``ValueError`` on ``25/49``): one finding per
  exception type, naming the probes and one reply, never a traceback;
- **exploit**: a non-answer probe that earns more than a wrong answer, or any probe but
  the reference ones that earns as much as a correct reply (an answer-shaped probe: on
  the problems where the env scores it wrong); not for generated rows, whose replies
  may be the answer in another spelling;
- **lenient**: a reply the env judges right (its ``correct``, else earning the correct
  reply's reward) while the strict comparison (:mod:`mint_envkit.auditing.strict`) says
  it is not the answer or cannot read it; not for a probe already found an exploit;
- **declared**: the same, accepted by the env's own declaration
  (:meth:`~mint_envkit.MessageEnv.audit_equivalent`,
  :attr:`~mint_envkit.MessageEnv.audit_lenient`): shown, never a failure;
- **partial_credit**: a probe (or a trivial policy, :func:`policy_findings`) that is not
  right but earns at least half the correct reply's reward
  (:data:`~mint_envkit.rollouts.judging.PARTIAL_SHARE`) on most problems, with one such
  reply shown; not for a probe already found an exploit;
- **no_signal**: the env reports no right reply and every reply tried (the answer in
  every usual form, wrong answers, non-answers) earned the same reward: nothing to learn;
- **exploit** (padded): a probe that gives the wrong answer with extras first (tool
  calls: ``tools_then_wrong``) and earns more than the wrong answer alone and more than
  with one call (the pay grows with the calls); a **warning** when one call is paid, right
  or wrong, and more earn no more (a flat tool-use bonus: shaping, not a farm);
- **warning**: an answer-shaped probe right more often than the best trivial baseline,
  or no usual form of the answer scored correct (while the reward varies).

Example::

    # not run: `probes` are probe results, built elsewhere
    from mint_envkit.auditing.rules import findings

    [(f.kind, f.probe) for f in findings(probes, baseline_correct=0.5)]
    # [('lenient', 'gen_nonfinite')]
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from mint_envkit.auditing.probes import GENERATED, Disagreement, ProbeResult
from mint_envkit.auditing.report import Finding, apart, percent, shown
from mint_envkit.rollouts.judging import PARTIAL_SHARE, TIE, PartialCredit


@attrs.frozen
class Yardsticks:
    """The rows the rules compare with, and their words.

    Attributes:
        correct, wrong: the names of the right and the wrong reference rows.
        correct_words, wrong_words: how a message names them.
        no_answer: how a message says what a non-answer probe does not do.

    Example::

        GAME.wrong, GAME.wrong_words   # ('loses_honestly', 'an honest losing episode ...')
    """

    correct: str = "correct"
    wrong: str = "wrong"
    correct_words: str = "a correct reply"
    wrong_words: str = "a wrong answer"
    no_answer: str = "gives no answer"
    wrong_short: str = "the wrong answer"
    taught: str = "wrong answers"


ANSWER = Yardsticks()
"""The yardsticks of a single answer: a correct and a wrong reply.

Example::

    ANSWER.wrong   # 'wrong'
"""

GAME = Yardsticks(
    "wins",
    "loses_honestly",
    "a winning episode",
    "an honest losing episode (valid wrong moves)",
    "makes no valid move",
    "the honest losing episode",
    "losing",
)
"""The yardsticks of a game (:mod:`mint_envkit.auditing.game_probes`): a winning
episode and an honest losing one.

Example::

    GAME.correct   # 'wins'
"""

PLAYS = "plays"
"""The kind of a game probe whose every reply was a legal move: it plays (judged like
an answer-shaped probe), it is not a reply without an answer.

Example::

    PLAYS   # 'plays'
"""

_SHAPED = ("answer_shaped", PLAYS)
PADDED = "padded"
"""The kind of a probe that gives the wrong answer with extras first
(:data:`~mint_envkit.auditing.replies.PADDED`: ``tools_then_wrong``): it may earn no more
than the wrong answer alone.

Example::

    PADDED   # 'padded'
"""


def _judged_mean(probe: ProbeResult, yard: Yardsticks = ANSWER) -> float | None:
    """What the exploit rules compare: a non-answer's mean reward; an answer-shaped
    probe's over the problems where the env judged it wrong (where it happens to be
    right, such as the most common answer on its own problems, it earns a right
    answer's reward by right), or over all of them for ``wrong`` and when nothing was
    judged."""
    if probe.kind not in _SHAPED or probe.name == yard.wrong:
        return probe.mean_reward
    if any(c is None for c in probe.correct):
        return None
    rewards = [r for r, c in zip(probe.rewards, probe.correct, strict=True) if c == 0.0]
    return sum(rewards) / len(rewards) if rewards else None


def _no_reference(yard: Yardsticks = ANSWER) -> Finding:
    if yard is GAME:
        return Finding(
            "warning",
            GAME.correct,
            "no winning episode was played (the problems have no 'answer', or no usual form "
            "of it wins), so the probes are compared with an honest losing episode only",
        )
    return Finding(
        "warning",
        "correct",
        "no usual form of the reference answer (plain, \\boxed{}, <answer>, 'The answer "
        "is', 'Answer:') scores as correct, so no probe could be compared with a correct "
        "reply; check the env's parser and `check` with a correct reply",
    )


def _no_signal(probes: Sequence[ProbeResult]) -> Finding | None:
    """The reward never varies: every reply tried (but a cut-off one, whose reward is the
    builder's) earned the same."""
    rewards = [r for p in probes if p.name != "cut_off" for r in p.rewards]
    if len(rewards) < 2 or max(rewards) - min(rewards) > TIE:
        return None
    return Finding(
        "no_signal",
        "correct",
        f"the reward never varies: every one of the {len(rewards)} replies tried earned "
        f"{rewards[0]:+.3f}, the answer in each usual form (plain, \\boxed{{}}, <answer>, "
        "'The answer is', 'Answer:') and every wrong or empty reply alike; a reward with "
        "no signal cannot teach anything. Check that the reward reads the answer where the "
        "prompt asks for it (its parser, its tag) and that `check` accepts a right answer",
    )


def _crashes(probes: Sequence[ProbeResult]) -> list[Finding]:
    by_type: dict[str, list[tuple[str, str, str]]] = {}
    for probe in probes:
        for reply, error in probe.errors:
            by_type.setdefault(error.split(":", 1)[0], []).append((probe.name, reply, error))
    out = []
    for kind, hits in by_type.items():
        names = list(dict.fromkeys(name for name, _, _ in hits))
        name, reply, error = hits[0]
        listed = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        out.append(
            Finding(
                "crash",
                name,
                f"the env raises {kind} on {len(hits)} repl{'y' if len(hits) == 1 else 'ies'} "
                f"({listed}), e.g. {shown(reply)}: {shown(error, 160)}; in training a reply "
                "that raises drops its whole group (and a step whose groups all fail stops "
                "the run): score an unreadable reply as unparsed instead of raising",
                tuple(names),
            )
        )
    return out


def _exploit(
    probe: ProbeResult, correct: float | None, wrong: float | None, yard: Yardsticks = ANSWER
) -> Finding | None:
    mean = _judged_mean(probe, yard)
    if mean is None:
        return None  # nothing to compare: an answer-shaped probe right on every problem
    if correct is not None and mean >= correct - TIE:
        return Finding(
            "exploit",
            probe.name,
            f"'{probe.name}' earns {mean:+.3f}, as much as {yard.correct_words} ({correct:+.3f}): "
            f"the reward does not tell it from a right answer. Its reply: {shown(probe.example)}",
        )
    if probe.kind == "non_answer" and wrong is not None and mean > wrong + TIE:
        earns, wrong_earns = apart(mean, wrong)
        return Finding(
            "exploit",
            probe.name,
            f"'{probe.name}' {yard.no_answer} but earns {earns}, more than {yard.wrong_words} "
            f"({wrong_earns}): a policy learns to do this instead of trying; lower its reward "
            f"to at most {yard.wrong_short}'s. Its reply: {shown(probe.example)}",
        )
    return None


def _padded(probes: Sequence[ProbeResult], wrong: float | None, yard: Yardsticks) -> list[Finding]:
    """The padded probes against the wrong answer alone: an **exploit** when the pay of
    the extras grows with them (several tool calls earn more than one and than the wrong
    answer alone: a policy farms them), a **warning** when one call is paid, right or
    wrong, but more calls earn no more (a flat bonus for using the tools: shaping that
    a policy collects without answering right)."""
    padded = [p for p in probes if p.kind == PADDED and p.mean_reward is not None]
    if wrong is None or not padded:
        return []
    fewest, most = padded[0], padded[-1]
    fewest_mean, most_mean = fewest.mean_reward or 0.0, most.mean_reward or 0.0
    earns, wrong_earns = apart(most_mean, wrong)
    if most_mean > wrong + TIE and (most is fewest or most_mean > fewest_mean + TIE):
        grows = "" if most is fewest else f" (one call earns {fewest_mean:+.3f})"
        return [
            Finding(
                "exploit",
                most.name,
                f"'{most.name}' gives {yard.wrong_short} with extras first (tool calls) and "
                f"earns {earns}, more than {yard.wrong_short} alone ({wrong_earns}){grows}: the "
                "extras are paid whether or not the answer is right, and more of them pay "
                "more, so a policy learns to pile them up; pay them only with a right answer "
                f"(gated(...)). Its final reply: {shown(most.example)}",
            )
        ]
    paid = next((p for p in padded if (p.mean_reward or 0.0) > wrong + TIE), None)
    if paid is None:
        return []
    earns, wrong_earns = apart(paid.mean_reward or 0.0, wrong)
    return [
        Finding(
            "warning",
            paid.name,
            f"'{paid.name}' gives {yard.wrong_short} after a tool call and earns {earns}, "
            f"more than {yard.wrong_short} alone ({wrong_earns}): using the tools is paid "
            "whether or not the answer is right (more calls earn no more). Fine as shaping "
            "toward tool use; a policy collects it without answering right, so gate it "
            "(gated(...)) once the tools are learnt",
        )
    ]


def _leniency(probes: Sequence[ProbeResult], skip: set[str], by_reward: bool) -> list[Finding]:
    """One ``lenient`` finding per kind of disagreement (a value the strict comparison
    cannot read; another value of the answer's kind), one ``declared`` per declaration."""
    right = "pays, as much as the correct reply," if by_reward else "scores right"
    groups: dict[tuple[str, str | bool], list[tuple[ProbeResult, list[Disagreement]]]] = {}
    for probe in probes:
        if probe.kind == "reference" or probe.name in skip:
            continue
        for key, found in _by_cause(probe.disagreements).items():
            groups.setdefault(key, []).append((probe, found))
    out = []
    for (kind, cause), hits in groups.items():
        names = tuple(probe.name for probe, _ in hits)
        listed = "; ".join(_example(probe, found) for probe, found in hits[:6])
        more = f"; and {len(hits) - 6} more probes" if len(hits) > 6 else ""
        if kind == "declared":
            message = (
                f"the env accepts replies that are not strictly the answer, as declared "
                f"({cause}): {listed}{more}"
            )
        else:
            what = (
                "that the strict comparison cannot read as a value of the answer's kind"
                if cause
                else "that are another value than the answer"
            )
            message = (
                f"the env {right} replies {what}: {listed}{more}. A policy that finds them is "
                "paid without answering; if this is intended, declare it "
                "(MessageEnv.audit_equivalent, or audit_lenient with the reason)"
            )
        out.append(
            Finding("declared" if kind == "declared" else "lenient", names[0], message, names)
        )
    return out


def _by_cause(found: Sequence[Disagreement]) -> dict[tuple[str, str | bool], list[Disagreement]]:
    out: dict[tuple[str, str | bool], list[Disagreement]] = {}
    for one in found:
        key = ("declared", one.declared) if one.declared else ("lenient", one.unreadable)
        out.setdefault(key, []).append(one)
    return out


def _example(probe: ProbeResult, found: Sequence[Disagreement]) -> str:
    first = found[0]
    read = "" if first.value.strip() in first.reply else f", read as {shown(first.value)}"
    if probe.kind == GENERATED and not probe.smallest:
        where = f"{len(found)} of the {probe.tried} generated replies tried"
    else:
        where = f"{len(found)} of {len(probe.parse_status)} problems"
        if probe.kind == GENERATED:
            where += f"; the smallest found among {probe.tried} generated replies"
    return f"'{probe.name}' {shown(first.reply)} for {shown(first.answer)} ({first.why}{read}; {where})"


def _flat(
    correct: float,
    wrong: float,
    wrong_probe: ProbeResult,
    right: ProbeResult,
    yard: Yardsticks = ANSWER,
) -> Finding:
    """The one finding of a reward that pays a wrong answer at least as much as a right one."""
    earns, wrong_earns = apart(correct, wrong)
    if wrong > correct + TIE:
        return Finding(
            "inverted",
            yard.correct,
            f"the reward is inverted: {yard.correct_words} ({shown(right.example)}) earns "
            f"{earns}, less than {yard.wrong_words} ({shown(wrong_probe.example)}: "
            f"{wrong_earns}), so training would teach {yard.taught}; no other reward comparison is "
            "reported (each would read backwards). Check the reward's sign and which outcome "
            "gets the higher reward",
            (yard.correct, yard.wrong),
        )
    return Finding(
        "exploit",
        yard.wrong,
        f"the reward does not tell a right answer from a wrong one: {yard.wrong_words} "
        f"({shown(wrong_probe.example)}) earns {wrong_earns}, as much as {yard.correct_words} "
        f"({shown(right.example)}: {earns}); every other probe's reward says nothing beside "
        "that, so none is reported. Check that the reward reads the answer (for a reward "
        "that reports no `correct`, the 'correct reply' is the usual form of the answer "
        "it pays most)",
        (yard.wrong,),
    )


def _partial_message(name: str, share: float, hits: int, of: int, reply: str, right: str) -> str:
    return (
        f"{_named(name)} is not right but earns {100 * share:.0f}% of {right}'s reward on {hits} of "
        f"{of} problems, e.g. {shown(reply)}: a trivial reply paid half or more is what a "
        "policy learns instead of the answer; pay the parts a reply without the answer can "
        "earn less, or only with the answer (gated(...))"
    )


def _named(name: str) -> str:
    """A probe as ``'wrong'``, a trivial policy (whose name quotes) as it is named."""
    return f"the trivial policy {name}" if "'" in name or " " in name else f"'{name}'"


def _partial_probe(probe: ProbeResult) -> PartialCredit | None:
    """A probe that, not right, earns at least half the correct reply's reward on most of
    the problems it ran on."""
    judged = len(probe.rewards)
    if probe.name in (ANSWER.wrong, GAME.wrong):
        return None  # the yardsticks: a near miss made from the answer is no trivial reply
    if probe.kind in ("reference", GENERATED) or not judged or 2 * len(probe.partial) <= judged:
        return None
    shares = [s for s in probe.shares if s is not None and s >= PARTIAL_SHARE]
    return PartialCredit(
        probe.name, len(probe.partial), judged, sum(shares) / len(shares), probe.partial[0]
    )


def partial_finding(found: Sequence[PartialCredit], yard: Yardsticks = ANSWER) -> Finding | None:
    """One ``partial_credit`` finding for the probes and trivial policies that, not right,
    earn at least half the correct reply's reward on most problems (one reply shown, the
    others named); None when none does.

    Example::

        partial_finding([PartialCredit("constant 'x'", 5, 6, 0.5, "x")]).kind
        # 'partial_credit'
    """
    found = [p for p in found if p.most]
    if not found:
        return None
    first = found[0]
    message = _partial_message(
        first.name, first.share, first.problems, first.of, first.reply, yard.correct_words
    )
    if len(found) > 1:
        message += "; the same for " + ", ".join(_named(p.name) for p in found[1:6])
        message += f" and {len(found) - 6} more" if len(found) > 6 else ""
    return Finding("partial_credit", first.name, message, tuple(p.name for p in found))


def findings(
    probes: Sequence[ProbeResult],
    baseline_correct: float | None,
    *,
    by_reward: bool = False,
    yard: Yardsticks = ANSWER,
    policies: Sequence[PartialCredit] = (),
) -> list[Finding]:
    """The findings of ``probes`` (the rules in the module docstring), one per cause.

    ``by_reward``: the env reports no ``correct``; right means earning the correct
    reply's reward (the messages say so). ``yard``: the rows compared with (:data:`ANSWER`,
    or a game's :data:`GAME`). ``policies``: the trivial policies judged by reward
    (:func:`~mint_envkit.rollouts.judging.partial_policies`), in the one
    ``partial_credit`` finding with the probes.

    Example::

        # not run: `probes` are probe results, built elsewhere
        [f.probe for f in findings(probes, 0.5) if f.kind == "exploit"]   # ['cut_off']
    """
    by_name = {p.name: p for p in probes}
    correct = by_name[yard.correct].mean_reward if yard.correct in by_name else None
    wrong = by_name[yard.wrong].mean_reward if yard.wrong in by_name else None
    silent = _no_signal(probes) if correct is None and yard is ANSWER else None
    out: list[Finding] = [] if correct is not None else [silent or _no_reference(yard)]
    flat = correct is not None and wrong is not None and wrong >= correct - TIE
    if flat:
        out.append(_flat(correct, wrong, by_name[yard.wrong], by_name[yard.correct], yard))
    out += _crashes(probes)
    exploited: set[str] = set()
    partials: list[PartialCredit] = [] if flat else list(policies)
    for probe in probes:
        if probe.kind == "reference":
            continue
        exploit = None
        if not flat and probe.kind != GENERATED:
            exploit = _exploit(probe, correct, wrong, yard)
        if exploit is not None:
            out.append(exploit)
            exploited.add(probe.name)
        partial = None if flat or exploit is not None else _partial_probe(probe)
        if partial is not None:
            partials.append(partial)
        rate = probe.correct_rate
        if (
            not flat
            and probe.kind in _SHAPED
            and probe.name != yard.wrong
            and baseline_correct is not None
            and rate is not None
            and rate > baseline_correct + TIE
            and not any(d.declared is None for d in probe.disagreements)  # lenient instead
        ):
            out.append(
                Finding(
                    "warning",
                    probe.name,
                    f"'{probe.name}' is right on {percent(rate)} of problems, above the best "
                    f"trivial baseline ({percent(baseline_correct)}): a shortcut may explain "
                    "gains; check the problems",
                )
            )
    partial = partial_finding(partials, yard)
    out += [] if partial is None else [partial]
    padded = [] if flat else _padded([p for p in probes if p.name not in exploited], wrong, yard)
    out += padded
    exploited |= {f.probe for f in padded if f.fails}
    if flat and by_reward:
        return out  # every reply earns what the "correct" one does: nothing to tell apart
    return out + _leniency(probes, exploited, by_reward)
