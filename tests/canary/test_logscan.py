"""logscan's patterns on lines as vLLM 0.32 prints them (copied from a real CPU server's log)."""

from __future__ import annotations

from forklift.canary.logscan import LogscanOptions, run_logscan, scan
from forklift.engines.vllm import VLLM
from forklift.quality.endpoint import Endpoint

LOG = """\
(APIServer pid=17451) INFO 12-01 09:14:18 [api_utils.py:286] non-default args: {'model_tag': 'tiny'}
(EngineCore pid=17603) ERROR 12-01 09:15:40 [backend_xgrammar.py:201] Failed to advance FSM for request r1 for tokens 42. Please file an issue.
INFO:     127.0.0.1:50312 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error
INFO:     127.0.0.1:50314 - "POST /v1/chat/completions HTTP/1.1" 200 OK
(EngineCore pid=17603) INFO 12-01 09:15:47 [core.py:1460] [shutdown] EngineCore: trigger received signal=SIGTERM
(APIServer pid=17451) ERROR 12-01 09:15:47 [async_llm.py:906] Traceback (most recent call last):
(APIServer pid=17451) ERROR 12-01 09:15:47 [async_llm.py:906] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.
"""


def test_counts_faults_until_a_deliberate_stop_begins(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(LOG)
    found = scan(log, VLLM)
    assert found["grammar_rejection"]["count"] == 1 and found["http_5xx"]["count"] == 1
    assert found["grammar_rejection"]["first"] == {
        "line": 2,
        "text": "Failed to advance FSM for request r1 for tokens 42. Please file an issue.",
    }
    # The Traceback and EngineDeadError vLLM prints on a clean SIGTERM are teardown, not faults.
    assert found["traceback"]["count"] == 0 and found["engine_dead"]["count"] == 0
    assert scan(log, VLLM, start=len(LOG.splitlines(keepends=True)[0]))["grammar_rejection"]["first"]["line"] == 2
    body = run_logscan(Endpoint("http://x", "m"), LogscanOptions(log=log))
    assert not body.passed
    assert body.failure.startswith("grammar_rejection x1 (first at line 2: Failed to advance FSM")
    assert "http_5xx x1 (first at line 3:" in body.failure
