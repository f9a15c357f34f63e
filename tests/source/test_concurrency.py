"""Two processes materializing the same pin into one cache: both succeed, one download, one entry."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from forklift.source.cache import Cache
from tests.source.helpers import cache_entries, sdist_bytes

CHILD = """
import json, sys
from pathlib import Path
from forklift.config.schema import PypiPin
from forklift.source.cache import Cache
from forklift.source.materialize import materialize
pin = PypiPin(source="pypi", package="pkg", version="1.0", sha256=sys.argv[1])
tree = materialize(pin, Path("."), Cache(Path(sys.argv[2])), index_url=sys.argv[3])
print(json.dumps({"path": str(tree.path), "digest": tree.digest}))
"""


def test_two_processes_share_one_cache_entry(index_server, tmp_path):
    big = os.urandom(4 << 20)  # incompressible, so the download takes a while
    sha = index_server.add("pkg", "pkg-1.0.tar.gz", sdist_bytes(extra=[("pkg-1.0/blob.bin", "file", big)]), stall=1.0)
    cache = Cache(tmp_path / "cache")
    argv = [sys.executable, "-c", CHILD, sha, str(cache.root), index_server.index]
    children = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [child.communicate(timeout=120) for child in children]
    assert [child.returncode for child in children] == [0, 0], [err for _, err in results]
    answers = [json.loads(out) for out, _ in results]
    assert answers[0] == answers[1] and answers[0]["digest"] == sha
    assert cache_entries(cache) == {"trees": [f"archive-{sha}", f"archive-{sha}.done"], "tmp": [], "artifacts": [sha]}
    assert sum("/files/" in r for r in index_server.requests) == 1  # the second waited on the lock, then hit the cache
    assert index_server.requests.count("/simple/pkg/") == 1
