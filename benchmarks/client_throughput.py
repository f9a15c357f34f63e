"""How fast is forklift's streaming client? Side by side, in one run, on one core each.

The fake SSE server (tests/fixtures/sse.py) runs on CPU 1; every client runs in its own
process pinned to CPU 0, so "sustained tokens/s" is what one core of client can read.

  1. transport: raw streaming reads with httpx and with aiohttp (the measurement that
     picked aiohttp for forklift.client), no parsing;
  2. sustained: forklift's client (SSE parse, json per chunk, full RequestRecord) and
     `forklift bench` end to end (runner + growing receipt), against guidellm's client
     (its `run` command), all at 64 streams of 1024 one-token chunks, as fast as read;
  3. added TTFT at 1, 64 and 512 streams: the server waits a fixed 20 ms before each
     chunk. Two readings: "nominal" = client-measured TTFT - 20 ms (client + loopback +
     the fake server's own lateness; the only one guidellm allows), and for forklift
     "client only" = arrival of the first content chunk - the moment the server wrote it,
     both on the box-wide monotonic clock (the server reports its write times).

Each figure is the median of --repeat runs taken in alternating order, so a busy box
moves every client alike; the spread (min..max) is printed beside it.

Targets (issue 5): sustained >= 2x guidellm's; added p99 TTFT < 1 ms at 64 streams.

    .venv/bin/python benchmarks/client_throughput.py [--guidellm /path/to/venv/bin/guidellm] [--quick]

guidellm is installed into a cache venv on first use (pip install guidellm) unless given.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
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
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
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
    """forklift.client: SSE decode, a parse per chunk, a full RequestRecord per request."""
    import numpy as np

    from forklift.client.stream import PreparedRequest, StreamClient

    async with StreamClient(url, connections=streams) as client:
        zero = time.perf_counter()
        records = await _gather_limited(
            streams,
            requests,
            lambda i: client.send(PreparedRequest(f"p{i}", "chat", {**body(tokens), "user": f"p{i}"}), zero=zero),
        )
        async with client.session.get(url + "/stamps") as response:
            written = await response.json()
    out = summarize(records)
    client_only = [(zero + r.first_token - written[r.prompt_id]) * 1000 for r in records if r.prompt_id in written]
    if client_only:
        out["client_only_p50_ms"], out["client_only_p99_ms"] = (float(v) for v in np.percentile(client_only, [50, 99]))
    return out


def worker_bench(url: str, streams: int, requests: int, tokens: int) -> dict:
    """`forklift bench` end to end: runner, progress-free, receipt rewritten as it grows."""
    from forklift.bench.recorder import BenchRecorder
    from forklift.bench.runner import BenchPlan, CellSpec, run_bench
    from forklift.bench.schema import BenchBody
    from forklift.receipts import new_receipt
    from forklift.workload.items import WorkItem, Workload

    items = tuple(
        WorkItem(id=f"p{i}", messages=[{"role": "user", "content": "x"}], max_tokens=tokens) for i in range(requests)
    )
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
    argv = [
        sys.executable,
        __file__,
        "--worker",
        kind,
        "--url",
        url,
        "--streams",
        str(streams),
        "--requests",
        str(requests),
        "--tokens",
        str(tokens),
    ]
    proc = subprocess.run(
        argv,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        preexec_fn=lambda: os.sched_setaffinity(0, {CLIENT_CPU}),
    )
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
            str(_GUIDELLM),
            "run",
            "--backend",
            f"kind=openai_http,target={url},model=fake-sse",
            "--profile",
            f"kind=concurrent,streams={streams}",
            "--data",
            f"kind=synthetic_text,prompt_tokens=8,output_tokens={tokens}",
            "--tokenizer",
            f"kind=hf_auto,model={tokenizer_dir()}",
            "--constraint",
            f"kind=max_requests,count={requests}",
            "--output",
            f"kind=json,path={out}",
            "--disable-progress",
            "--disable-console",
        ]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=1800,
            env=env,
            preexec_fn=lambda: os.sched_setaffinity(0, {CLIENT_CPU}),
        )
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
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure, alternating order; the median is shown")
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
    sustained = {
        "httpx raw reads": lambda u: run_worker("httpx", u, streams, requests, tokens),
        "aiohttp raw reads": lambda u: run_worker("aiohttp", u, streams, requests, tokens),
        "forklift client": lambda u: run_worker("forklift", u, streams, requests, tokens),
        "forklift bench (runner + receipt)": lambda u: run_worker("bench", u, streams, requests, tokens),
        "guidellm client": lambda u: run_guidellm(u, streams, requests, tokens),
    }
    rates = {name: [] for name in sustained}
    server, url = start_server(0.0)
    try:
        for rep in range(args.repeat):
            for name in list(sustained) if rep % 2 == 0 else list(reversed(sustained)):
                row = sustained[name](url)
                rates[name].append(row["tokens"] / row["seconds"])
    finally:
        stop(server)
    median = {name: statistics.median(values) for name, values in rates.items()}
    for name, values in rates.items():
        print(f"  {name:36s} {median[name]:>10,.0f} tok/s  (runs {min(values):,.0f}..{max(values):,.0f})")
    ratio = median["forklift client"] / median["guidellm client"]
    print(f"  forklift client / guidellm = {ratio:.2f}x (target >= 2x): {'MET' if ratio >= 2 else 'NOT MET'}")
    print(f"  aiohttp / httpx raw reads = {median['aiohttp raw reads'] / median['httpx raw reads']:.2f}x")

    print(
        f"\nadded TTFT (ms): the server writes each chunk after {FIRST_CHUNK_DELAY * 1000:.0f} ms; 32 tokens per request"
    )
    server, url = start_server(FIRST_CHUNK_DELAY)
    try:
        for level in (1, 64, 512):
            count = max(16, 2 * level) // (1 if level < 512 else scale)
            rows: dict[str, list[dict]] = {"forklift": [], "guidellm": []}
            for rep in range(args.repeat):
                order = ("forklift", "guidellm") if rep % 2 == 0 else ("guidellm", "forklift")
                for name in order:
                    rows[name].append(
                        run_worker("forklift", url, level, count, 32)
                        if name == "forklift"
                        else run_guidellm(url, level, count, 32)
                    )
            nominal = {
                name: tuple(
                    statistics.median(r[key] for r in got) - FIRST_CHUNK_DELAY * 1000
                    for key in ("ttft_p50_ms", "ttft_p99_ms")
                )
                for name, got in rows.items()
            }
            client_only = tuple(
                statistics.median(r[key] for r in rows["forklift"])
                for key in ("client_only_p50_ms", "client_only_p99_ms")
            )
            verdict = f"  target p99 < 1 ms: {'MET' if client_only[1] < 1 else 'NOT MET'}" if level == 64 else ""
            print(
                f"  {level:>3} streams  nominal p50/p99: forklift {nominal['forklift'][0]:7.2f} / {nominal['forklift'][1]:7.2f}"
                f"   guidellm {nominal['guidellm'][0]:7.2f} / {nominal['guidellm'][1]:7.2f}"
                f"   | forklift client only {client_only[0]:6.2f} / {client_only[1]:6.2f}{verdict}"
            )
    finally:
        stop(server)
    print(f"\nbox: {os.cpu_count()} CPUs, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end")


if __name__ == "__main__":
    main()
