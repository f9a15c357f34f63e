"""How fast is forklift's streaming client? Side by side, in one run, on one core each.

The fake SSE server (tests/fixtures/sse.py) runs on CPU 1; every client runs in its own
process pinned to CPU 0, so "sustained tokens/s" is what one core of client can read.

  1. transport: raw streaming reads with httpx and with aiohttp (the measurement that
     picked aiohttp for forklift.client), no parsing;
  2. sustained: forklift's client (SSE parse, json per chunk, full RequestRecord) and
     `forklift bench` end to end (runner + growing receipt), against guidellm's client
     (its `run` command), all at 64 streams of 1024 one-token chunks, as fast as read;
  3. added TTFT at 1, 64 and 512 streams: the server waits a fixed 20 ms before each
     chunk, so added TTFT = client-measured TTFT - 20 ms (client + loopback + fake server).

Targets (issue 5): sustained >= 2x guidellm's; added p99 TTFT < 1 ms at 64 streams.

    .venv/bin/python benchmarks/client_throughput.py [--guidellm /path/to/venv/bin/guidellm] [--quick]

guidellm is installed into a cache venv on first use (pip install guidellm) unless given.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVER_CPU, CLIENT_CPU = 1, 0
FIRST_CHUNK_DELAY = 0.020
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "forklift-bench-peers"


# --- the server -------------------------------------------------------------------------

def start_server(delay: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fixtures.sse", "--port", "0", "--delay", str(delay)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )
    os.sched_setaffinity(proc.pid, {SERVER_CPU})
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.kill()
        raise SystemExit("fake SSE server did not start")
    return proc, url


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# --- workers: each runs in its own process on CLIENT_CPU ------------------------------------

def body(tokens: int) -> dict:
    return {"model": "fake-sse", "messages": [{"role": "user", "content": "x"}], "max_tokens": tokens}


async def _gather_limited(streams: int, requests: int, one) -> list:
    slots = asyncio.Semaphore(streams)

    async def guarded(i):
        async with slots:
            return await one(i)

    return await asyncio.gather(*(guarded(i) for i in range(requests)))


async def worker_transport(lib: str, url: str, streams: int, requests: int, tokens: int) -> dict:
    """Raw reads, no SSE parsing: what the HTTP library alone costs."""
    target = url + "/v1/chat/completions"
    payload = {**body(tokens), "stream": True}
    if lib == "httpx":
        import httpx

        async with httpx.AsyncClient(timeout=600, limits=httpx.Limits(max_connections=streams)) as client:
            async def one(i):
                n = 0
                async with client.stream("POST", target, json=payload) as r:
                    async for data in r.aiter_raw():
                        n += data.count(b"data: {")
                return n

            start = time.perf_counter()
            counts = await _gather_limited(streams, requests, one)
    else:
        import aiohttp

        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=streams)) as session:
            async def one(i):
                n = 0
                async with session.post(target, json=payload) as r:
                    async for data in r.content.iter_any():
                        n += data.count(b"data: {")
                return n

            start = time.perf_counter()
            counts = await _gather_limited(streams, requests, one)
    seconds = time.perf_counter() - start
    return {"tokens": sum(counts) - requests, "seconds": seconds}  # minus the role-only chunks


async def worker_forklift(url: str, streams: int, requests: int, tokens: int) -> dict:
    """forklift.client: SSE decode, json per chunk, a full RequestRecord per request."""
    from forklift.client.stream import PreparedRequest, StreamClient

    async with StreamClient(url, connections=streams) as client:
        zero = time.perf_counter()
        records = await _gather_limited(
            streams, requests, lambda i: client.send(PreparedRequest(f"p{i}", "chat", body(tokens)), zero=zero)
        )
    return summarize(records)


def worker_bench(url: str, streams: int, requests: int, tokens: int) -> dict:
    """`forklift bench` end to end: runner, progress-free, receipt rewritten as it grows."""
    from forklift.bench.recorder import BenchRecorder
    from forklift.bench.runner import BenchPlan, CellSpec, run_bench
    from forklift.bench.schema import BenchBody
    from forklift.receipts import new_receipt
    from forklift.workload.items import WorkItem, Workload

    items = tuple(WorkItem(id=f"p{i}", messages=[{"role": "user", "content": "x"}], max_tokens=tokens) for i in range(requests))
    workload = Workload(name="throughput", endpoint="chat", items=items)
    plan = BenchPlan(url=url, model="fake-sse", workload=workload, cells=(CellSpec("c", streams),))
    body_ = BenchBody(url=url, model="fake-sse", mode="batch", workload=workload.identity())
    with tempfile.TemporaryDirectory() as folder:
        recorder = BenchRecorder(new_receipt("bench"), body_, Path(folder))
        start = time.perf_counter()
        asyncio.run(run_bench(plan, recorder))
        recorder.finish("ok")
        seconds = time.perf_counter() - start
    records = body_.cells[0].requests
    out = summarize(records)
    out["seconds_with_receipt"] = seconds
    return out


def summarize(records) -> dict:
    import numpy as np

    ok = [r for r in records if r.ok]
    ttft = np.array([r.ttft for r in ok]) * 1000
    return {
        "tokens": int(sum(r.completion_tokens for r in ok)),
        "seconds": max(r.end for r in ok) - min(r.send for r in ok),
        "failed": len(records) - len(ok),
        "ttft_p50_ms": float(np.percentile(ttft, 50)),
        "ttft_p99_ms": float(np.percentile(ttft, 99)),
    }


def worker(args: argparse.Namespace) -> None:
    if args.worker in ("httpx", "aiohttp"):
        out = asyncio.run(worker_transport(args.worker, args.url, args.streams, args.requests, args.tokens))
    elif args.worker == "forklift":
        out = asyncio.run(worker_forklift(args.url, args.streams, args.requests, args.tokens))
    else:
        out = worker_bench(args.url, args.streams, args.requests, args.tokens)
    print(json.dumps(out))


def run_worker(kind: str, url: str, streams: int, requests: int, tokens: int) -> dict:
    argv = [sys.executable, __file__, "--worker", kind, "--url", url, "--streams", str(streams),
            "--requests", str(requests), "--tokens", str(tokens)]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=1800,
                          preexec_fn=lambda: os.sched_setaffinity(0, {CLIENT_CPU}))
    if proc.returncode != 0:
        raise SystemExit(f"{kind} worker failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- the peer: guidellm ---------------------------------------------------------------------

def guidellm_bin(given: str | None) -> Path:
    if given:
        return Path(given)
    venv = CACHE / "guidellm-venv"
    exe = venv / "bin" / "guidellm"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "guidellm"], check=True)
    return exe


def tokenizer_dir() -> Path:
    """guidellm's synthetic data needs a tokenizer: a tiny one built with `tokenizers` (guidellm pulls it in)."""
    out = CACHE / "tokenizer"
    if not (out / "tokenizer.json").exists():
        out.mkdir(parents=True, exist_ok=True)
        script = (
            "import sys\nfrom tokenizers import Tokenizer, models, pre_tokenizers, trainers, decoders\n"
            "from transformers import PreTrainedTokenizerFast\n"
            "t = Tokenizer(models.BPE(unk_token='<unk>')); t.pre_tokenizer = pre_tokenizers.ByteLevel()\n"
            "t.decoder = decoders.ByteLevel()\n"
            "t.train_from_iterator(['the quick brown fox jumps over the lazy dog'] * 50, trainers.BpeTrainer("
            "vocab_size=300, special_tokens=['<unk>', '<s>', '</s>'], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))\n"
            "PreTrainedTokenizerFast(tokenizer_object=t, bos_token='<s>', eos_token='</s>').save_pretrained(sys.argv[1])\n"
        )
        subprocess.run([str(guidellm_python()), "-c", script, str(out)], check=True)
    return out


_GUIDELLM: Path | None = None


def guidellm_python() -> Path:
    assert _GUIDELLM is not None
    return _GUIDELLM.parent / "python"


def run_guidellm(url: str, streams: int, requests: int, tokens: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "g.json"
        argv = [
            str(_GUIDELLM), "run", "--backend", f"kind=openai_http,target={url},model=fake-sse",
            "--profile", f"kind=concurrent,streams={streams}",
            "--data", f"kind=synthetic_text,prompt_tokens=8,output_tokens={tokens}",
            "--tokenizer", f"kind=hf_auto,model={tokenizer_dir()}",
            "--constraint", f"kind=max_requests,count={requests}",
            "--output", f"kind=json,path={out}", "--disable-progress", "--disable-console",
        ]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800, env=env,
                              preexec_fn=lambda: os.sched_setaffinity(0, {CLIENT_CPU}))
        if proc.returncode != 0 or not out.exists():
            raise SystemExit(f"guidellm failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        bench = json.loads(out.read_text())["benchmarks"][0]
    m = bench["metrics"]
    ttft = m["time_to_first_token_ms"]["successful"]["percentiles"]
    return {
        "tokens": int(m["output_token_count"]["successful"]["total_sum"]),
        "seconds": bench["duration"],
        "failed": m["request_totals"]["errored"],
        "ttft_p50_ms": ttft["p50"],
        "ttft_p99_ms": ttft["p99"],
    }


# --- the run ----------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--guidellm", help="path to a guidellm executable (default: installed into a cache venv)")
    parser.add_argument("--quick", action="store_true", help="fewer requests (a smoke run, noisier)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--streams", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--tokens", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    if len(os.sched_getaffinity(0)) < 2:
        raise SystemExit("needs two CPUs: one for the fake server, one for the client")
    global _GUIDELLM
    _GUIDELLM = guidellm_bin(args.guidellm)
    scale = 4 if args.quick else 1
    streams, tokens, requests = 64, 1024, 512 // scale

    print(f"sustained: {streams} streams x {requests} requests x {tokens} tokens, as fast as read; client on 1 core")
    server, url = start_server(0.0)
    try:
        rows = {
            "httpx raw reads": run_worker("httpx", url, streams, requests, tokens),
            "aiohttp raw reads": run_worker("aiohttp", url, streams, requests, tokens),
            "forklift client": run_worker("forklift", url, streams, requests, tokens),
            "forklift bench (runner + receipt)": run_worker("bench", url, streams, requests, tokens),
            "guidellm client": run_guidellm(url, streams, requests, tokens),
        }
    finally:
        stop(server)
    rates = {name: row["tokens"] / row["seconds"] for name, row in rows.items()}
    for name, row in rows.items():
        print(f"  {name:36s} {rates[name]:>10,.0f} tok/s  ({row['tokens']:,} tokens in {row['seconds']:.2f} s)")
    ratio = rates["forklift client"] / rates["guidellm client"]
    print(f"  forklift client / guidellm = {ratio:.2f}x (target >= 2x): {'MET' if ratio >= 2 else 'NOT MET'}")
    print(f"  aiohttp / httpx raw reads = {rates['aiohttp raw reads'] / rates['httpx raw reads']:.2f}x")

    print(f"\nadded TTFT: server sends each chunk after {FIRST_CHUNK_DELAY * 1000:.0f} ms; 32 tokens per request")
    server, url = start_server(FIRST_CHUNK_DELAY)
    try:
        for level in (1, 64, 512):
            count = max(16, 2 * level) // (1 if level < 512 else scale)
            for name, row in (
                ("forklift client", run_worker("forklift", url, level, count, 32)),
                ("guidellm client", run_guidellm(url, level, count, 32)),
            ):
                p50 = row["ttft_p50_ms"] - FIRST_CHUNK_DELAY * 1000
                p99 = row["ttft_p99_ms"] - FIRST_CHUNK_DELAY * 1000
                verdict = ""
                if name == "forklift client" and level == 64:
                    verdict = f"  (target p99 < 1 ms: {'MET' if p99 < 1 else 'NOT MET'})"
                print(f"  {level:>3} streams  {name:16s} added TTFT p50 {p50:7.2f} ms  p99 {p99:7.2f} ms{verdict}")
    finally:
        stop(server)


if __name__ == "__main__":
    main()
