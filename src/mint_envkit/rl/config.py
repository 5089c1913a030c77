"""The configuration of one RL training run.

A :class:`Config` is a frozen, validated value: a bad field fails when the
config is built, before any network call, with a message naming the field.

Example::

    import json

    from mint_envkit import DatasetBuilder, SingleTurnEnv
    from mint_envkit.rl import Config, KLReferenceConfig

    builder = DatasetBuilder(env=SingleTurnEnv, problems=[{"question": "2 + 3?", "answer": "5"}],
                             batch_size=1, group_size=2, model_name="mint-envkit/tiny-qwen3")
    config = Config(
        dataset_builder=builder,  # owns model_name, renderer_name, max_generation_tokens
        learning_rate=3e-3,
        temperature=0.7,
        kl_penalty_coef=0.02,
        kl_reference_config=KLReferenceConfig(base_model="mint-envkit/tiny-qwen3"),
        max_steps=3,
        log_path="runs/arithmetic",
    )
"""

from __future__ import annotations

import os
from typing import Any

import attrs

from mint_envkit.checks import (
    check_flag,
    check_integer,
    flag,
    integer,
    is_integer,
    is_number,
    number,
)
from mint_envkit.errors import ConfigError
from mint_envkit.rl.agreement import builder_value, check_builder_owned
from mint_envkit.rl.kl import KLReferenceConfig
from mint_envkit.rollouts.settings import BackendSettings, SamplingSettings
from mint_envkit.runs.trackers import tracker_names

LOSS_FNS = ("importance_sampling", "ppo")
"""The loss functions the training loop accepts (``Config.loss_fn``).

Example::

    config = Config(dataset_builder=builder, log_path="runs/ppo",  # builder: the module example's
                    loss_fn="ppo", loss_fn_config={"clip_low_threshold": 0.8})
    assert config.loss_fn in LOSS_FNS
"""


def _fspath(value: Any) -> Any:
    try:
        return os.fspath(value)
    except TypeError:
        raise ConfigError(
            f"Config.log_path must be a path (str or os.PathLike), got {value!r}"
        ) from None


_RULE = "mint_envkit.settings"  # field metadata: (the settings class, its field)


def _setting(settings: type, name: str, *, none: str = "", **kwargs: Any) -> Any:
    """A ``Config`` field that one of the settings values owns: it is checked by the rule of
    the settings field ``name`` (:func:`validate_field`) and defaults to its default;
    ``none`` says what None means where ``Config`` alone accepts None (its default then)."""
    default = None if none else attrs.fields_dict(settings)[name].default
    return attrs.field(default=default, metadata={_RULE: (settings, name, none)}, **kwargs)


def _reply_limit(value: int | None, config: Any) -> int:
    # None (the default): the dataset builder's max_generation_tokens, which owns the limit
    if value is None:
        return SamplingSettings().reply_limit(builder_value(config.dataset_builder, "max_tokens"))
    return value


def _check_loss(_instance: Any, _attribute: Any, value: Any) -> None:
    if value not in LOSS_FNS:
        raise ConfigError(f"Config.loss_fn must be one of {', '.join(LOSS_FNS)}; got {value!r}")


def _check_name(field: str):
    def check(_instance: Any, _attribute: Any, value: Any) -> None:
        if value is None and field == "model_name":
            raise ConfigError(
                "Config.model_name is missing: the dataset builder has no model_name; "
                "give the builder one (model_name=...), or Config one for a builder without"
            )
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"Config.{field} must be a non-empty string, got {value!r}")

    return check


@attrs.frozen(kw_only=True)
class Config:
    """Everything one RL run needs. Frozen; validated when built.

    The fields follow tinker-cookbook's ``rl.train.Config`` (the MinT recipe's
    shape), so a recipe ports by renaming little.

    The sampling and backend fields (``max_tokens``, ``temperature``, ``top_p``,
    ``top_k``, ``sampling_seed``, ``max_concurrent_groups``, ``rollout_timeout_s``,
    ``fail_fast``, ``eval_max_tokens``, ``eval_temperature``, ``backend``, ``base_url``,
    ``local_latency_ms``, ``local_batch_invariant``, ``local_threads``,
    ``preflight_timeout_s``) take their defaults and rules from
    :class:`~mint_envkit.rollouts.SamplingSettings` and
    :class:`~mint_envkit.rollouts.BackendSettings` (:attr:`sampling`,
    :attr:`backend_settings`); an error names the field ``Config.<field>``.

    Attributes:
        dataset_builder: a :class:`~mint_envkit.DatasetBuilder` (problems,
            env class, ``batch_size``, ``group_size``, the data-order ``seed``);
            it owns the model, the renderer and the episode limits
            (:mod:`mint_envkit.rl.agreement`).
        model_name: the base model to train, taken from the dataset builder
            (which owns it, with the renderer: ``renderer_name``); given here
            too, it must be the builder's (a :class:`~mint_envkit.errors.ConfigError`
            names both otherwise, :mod:`mint_envkit.rl.agreement`).
        log_path: the run directory (config.json, metrics.jsonl,
            checkpoints.jsonl, rollouts.jsonl). A run started again on the
            same path resumes from its last checkpoint.
        learning_rate, beta1, beta2, eps, weight_decay, grad_clip_norm: Adam.
            ``learning_rate`` must be in (0, 1], betas in [0, 1), ``eps``
            in (0, 1], ``weight_decay`` in [0, 1].
        lora_rank, train_mlp, train_attn, train_unembed: the LoRA adapter.
        max_tokens: the reply limit of each sample. The dataset builder owns it
            (``max_generation_tokens``, which also reserves it in a
            ``max_trajectory_tokens`` context); ``Config`` only reads it back: None (the
            default) takes the builder's, and a value given here must be the builder's.
            A builder without one: 64 (its default,
            :data:`~mint_envkit.builders.dataset.DEFAULT_REPLY_LIMIT`).
        temperature, top_p, top_k: sampling.
        kl_penalty_coef: weight of the KL penalty against the reference
            model; > 0 needs ``kl_reference_config`` (a
            :class:`~mint_envkit.rl.kl.KLReferenceConfig`: a base model, or a
            checkpoint on it with ``load_checkpoint_path``).
        kl_discount_factor: tinker-cookbook's: 0 (default) penalises each sampled
            token by its own KL; ``gamma`` in (0, 1] by the discounted future KL,
            ``sum_k gamma^k`` of the penalties of it and the later tokens of its
            datum (:mod:`mint_envkit.rl.kl`).
        loss_fn: ``"importance_sampling"`` or ``"ppo"``;
            ``loss_fn_config`` passes e.g. PPO clip thresholds.
        num_substeps: optimizer steps per batch (tinker-cookbook's): the
            datums are split in order into ``min(num_substeps, datums)``
            contiguous minibatches (sizes differ by at most one), each one
            ``forward_backward`` + ``optim_step`` at ``learning_rate``; later
            ones train on weights the earlier ones moved, which gives PPO's
            clip something to clip (:mod:`mint_envkit.rl.update`). Default 1.
        compute_post_kl: log tinker-cookbook's ``kl_pre_post_v1|v2``: mean
            (behaviour - updated logprob) and half its mean square, over the
            trained tokens, from one ``forward`` after the update. Under
            ``max_steps_off_policy >= 1`` it includes the samples' staleness
            (``optim/kl_sample_train_*`` is the same before the update).
        mask_parse_failures: zero the advantages (the datums' weights) of
            replies whose parse failed (a ``parse_status`` other than ``"ok"``,
            or the renderer's ``parse_error``), after the KL penalty; counted
            in ``train/masked_parse_failures`` and ``train/masked_tokens``.
            Default False: an unparsed reply's low reward, as a negative
            advantage, is what teaches the format.
        max_steps: stop after this many steps (None: one pass over the data).
        save_every: checkpoint every N steps (0: only the final checkpoint).
        keep_checkpoints: keep the newest N periodic checkpoints and every
            ``final`` one; older ones are deleted through the SDK (so on MinT
            too) and marked ``deleted`` in ``checkpoints.jsonl``. 0 keeps only
            the final one; None keeps all.
        eval_every: evaluate on the test split every N steps (0: never), and once
            more after the last update (``test_final/...``).
        eval_max_tokens: the held-out evals' reply limit (None: the training one); a
            larger one measures where the base model is not cut off.
        eval_temperature: the held-out evals' sampling temperature (None: the training
            ``temperature``; e.g. ``1e-3`` for greedy evals).
        uncut_evals: when the first held-out eval cuts off more than 5% of the replies
            at the reply limit, find a limit where it does not (doubling it, at most 8x)
            and evaluate there too, first and last (``test_uncut/...``,
            ``test_final_uncut/...``), so the run's before/after line compares the task,
            not reply lengths (see :mod:`mint_envkit.evaluation.claims`). Default True.
        base_url: an already running backend; None starts the embedded one
            (backend ``local``) or uses MinT's default endpoint (``mint``).
        backend: ``"auto"`` (``MINT_ENVKIT_BACKEND``, else MinT when
            ``MINT_API_KEY`` is set, else local), ``"mint"`` or ``"local"``.
        sampling_seed: seeds sampling and the LoRA initialisation (the data
            order has its own seed, the dataset builder's ``seed``).
        max_concurrent_groups: how many groups are rolled out at once
            (None: the whole batch).
        fail_fast: raise on the first env error instead of dropping its group.
        rollout_timeout_s: fail a group that has not finished its rollout
            within this many seconds (recorded like an env error; None: no
            limit). It uses asyncio's clock, never signals, so it works off
            the main thread.
        local_latency_ms: added delay per operation of an embedded backend
            started for this run (to rehearse a remote service).
        local_batch_invariant: the embedded backend started for this run
            batches only sample requests of one prompt length, so on CPU a fixed
            seed reproduces the run bit for bit (also with
            ``max_steps_off_policy``). Off (default), prompts of mixed lengths share
            padded batches, which is faster but makes logprobs and metrics differ
            at about 1e-7 from run to run. A server you start yourself takes
            ``--batch-invariant``; MinT makes no such promise.
        local_threads: torch threads of the embedded backend started for this run
            (None: ``MINT_ENVKIT_NUM_THREADS``, else 1, the safe choice on a busy
            machine). On an idle one, raise it for a real model: the learning demo on
            SmolLM2 took 171 s with 1 and 104 s with 2 on 2 cores (docs/benchmarks.md).
        preflight_timeout_s: how long the backend may take to answer at start.
        max_steps_off_policy: bounded staleness (tinker-cookbook's name). 0:
            on-policy, each step samples with its own weights, then trains.
            ``k >= 1``: sampling for the next ``k`` steps runs while the
            current step trains; samples are at most ``k`` weight versions
            old and the importance-sampling loss uses the logprobs of the
            weights that drew each reply, so the staleness is corrected; the
            correction is exact when the sampler draws from the policy's own
            distribution (``temperature == 1``, no ``top_k`` / ``top_p``) or
            the behaviour logprobs are recomputed.
        recompute_behavior_logprobs: recompute the behaviour logprobs of
            every reply as the policy's own (``compute_logprobs`` on the
            sampler that drew it: temperature 1, no truncation), for the
            importance ratio and the KL penalty (sampled logprobs are those
            of the temperature-scaled, ``top_k`` / ``top_p``-truncated and
            renormalised distribution). None (default): on exactly when the
            sampling distribution is not the policy's (``temperature != 1``,
            ``top_k != -1`` or ``top_p < 1``; see
            :func:`~mint_envkit.rl.diagnostics.recomputes_behavior_logprobs`).
        remove_constant_reward_groups: tinker-cookbook's name and default (False in
            0.3.0): keep the groups whose rewards are all equal, with advantages of 0
            (counted in ``env/all/by_group/kept_constant``): they add no reward
            gradient, but the KL penalty shapes them, and the diagnostics cover
            them. A datum whose advantages are then all exactly 0 gets no backward
            pass (a ``forward`` measures it: the same update and metrics in exact
            arithmetic, equal in floating point up to the server's batching,
            :mod:`mint_envkit.rl.update`). True drops them from the update, counted
            in ``env/all/by_group/dropped_<reason>``; a step that trains nothing
            then logs the diagnostics from a ``forward`` pass with no gradient.
        backend_lost_after_s: a backend whose health check has failed for
            this long (15 s; with the probe's own timeout and interval a
            loss is noticed within 25 s) during a run is lost: the run stops with a
            :class:`~mint_envkit.errors.BackendError` naming the URL, the step
            and how to resume (an embedded server the run started is
            restarted once instead, and the run resumes from its last checkpoint).
        load_checkpoint_path: a ``tinker://`` training state (tinker-cookbook's
            name) whose weights a fresh run starts from, with a fresh optimizer,
            e.g. :func:`~mint_envkit.rl.fine_tune_on_rollouts`'s ``state_path``
            (a warm start); the LoRA shape is the checkpoint's. None: a new
            adapter. A run that resumes from its own checkpoint ignores it.
        loggers: experiment trackers that also get every metrics row and the config: any
            of ``"tensorboard"``, ``"wandb"``, ``"mlflow"`` (extras of the same names; a
            missing one is a MissingExtraError here), default ``()``; offline under
            ``log_path`` unless their own settings say otherwise
            (:mod:`mint_envkit.runs.trackers`).

    Example::

        config = Config(dataset_builder=builder, log_path="runs/demo", max_steps=1)
        assert config.model_name == builder.model_name  # a different one is a ConfigError
    """

    dataset_builder: Any = attrs.field()
    model_name: str = attrs.field(
        default=attrs.Factory(lambda self: builder_value(self.dataset_builder, "model_name"), True),
        validator=_check_name("model_name"),
    )
    log_path: str = attrs.field(converter=_fspath, validator=_check_name("log_path"))
    learning_rate: float = attrs.field(
        default=1e-4,
        validator=number(
            low=0, high=1, low_open=True, why="LoRA rates are ~1e-5..1e-2", owner="Config"
        ),
    )
    lora_rank: int = attrs.field(default=32)
    train_mlp: bool = True
    train_attn: bool = True
    train_unembed: bool = True
    max_tokens: int = _setting(
        SamplingSettings, "max_tokens", converter=attrs.Converter(_reply_limit, takes_self=True)
    )
    temperature: float = _setting(SamplingSettings, "temperature")
    top_p: float = _setting(SamplingSettings, "top_p")
    top_k: int = _setting(SamplingSettings, "top_k")
    kl_penalty_coef: float = attrs.field(default=0.0, validator=number(low=0, owner="Config"))
    kl_reference_config: KLReferenceConfig | None = None
    kl_discount_factor: float = attrs.field(
        default=0.0,
        validator=number(
            low=0, high=1, why="0: no discount; the cookbook's default", owner="Config"
        ),
    )
    loss_fn: str = attrs.field(default="importance_sampling", validator=_check_loss)
    loss_fn_config: dict[str, float] | None = None
    num_substeps: int = attrs.field(
        default=1, validator=integer(why="1: one optimizer step per batch", owner="Config")
    )
    compute_post_kl: bool = attrs.field(
        default=False, validator=flag(why="True logs kl_pre_post_v1/v2", owner="Config")
    )
    mask_parse_failures: bool = attrs.field(
        default=False,
        validator=flag(why="True zeroes the weights of unparsed replies", owner="Config"),
    )
    max_steps: int | None = attrs.field(
        default=None, validator=integer(none_ok=True, owner="Config")
    )
    save_every: int = attrs.field(
        default=20, validator=integer(least=0, why="0 turns it off", owner="Config")
    )
    keep_checkpoints: int | None = attrs.field(
        default=3,
        validator=integer(
            least=0, none_ok=True, why="0 keeps only the final one, None keeps all", owner="Config"
        ),
    )
    eval_every: int = attrs.field(
        default=0, validator=integer(least=0, why="0 turns it off", owner="Config")
    )
    eval_max_tokens: int | None = _setting(SamplingSettings, "max_tokens")
    eval_temperature: float | None = _setting(
        SamplingSettings, "temperature", none="the training temperature"
    )
    uncut_evals: bool = attrs.field(
        default=True, validator=flag(why="False: evaluate only at the reply limit", owner="Config")
    )
    base_url: str | None = _setting(BackendSettings, "base_url")
    backend: str = _setting(BackendSettings, "backend")
    sampling_seed: int = _setting(SamplingSettings, "seed")
    beta1: float = attrs.field(
        default=0.9,
        validator=number(low=0, high=1, high_open=True, why="Adam decay", owner="Config"),
    )
    beta2: float = attrs.field(
        default=0.95,
        validator=number(low=0, high=1, high_open=True, why="Adam decay", owner="Config"),
    )
    eps: float = attrs.field(
        default=1e-8,
        validator=number(low=0, high=1, low_open=True, why="Adam epsilon", owner="Config"),
    )
    weight_decay: float = attrs.field(
        default=0.0,
        validator=number(low=0, high=1, why="decoupled decay per step", owner="Config"),
    )
    grad_clip_norm: float = attrs.field(default=0.0, validator=number(low=0, owner="Config"))
    max_concurrent_groups: int | None = _setting(SamplingSettings, "max_concurrent_groups")
    fail_fast: bool = _setting(SamplingSettings, "fail_fast")
    rollout_timeout_s: float | None = _setting(SamplingSettings, "rollout_timeout_s")
    local_latency_ms: float = _setting(BackendSettings, "local_latency_ms")
    local_batch_invariant: bool = _setting(BackendSettings, "local_batch_invariant")
    local_threads: int | None = _setting(BackendSettings, "local_threads")
    preflight_timeout_s: float = _setting(BackendSettings, "preflight_timeout_s")
    max_steps_off_policy: int = attrs.field(
        default=0, validator=integer(least=0, why="0 turns it off", owner="Config")
    )
    recompute_behavior_logprobs: bool | None = attrs.field(default=None)
    remove_constant_reward_groups: bool = attrs.field(default=False)

    @remove_constant_reward_groups.validator
    def _check_remove_constant(self, _attribute: Any, value: Any) -> None:
        check_flag(
            value,
            "Config.remove_constant_reward_groups",
            why="False (the default) keeps groups whose rewards are all equal, True drops them",
        )

    @recompute_behavior_logprobs.validator
    def _check_recompute(self, _attribute: Any, value: Any) -> None:
        check_flag(
            value,
            "Config.recompute_behavior_logprobs",
            none_ok=True,
            why="None: on when temperature != 1, top_k != -1 or top_p < 1",
        )

    backend_lost_after_s: float = attrs.field(
        default=15.0,
        validator=number(low=1, high=600, why="seconds", owner="Config"),
    )

    # Warm start (issue 19: fine-tuning on good rollouts, then RL).
    load_checkpoint_path: str | None = attrs.field(default=None)

    @load_checkpoint_path.validator
    def _check_load(self, _attribute: Any, value: Any) -> None:
        if value is not None and (not isinstance(value, str) or not value.startswith("tinker://")):
            raise ConfigError(
                f"Config.load_checkpoint_path must be a tinker:// state path or None, got "
                f"{value!r}; e.g. the state_path of fine_tune_on_rollouts or checkpoints.jsonl"
            )

    loggers: tuple[str, ...] = attrs.field(default=(), converter=tracker_names)

    @lora_rank.validator
    def _check_rank(self, _attribute: Any, value: Any) -> None:
        check_integer(value, "Config.lora_rank")

    def __attrs_post_init__(self) -> None:
        # The sampling and backend fields: the settings' own rules (one place), named Config.<field>
        for field in attrs.fields(Config):
            if _RULE in field.metadata:
                validate_field(Config, field.name, getattr(self, field.name))
        if uses_kl_reference(self.kl_penalty_coef) and self.kl_reference_config is None:
            raise ConfigError(
                f"Config.kl_penalty_coef is {self.kl_penalty_coef} but Config.kl_reference_config "
                "is None; pass kl_reference_config=KLReferenceConfig(base_model=...) "
                "(usually the same model as model_name) or set kl_penalty_coef=0"
            )
        group_size = getattr(self.dataset_builder, "group_size", None)
        if not is_integer(group_size):
            raise ConfigError(
                "Config.dataset_builder must be a DatasetBuilder (with an integer group_size), "
                f"got {type(self.dataset_builder).__name__}"
            )
        if group_size < 1:
            raise ConfigError(f"Config.dataset_builder.group_size must be >= 1, got {group_size}")
        # The builder owns the model and the reply limit (one check, rl/agreement.py).
        check_builder_owned(
            {"model_name": self.model_name, "max_tokens": self.max_tokens}, self.dataset_builder
        )

    @property
    def sampling(self) -> SamplingSettings:
        """How this run samples: its reply limit, distribution, seed and concurrency.

        Example::

            config.sampling.max_tokens == config.max_tokens  # True (config: the module example's)
        """
        return SamplingSettings(
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            seed=self.sampling_seed,
            max_concurrent_groups=self.max_concurrent_groups,
            rollout_timeout_s=self.rollout_timeout_s,
            fail_fast=self.fail_fast,
        )

    @property
    def eval_sampling(self) -> SamplingSettings:
        """How the held-out evals sample: :attr:`sampling` at ``eval_max_tokens`` and
        ``eval_temperature`` (each the training one when None).

        Example::

            attrs.evolve(config, eval_temperature=1e-3).eval_sampling.temperature   # 0.001
        """
        changes: dict[str, Any] = {"max_tokens": self.eval_max_tokens or self.max_tokens}
        if self.eval_temperature is not None:
            changes["temperature"] = self.eval_temperature
        return attrs.evolve(self.sampling, **changes)

    @property
    def backend_settings(self) -> BackendSettings:
        """Where this run trains: the backend, and the models an embedded server loads
        (the model and the KL reference's).

        Example::

            config.backend_settings.models   # ('mint-envkit/tiny-qwen3',)
        """
        models = [self.model_name]
        if self.kl_reference_config is not None:
            models.append(self.kl_reference_config.base_model)
        return BackendSettings(
            backend=self.backend,
            base_url=self.base_url,
            models=models,
            local_latency_ms=self.local_latency_ms,
            local_batch_invariant=self.local_batch_invariant,
            local_threads=self.local_threads,
            preflight_timeout_s=self.preflight_timeout_s,
        )

    def public_dict(self) -> dict[str, Any]:
        """The config as JSON-ready data, for ``config.json`` (holds no secrets).

        Example::

            text = json.dumps(config.public_dict())  # config: the module example's
            assert json.loads(text)["max_steps"] == 3
        """
        out: dict[str, Any] = {}
        for field in attrs.fields(Config):
            value = getattr(self, field.name)
            if field.name == "dataset_builder":
                describe = getattr(value, "describe", None)
                out[field.name] = describe() if callable(describe) else repr(value)
            elif isinstance(value, KLReferenceConfig):
                out[field.name] = value.public_dict()
            else:
                out[field.name] = value
        return out


def uses_kl_reference(kl_penalty_coef: Any) -> bool:
    """Whether a run with this KL coefficient needs a reference model: ``kl_penalty_coef > 0``.

    :class:`Config` requires ``kl_reference_config`` then, the sweep fills one
    in, and the training loop samples the reference only then.

    Example::

        uses_kl_reference(0.02), uses_kl_reference(0.0)  # (True, False)
    """
    return is_number(kl_penalty_coef) and kl_penalty_coef > 0


def adam_params(config: Config) -> Any:
    """The ``tinker.AdamParams`` of every optimizer step of a run (RL, SFT, distillation):
    ``learning_rate``, ``beta1``, ``beta2``, ``eps``, ``weight_decay``, ``grad_clip_norm``.

    Example::

        adam_params(config).learning_rate == config.learning_rate   # True (the module example's)
    """
    import tinker

    names = ("learning_rate", "beta1", "beta2", "eps", "weight_decay", "grad_clip_norm")
    return tinker.AdamParams(**{name: getattr(config, name) for name in names})


def validate_field(owner: type, name: str, value: Any) -> None:
    """Check one value of an attrs field of ``owner`` with that field's own validator.

    Lets a value be checked before a whole config exists (the sweep's
    ``MINT_RL_*`` variables) with the one message of the class that owns it. A ``Config``
    field that a settings value owns (``temperature``, ``backend``...) is checked by the
    settings field's rule (:mod:`mint_envkit.rollouts.settings`), the message naming it
    ``Config.<name>``.

    Raises:
        ConfigError: the value is invalid (the owner's message).

    Example::

        try:
            validate_field(Config, "temperature", 0.0)
        except ConfigError as err:
            assert str(err).startswith("Config.temperature must be > 0, a finite number >= 0.001")
    """
    field = attrs.fields_dict(owner)[name]
    if _RULE not in field.metadata:
        if field.validator is not None:
            field.validator(None, field, value)
        return
    settings, rule, none = field.metadata[_RULE]
    if value is None and none:
        return
    # the settings field's own validator, its message naming the value Owner.name
    shown = attrs.fields_dict(settings)[rule].evolve(name=f"{owner.__name__}.{name}")
    try:
        shown.validator(None, shown, value)
    except ConfigError as err:
        if not none:
            raise
        raise ConfigError(f"{err} (or None: {none})") from None
