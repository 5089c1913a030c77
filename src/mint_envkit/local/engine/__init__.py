"""The engine of the embedded backend: models, LoRA training, sampling and checkpoints.

Internal: the public names are :class:`mint_envkit.local.Engine` and its records.

Plain synchronous Python (torch + transformers + peft), no HTTP. The server
(``mint_envkit.local.server``) calls it from one worker thread; every public
method also takes a lock, so calls never overlap.

What it keeps:

- one base model in memory per name, shared by every LoRA client on it: the
  model is wrapped once by ``peft`` and every training client is a named peft
  adapter on it (``set_adapter`` switches between them);
- per training client (``model_id``): its adapter, an AdamW optimizer over the
  adapter parameters only, the step count;
- sampler snapshots (``sampler_id``): frozen copies of adapter tensors (never
  shared with a training adapter), or ``None`` for the plain base model. To
  sample, a snapshot is copied into a scratch adapter of the same LoRA shape;
- checkpoints under ``state_dir/<model_id>/{weights,sampler_weights}/<name>/``
  (``adapter_model.safetensors`` + ``adapter_config.json`` in peft's format,
  ``optimizer.safetensors`` for training state, ``meta.json`` with the base
  model, LoRA config and step), addressed by ``tinker://<model_id>/<kind>/<name>``.

Conventions kept (see docs of the Tinker wire protocol): losses are sums over
tokens and datums; sampled logprobs are those of the distribution each token
was drawn from; a sampler never changes after it is made; gradients accumulate
across ``forward(backward=True)`` calls until ``optim_step``.

LoRA scale: ``lora_alpha = 32`` for every rank (scale ``32 / rank``), the
convention of Tinker's "LoRA without regret", so a learning rate transfers
across ranks.

Modules: :mod:`.core` (the :class:`Engine` front: registries, the lock),
:mod:`.registry` (lookups by id), :mod:`.records` (records and :class:`EngineError`),
:mod:`.inputs` (input checks), :mod:`.adapters` (LoRA adapters, the merged sampling
copy), :mod:`.training` (forward, losses, optimizer), :mod:`.sampling` (snapshots,
generation), :mod:`.checkpoints` (files on disk; :mod:`.checkpoint_files` reads and
checks them, :mod:`.scratch` sweeps what interrupted writes left), :mod:`.budget` (the token budget per
pass, cancellation between chunks).

Example::

    import tempfile

    from mint_envkit.local import Engine

    engine = Engine(state_dir=tempfile.mkdtemp())
    model_id = engine.create_lora("mint-envkit/tiny-qwen3-small", rank=8, seed=0)
    sampler_id, _ = engine.save_for_sampler(model_id, None)
    prompt = [2044, 10, 11]
    seqs = engine.sample(sampler_id, prompt, num_samples=4, max_tokens=8, seed=1)
    data = [{"model_input": prompt + s.tokens[:-1],
             "loss_fn_inputs": {"target_tokens": prompt[1:] + s.tokens,
                                "logprobs": [0.0, 0.0] + s.logprobs,
                                "advantages": [0.0, 0.0] + [1.0] * len(s.tokens)}}
            for s in seqs]
    out = engine.forward(model_id, data, "importance_sampling", None, backward=True)
    engine.optim_step(model_id, learning_rate=3e-3)
    # the internals: the base model's state, the training client, the sampler's snapshot
    state, trainer = engine.registry.trainer(model_id)
    snap = engine.registry.sampler(sampler_id)[1]
"""
