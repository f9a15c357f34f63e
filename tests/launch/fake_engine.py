"""A stand-in engine for fault injection only (the real engine cannot be made to hang or be Ctrl-C'd on cue).

Takes the argv forklift builds (MODEL --served-model-name N --host H --port P ...), starts a
child process (so tests can check the whole process group goes), writes the child's pid to
$FAKE_ENGINE_CHILD_PID, then by $FAKE_ENGINE_MODE:
  never    a real HTTP server that answers /health with 503 forever
  healthy  a real HTTP server that answers /health with 200
  die      prints a traceback ending in a fatal line and exits 3
  hog      touches memory 16 MiB at a time until the kernel stops it (a memory cgroup's OOM killer)
"""

import argparse
import http.server
import os
import subprocess
import sys

parser = argparse.ArgumentParser()
parser.add_argument("model")
parser.add_argument("--host")
parser.add_argument("--port", type=int)
args, _ = parser.parse_known_args()

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(os.environ["FAKE_ENGINE_CHILD_PID"], "w") as fh:
    fh.write(str(child.pid))
mode = os.environ.get("FAKE_ENGINE_MODE", "never")
print(f"fake engine: serving {args.model} mode={mode}", flush=True)
if mode == "hog":
    held = []
    while True:
        held.append(bytearray(16 << 20))  # zero-filled: every page is touched
if mode == "die":
    print("Traceback (most recent call last):", flush=True)
    print("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`", flush=True)
    sys.exit(3)


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if mode == "healthy" and self.path == "/health" else 503)
        self.end_headers()

    def log_message(self, *a):
        print("request", self.path, flush=True)


http.server.HTTPServer((args.host, args.port), Health).serve_forever()
