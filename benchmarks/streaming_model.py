"""Which random Llama makes vLLM CPU stream one token per SSE chunk? Measured, not guessed.

For each (hidden, layers) candidate: build the model (tests/fixtures/tiny_model.py, cached per shape),
boot the real vLLM CPU server of the test engine venv, send 8 streamed completions of 32 tokens one at
a time and 8 at concurrency 4, and print tokens per content chunk (1.00 = every token its own chunk),
tokens per *arrival* (chunks read within 1 ms of the previous one count as one write: what a client
can time), the share of requests that arrived in one write (no TPOT/ITL to measure), the boot time
and the wall time of the requests.
    python benchmarks/streaming_model.py 128x2 256x4 512x8
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.fixtures.engine import ENGINE_ENV, free_port
from tests.fixtures.engine_install import ensure_engine_venv, ensure_tiny_model

PROMPT = "The quick brown fox jumps over the lazy dog. Question: what is two plus two?"


SAME_WRITE_S = 0.001


def stream_once(url: str, salt: int, tokens: int = 32) -> tuple[int, int, int]:
    """(completion tokens, content chunks, arrivals) of one streamed completion."""
    body = {
        "model": "tiny",
        "prompt": f"{salt} {PROMPT}",
        "max_tokens": tokens,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    request = urllib.request.Request(
        f"{url}/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    chunks = used = arrivals = 0
    last = -1.0
    with urllib.request.urlopen(request, timeout=300) as response:
        for raw in response:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = json.loads(line[6:])
            if event.get("usage"):
                used = event["usage"]["completion_tokens"]
            if event.get("choices") and event["choices"][0].get("text"):
                chunks += 1
                now = time.monotonic()
                arrivals += now - last > SAME_WRITE_S
                last = now
    return used, chunks, arrivals


def measure(engine_python: Path, hidden: int, layers: int) -> dict:
    model = ensure_tiny_model(engine_python, hidden=hidden, layers=layers)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [
        str(engine_python),
        "-m",
        "vllm.entrypoints.cli.main",
        "serve",
        str(model),
        "--served-model-name",
        "tiny",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--enforce-eager",
    ]
    log = open(f"/tmp/streaming-model-{hidden}x{layers}.log", "wb")  # noqa: SIM115  # the server writes it while it runs
    started = time.monotonic()
    process = subprocess.Popen(
        argv, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **ENGINE_ENV}, start_new_session=True
    )
    try:
        while True:
            if process.poll() is not None:
                raise SystemExit(f"{hidden}x{layers}: server exited {process.returncode}, see {log.name}")
            try:
                urllib.request.urlopen(f"{url}/health", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        boot_s = time.monotonic() - started
        stream_once(url, -1)  # warm-up
        result = {"shape": f"h{hidden}-l{layers}", "boot_s": round(boot_s, 1)}
        for concurrency in (1, 4):
            t0 = time.monotonic()
            with ThreadPoolExecutor(concurrency) as pool:
                pairs = list(pool.map(lambda salt: stream_once(url, salt), range(8)))
            tokens, chunks = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
            result[f"c{concurrency}_tok_per_chunk"] = round(tokens / max(chunks, 1), 2)
            result[f"c{concurrency}_tok_per_arrival"] = round(tokens / max(sum(p[2] for p in pairs), 1), 2)
            result[f"c{concurrency}_one_write"] = f"{sum(p[2] <= 1 for p in pairs)}/{len(pairs)}"
            result[f"c{concurrency}_wall_s"] = round(time.monotonic() - t0, 1)
        return result
    finally:
        os.killpg(process.pid, 15)
        process.wait(60)


if __name__ == "__main__":
    python = ensure_engine_venv()
    for shape in sys.argv[1:]:
        hidden, layers = (int(x) for x in shape.split("x"))
        print(json.dumps(measure(python, hidden, layers)), flush=True)
