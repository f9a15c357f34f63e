"""A multi-turn workload: N conversations of K turns, each answer fed back into its conversation's next turn.

Each user turn is seeded filler text of a stated number of words; the first user message of a
conversation carries the run's salt, so a conversation starts cold and each later turn can reuse its own
history from the server's prefix cache (what a chat kept within a retention interval does), never
another conversation's. Items are the user turns in the order an alternating run sends them.
"""

from __future__ import annotations

from typing import Literal

from forklift.errors import UsageError
from forklift.workload.items import PRESETS, WorkItem, Workload
from forklift.workload.synthetic import filler_text

Interleave = Literal["alternating", "concurrent"]
MAX_CONVERSATIONS = 1_000
MAX_TURNS = 100


def conversation_workload(
    *,
    conversations: int,
    turns: int,
    user_words: int,
    output_tokens: int,
    interleave: str = "alternating",
    preset: str = "default",
    seed: int = 0,
    salt_nonce: str = "forklift",
) -> Workload:
    """`conversations` x `turns` user turns; alternating: one request in flight, the conversations taking turns."""
    if not 1 <= conversations <= MAX_CONVERSATIONS:
        raise UsageError(f"--conversations {conversations}: expected 1 to {MAX_CONVERSATIONS}")
    if not 1 <= turns <= MAX_TURNS:
        raise UsageError(f"--turns {turns}: expected 1 to {MAX_TURNS}")
    if user_words < 1 or output_tokens < 1:
        raise UsageError(f"--synthetic {user_words}:{output_tokens}: a turn's input and output must be positive")
    if interleave not in ("alternating", "concurrent"):
        raise UsageError(f"--interleave {interleave!r}: expected alternating or concurrent")
    if preset not in PRESETS:
        raise UsageError(f"sampling preset {preset!r}: expected one of {', '.join(PRESETS)}")
    items = tuple(
        WorkItem(
            id=f"conv{conversation:03d}-t{turn:02d}",
            messages=[
                {"role": "user", "content": filler_text(seed * 1_000_003 + conversation * 1_009 + turn, user_words)}
            ],
            max_tokens=output_tokens,
            ignore_eos=True,
            conversation=conversation,
            turn=turn,
        )
        for turn in range(1, turns + 1)
        for conversation in range(conversations)
    )
    return Workload(
        name=f"conversations-{conversations}x{turns}-{user_words}in-{output_tokens}out-{interleave}",
        endpoint="chat",
        items=items,
        preset=preset,
        seed=seed,
        salted=True,
        salt_nonce=salt_nonce,
        interleave="alternating" if interleave == "alternating" else "concurrent",
    )
