"""A FAKE engine for scheduling tests only: the OpenAI-style SSE fake (tests.fixtures.sse) behind forklift's argv.

Where only where and in which order cells run is under test, a real engine's minute-long boot
buys nothing. Takes the argv forklift builds (MODEL --host H --port P ...), writes its pid to
$FAKE_ENGINE_PIDS/<pid> (the event a test waits on: a cell has started), then serves. When a
test asked for it with the file $FAKE_ENGINE_PIDS/hold-<node> (a node's `ray start` exports
FAKE_ENGINE_NODE), the first engine on that node takes the request (renames it to
held-<node>, writing "pid ppid" into it) and holds instead, never listening: a cell stuck mid-boot.
$FAKE_ENGINE_BOOT_S makes every boot wait that long before listening (a boot that waits on a device).
"""

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the engine runs from a Ray worker's folder

from tests.fixtures.sse import Plan, SSEServer


def hold(pids: Path) -> bool:
    node = os.environ.get("FAKE_ENGINE_NODE", "?")
    taken = pids / f"taking-{node}-{os.getpid()}"
    try:
        os.rename(pids / f"hold-{node}", taken)  # one engine wins the request
    except FileNotFoundError:
        return False
    taken.write_text(f"{os.getpid()} {os.getppid()}")
    os.rename(taken, pids / f"held-{node}")
    return True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int)
    args, _ = parser.parse_known_args()
    pids = Path(os.environ["FAKE_ENGINE_PIDS"])
    pids.mkdir(parents=True, exist_ok=True)
    (pids / f"engine-{os.getpid()}").write_text(os.environ.get("FAKE_ENGINE_NODE", "?"))
    print(f"fake engine: {args.model} on {args.host}:{args.port}", flush=True)
    if hold(pids):
        print("fake engine: holding", flush=True)
        while True:
            time.sleep(60)
    time.sleep(float(os.environ.get("FAKE_ENGINE_BOOT_S", "0")))
    server = SSEServer(lambda i, body: Plan(keepalive=False), host=args.host, port=args.port).start()
    with contextlib.suppress(KeyboardInterrupt):
        while True:
            time.sleep(60)
    server.stop()


if __name__ == "__main__":
    main()
