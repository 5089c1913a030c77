"""Reverse-KL distillation: the student's gradient of KL(student || reference), per position.

MinT's ``forward_backward_reverse_kl``. Each datum has a student input (the
training client's tokens, with ``target_tokens`` and ``weights`` per position, as
a ``forward_backward`` datum) and a reference input (the reference model's
tokens: the same completion after a prompt that may differ, e.g. with
privileged context). The two are aligned at the end: student position ``t``
is reference position ``t + len(reference) - len(student)``.

At every position ``t`` with ``weights[t] != 0`` the loss holds the exact
full-vocabulary reverse KL at temperature ``T``::

    p_s = softmax(z_s[t] / T)        (the student: the training client's adapter, with grad)
    p_r = softmax(z_r[t'] / T)       (the reference: a checkpoint or a base model, no grad)
    KL_t = sum_v p_s(v) * (log p_s(v) - log p_r(v))

and the loss of a datum is ``sum_t weights[t] * KL_t`` (a sum, as Tinker's
losses). Its gradient is added to the client's accumulated gradient (an
``optim_step`` follows). The target tokens do not enter the loss; they must be
the completion the reference input ends with (checked by the server).

Example::

    from mint_envkit.local.engine import distill

    # the package example's client, its weights saved as the teacher
    teacher = engine.save_state(model_id, "teacher", kind="sampler")
    kl_data = [{"student_input": [1, 2, 3], "reference_input": [9, 1, 2, 3],
                "target_tokens": [2, 3, 4], "weights": [0.0, 1.0, 1.0]}]
    out = distill.forward_backward_reverse_kl(engine, model_id, teacher, kl_data,
                                              temperature=1.0)
    out.losses, out.metrics["reverse_kl:mean"]
    assert len(out.losses) == 1 and out.metrics["reverse_kl:mean"] >= 0
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import torch

from mint_envkit.local.bounds import temperature_problem
from mint_envkit.local.models.loader import resolve_model_name

from .adapters import activate, use_snapshot
from .budget import RELEASE_AFTER_TOKENS, release_memory
from .core import Engine, _locked
from .inputs import float_list, int_list
from .numerics import all_finite, causal_lm, decoder_of, head_logits
from .records import BaseModelState, EngineError, Snapshot, context_length


@attrs.frozen
class ReverseKLOutput:
    """What :func:`forward_backward_reverse_kl` returns.

    Attributes:
        losses: per datum, ``sum_t weights[t] * KL_t`` (its share of the loss).
        metrics: ``loss:sum``, ``loss:mean`` (per datum), ``reverse_kl:mean`` (the
            unweighted mean of ``KL_t`` over the positions with a non-zero weight),
            ``num_samples:sum`` (datums), ``num_tokens:sum`` (those positions).

    Example::

        out.losses[0], out.metrics["reverse_kl:mean"]
        assert out.metrics["num_samples:sum"] == 1 and out.metrics["num_tokens:sum"] == 2
    """

    losses: list[float]
    metrics: dict[str, float]


def reference_snapshot(engine: Engine, reference: str) -> Snapshot:
    """The reference weights: a ``tinker://`` checkpoint, or a base model name (no adapter).

    Example::

        assert reference_snapshot(engine, "mint-envkit/tiny-qwen3").tensors is None
    """
    if reference.startswith("tinker://"):
        return engine._checkpoints.snapshot(reference, engine.registry.base)
    base = engine.registry.base(reference)
    return Snapshot(base=base.loaded.name, spec=None, tensors=None, source=reference)


def _check(i: int, datum: Any, vocab: int, max_len: int) -> dict[str, list[Any]]:
    if not isinstance(datum, dict):
        raise EngineError(f"data[{i}] must be a dict, got {type(datum).__name__}")
    student = int_list(datum.get("student_input"), f"data[{i}].student_input")
    reference = int_list(datum.get("reference_input"), f"data[{i}].reference_input")
    targets = int_list(datum.get("target_tokens"), f"data[{i}].target_tokens")
    weights = float_list(datum.get("weights"), f"data[{i}].weights")
    n = len(student)
    if n == 0 or not reference:
        raise EngineError(f"data[{i}]: student_input and reference_input must not be empty")
    for key, values in (("target_tokens", targets), ("weights", weights)):
        if len(values) != n:
            raise EngineError(
                f"data[{i}].{key} has {len(values)} entries but student_input has {n} tokens; "
                "give one per student_input position"
            )
    for key, values in (("student_input", student), ("reference_input", reference)):
        if len(values) > max_len:
            raise EngineError(
                f"data[{i}].{key} has {len(values)} tokens, more than the model's context "
                f"of {max_len}"
            )
    for key, values in (
        ("student_input", student),
        ("reference_input", reference),
        ("target_tokens", targets),
    ):
        bad = [t for t in values if t < 0 or t >= vocab]
        if bad:
            raise EngineError(
                f"data[{i}].{key} holds token id {bad[0]} outside the vocabulary [0, {vocab})"
            )
    positions = [t for t, w in enumerate(weights) if w != 0.0]
    offset = len(reference) - n
    if positions and positions[0] + offset < 0:
        raise EngineError(
            f"data[{i}]: reference_input ({len(reference)} tokens) is too short to hold the "
            f"weighted positions of student_input ({n} tokens, first weighted position "
            f"{positions[0]}); the two are aligned at their ends"
        )
    return {
        "student": student,
        "reference": reference,
        "positions": positions,
        "weights": [weights[t] for t in positions],
        "ref_positions": [t + offset for t in positions],
    }


def _logits_at(model: Any, tokens: list[int], positions: list[int], dev: Any) -> torch.Tensor:
    """(P, V) float32 logits of ``model`` after ``tokens[: p + 1]`` for each ``p`` in positions."""
    ids = torch.tensor([tokens], dtype=torch.long, device=dev)
    index = torch.tensor(positions, dtype=torch.long, device=dev)
    body = decoder_of(model)
    if body is None:
        return model(input_ids=ids, use_cache=False).logits[0].index_select(0, index).float()
    hidden = body(input_ids=ids, use_cache=False).last_hidden_state[0].index_select(0, index)
    return head_logits(causal_lm(model).get_output_embeddings(), hidden)


def _reverse_kl(student: torch.Tensor, reference: torch.Tensor, temperature: float) -> torch.Tensor:
    """(P,) KL(softmax(student / T) || softmax(reference / T)) over the vocabulary."""
    log_s = torch.log_softmax(student / temperature, dim=-1)
    log_r = torch.log_softmax(reference / temperature, dim=-1)
    return (log_s.exp() * (log_s - log_r)).sum(dim=-1)


def _one_datum(
    base: BaseModelState,
    snap: Snapshot,
    adapter: str,
    item: dict[str, list[Any]],
    temperature: float,
) -> tuple[float, float]:
    """Add one datum's gradient; return ``(sum_t w_t * KL_t, sum_t KL_t)``."""
    if not item["positions"]:
        return 0.0, 0.0
    model = base.loaded.model
    dev = base.loaded.device
    with torch.no_grad(), use_snapshot(base, snap) as ref_model:
        ref_logits = _logits_at(ref_model, item["reference"], item["ref_positions"], dev)
    activate(base, adapter)
    logits = _logits_at(model, item["student"], item["positions"], dev)
    kl = _reverse_kl(logits, ref_logits, temperature)
    weights = torch.tensor(item["weights"], dtype=torch.float32, device=dev)
    loss = (weights * kl).sum()
    loss.backward()
    return float(loss.detach()), float(kl.detach().sum())


@_locked
def forward_backward_reverse_kl(
    engine: Engine,
    model_id: str,
    reference: str,
    data: Sequence[dict[str, Any]],
    *,
    temperature: float = 1.0,
) -> ReverseKLOutput:
    """Add the gradient of ``sum_t weights[t] * KL(student_t || reference_t)`` to ``model_id``.

    See the module docstring for the definition. ``reference`` is a ``tinker://``
    checkpoint path or a base model name; it must be on the training client's base
    model. A cancel or a failure leaves the gradient as it was before the call.

    Raises:
        EngineError: (user) bad data (the message names ``data[i].<field>``), a
            reference on another base model, a temperature outside sampling's bound
            (finite, at least ``bounds.TEMPERATURE_MIN``).

    Example::

        out = forward_backward_reverse_kl(engine, model_id, "mint-envkit/tiny-qwen3-small",
                                          kl_data, temperature=1.0)
        engine.optim_step(model_id, learning_rate=1e-3)
    """
    base, trainer = engine.registry.trainer(model_id)
    problem = temperature_problem(temperature)
    if problem is not None:
        raise EngineError(problem)
    if not isinstance(data, Sequence) or isinstance(data, (str, bytes)) or not data:
        raise EngineError("data must be a non-empty list of ReverseKLDatum")
    snap = reference_snapshot(engine, reference)
    if resolve_model_name(snap.base) != resolve_model_name(trainer.base):
        raise EngineError(
            f"reference_model_path {reference!r} is on base model {snap.base!r} but model_id "
            f"{model_id} trains {trainer.base!r}; the reference must share the student's base "
            "model (and tokenizer)"
        )
    vocab, max_len = base.loaded.vocab_size, context_length(base)
    items = [_check(i, d, vocab, max_len) for i, d in enumerate(data)]
    control = engine._control
    saved = {k: p.grad.clone() for k, p in trainer.params.items() if p.grad is not None}
    losses: list[float] = []
    kl_sum = 0.0
    try:
        for item in items:
            control.check()
            loss, kl = _one_datum(base, snap, trainer.adapter, item, float(temperature))
            losses.append(loss)
            kl_sum += kl
        if not all_finite([*losses, kl_sum]):
            raise EngineError(
                f"the reverse KL of model_id {model_id} against {reference!r} is not finite "
                f"(losses {losses[:4]}), so nothing was accumulated: the student's or the "
                "reference's weights overflow the model"
            )
    except BaseException:
        for key, p in trainer.params.items():  # no partial gradient is left behind
            p.grad = saved.get(key)
        raise
    finally:
        activate(base, trainer.adapter)
        if sum(len(i["student"]) + len(i["reference"]) for i in items) > RELEASE_AFTER_TOKENS:
            release_memory(base.loaded.device)
    positions = sum(len(i["positions"]) for i in items)
    return ReverseKLOutput(
        losses=losses,
        metrics={
            "loss:sum": sum(losses),
            "loss:mean": sum(losses) / len(losses),
            "reverse_kl:mean": kl_sum / positions if positions else 0.0,
            "num_samples:sum": float(len(items)),
            "num_tokens:sum": float(positions),
        },
    )
