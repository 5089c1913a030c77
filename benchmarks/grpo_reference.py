"""A plain GRPO loop (HF generate + peft, no server) on a local model: the reference to beat.

What it answers: can this model learn this task on this machine, with this parser,
system prompt and learning rate? It is the yardstick for the embedded backend: a
run through the SDK and the server should learn about as fast.

Per step: ``--problems`` training problems ("What is a + b?", a and b in
``0..--max-operand``), ``--group`` samples each at ``--temperature``, reward
``--reward-correct`` / ``--reward-incorrect`` / ``--reward-unparsed`` from the chosen
parser, advantage = reward - group mean, one AdamW step on the token-mean
policy-gradient loss over the groups whose rewards differ (the others have advantage 0),
LoRA on every linear layer. At a temperature below 1 the samples come from the
sharpened distribution while the loss uses the model's own logprobs (a common shortcut;
the gradient is then not exactly on-policy).
Greedy correctness is measured on ``--eval-n`` held-out problems, drawn with another
seed and never trained on, before the first step and after the last (and every
``--eval-every`` steps).

    nice -n 5 python benchmarks/grpo_reference.py --steps 20 --lr 3e-4 --parser last_number
    # what was measured on a busy 2-core machine (a shorter, cheaper run):
    nice -n 5 python benchmarks/grpo_reference.py --steps 10 --lr 5e-4 --parser last_number \
        --system calculator --max-tokens 16 --temperature 0.7 --out run.json

Prints one line per step and writes the results as JSON to ``--out`` when given.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

SYSTEM_PROMPTS = {
    "calculator": "You are a precise calculator. Reply with only the final number.",
    "answer": "Solve the problem. End your reply with the answer as a number.",
    "none": "",
}


def make_problems(n: int, seed: int, max_operand: int, exclude: set[tuple[int, int]]) -> list:
    """``n`` distinct (a, b) pairs not in ``exclude``, drawn with ``seed``."""
    rng = random.Random(seed)
    pairs: list[tuple[int, int]] = []
    seen = set(exclude)
    while len(pairs) < n:
        pair = (rng.randint(0, max_operand), rng.randint(0, max_operand))
        if pair not in seen:
            seen.add(pair)
            pairs.append(pair)
    return pairs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="mint-envkit/smollm2-135m-instruct")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--problems", type=int, default=8, help="training problems per step")
    p.add_argument("--group", type=int, default=4, help="samples per problem")
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--rank", type=int, default=16)
    p.add_argument("--parser", choices=["last_number", "first_number"], default="last_number")
    p.add_argument("--system", choices=sorted(SYSTEM_PROMPTS), default="calculator")
    p.add_argument("--max-operand", type=int, default=30)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature")
    p.add_argument("--reward-correct", type=float, default=1.0)
    p.add_argument("--reward-incorrect", type=float, default=0.0)
    p.add_argument("--reward-unparsed", type=float, default=0.0)
    p.add_argument("--eval-n", type=int, default=40)
    p.add_argument("--eval-every", type=int, default=0, help="0: only at start and end")
    p.add_argument("--eval-only", action="store_true", help="evaluate the base model and stop")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)

    t_start = time.perf_counter()
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoTokenizer

    from mint_envkit.local.models.common import pin_threads
    from mint_envkit.local.models.loader import load_base_model
    from mint_envkit.parsers import first_number, last_number, same_number

    pin_threads(args.threads)
    torch.manual_seed(args.seed)
    parse = {"last_number": last_number, "first_number": first_number}[args.parser]
    loaded = load_base_model(args.model, device="cpu")
    tok = AutoTokenizer.from_pretrained(loaded.tokenizer_dir)
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    eos_id = tok.convert_tokens_to_ids("<|im_end|>")
    system = SYSTEM_PROMPTS[args.system]
    t_loaded = time.perf_counter()

    eval_pairs = make_problems(args.eval_n, 10_000 + args.seed, args.max_operand, set())
    rng = random.Random(args.seed)
    held_out = set(eval_pairs)

    def prompt(a: int, b: int) -> str:
        messages = [{"role": "user", "content": f"What is {a} + {b}?"}]
        if system:
            messages.insert(0, {"role": "system", "content": system})
        return tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    def score(text: str, a: int, b: int) -> tuple[float, bool, bool]:
        result = parse(text)
        if not result:
            return args.reward_unparsed, False, False
        ok = same_number(result.value, str(a + b))
        return (args.reward_correct if ok else args.reward_incorrect), ok, True

    def generate(model: Any, pairs: list, *, sample: bool, n: int) -> tuple[Any, Any, list]:
        texts = [prompt(a, b) for a, b in pairs for _ in range(n)]
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.no_grad():
            out = model.generate(
                **enc,
                max_new_tokens=args.max_tokens,
                do_sample=sample,
                temperature=args.temperature if sample else None,
                top_p=None,
                top_k=None,
                eos_token_id=eos_id,
                pad_token_id=tok.pad_token_id,
            )
        completion = out[:, enc["input_ids"].shape[1] :]
        replies = [tok.decode(c, skip_special_tokens=True) for c in completion]
        return enc, completion, replies

    def evaluate(model: Any) -> dict[str, float]:
        model.eval()
        _, _, replies = generate(model, eval_pairs, sample=False, n=1)
        scored = [score(r, a, b) for r, (a, b) in zip(replies, eval_pairs, strict=True)]
        return {
            "correct": sum(s[1] for s in scored) / len(scored),
            "parsed": sum(s[2] for s in scored) / len(scored),
            "example": replies[0],
        }

    lora = LoraConfig(
        r=args.rank,
        lora_alpha=32,
        lora_dropout=0.0,
        target_modules=[
            "q_proj",
            "k_proj",
            "v_proj",
            "o_proj",
            "gate_proj",
            "up_proj",
            "down_proj",
        ],
    )
    for param in loaded.model.parameters():
        param.requires_grad_(False)
    model = get_peft_model(loaded.model, lora)
    optim = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=args.lr)

    results: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}, "steps": []}
    results["load_s"] = round(t_loaded - t_start, 1)
    results["eval_start"] = evaluate(model)
    print(f"load {results['load_s']}s  eval@0 {results['eval_start']}", flush=True)
    if args.eval_only:
        print(json.dumps(results, indent=1))
        return 0
    for step in range(args.steps):
        t0 = time.perf_counter()
        pairs = []
        while len(pairs) < args.problems:
            pair = (rng.randint(0, args.max_operand), rng.randint(0, args.max_operand))
            if pair not in held_out:
                pairs.append(pair)
        model.eval()
        enc, completion, replies = generate(model, pairs, sample=True, n=args.group)
        scored = [score(r, *pairs[i // args.group]) for i, r in enumerate(replies)]
        rewards = torch.tensor([s[0] for s in scored])
        groups = rewards.view(args.problems, args.group)
        adv = (groups - groups.mean(dim=1, keepdim=True)).view(-1)
        live = int((groups.std(dim=1) > 0).sum())
        t_sample = time.perf_counter() - t0
        loss_value = 0.0
        if live:
            # Only the groups whose rewards differ carry a gradient (advantage 0 otherwise).
            rows = torch.nonzero((groups.std(dim=1) > 0).repeat_interleave(args.group)).squeeze(1)
            adv, completion = adv[rows], completion[rows]
            enc = {k: v[rows] for k, v in enc.items()}
            model.train()
            ids = torch.cat([enc["input_ids"], completion], dim=1)
            # Completion tokens count up to and including the first end-of-turn token.
            is_eos = (completion == eos_id).long()
            comp_mask = (is_eos.cumsum(dim=1) - is_eos) == 0
            attn = torch.cat([enc["attention_mask"], comp_mask.long()], dim=1)
            logits = model(input_ids=ids, attention_mask=attn).logits
            start = enc["input_ids"].shape[1]
            logp = torch.log_softmax(logits[:, start - 1 : -1].float(), dim=-1)
            tok_logp = logp.gather(-1, completion.unsqueeze(-1)).squeeze(-1)
            mask = comp_mask.float()
            loss = -(adv.unsqueeze(1) * tok_logp * mask).sum() / mask.sum().clamp(min=1)
            optim.zero_grad()
            loss.backward()
            optim.step()
            loss_value = float(loss.detach())
        row = {
            "step": step,
            "reward": round(float(rewards.mean()), 4),
            "correct": sum(s[1] for s in scored) / len(scored),
            "parsed": sum(s[2] for s in scored) / len(scored),
            "live_groups": live,
            "loss": round(loss_value, 4),
            "sample_s": round(t_sample, 1),
            "step_s": round(time.perf_counter() - t0, 1),
            "example": replies[0][:60],
        }
        if args.eval_every and (step + 1) % args.eval_every == 0 and step + 1 < args.steps:
            row["eval"] = evaluate(model)
        results["steps"].append(row)
        print(json.dumps(row), flush=True)
    results["eval_end"] = evaluate(model)
    results["wall_s"] = round(time.perf_counter() - t_start, 1)
    print(f"eval@end {results['eval_end']}  wall {results['wall_s']}s", flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
