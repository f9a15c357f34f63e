"""Strings from a receipt (hostname, setting, build, model, cell name, prompt id) reach neither the terminal
nor report.md as anything but text. Receipts are written by forklift's writer, then edited as an attacker would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from forklift.textsafe import markdown, sh_word, terminal
from tests.stats.synthetic import bench_receipt, records, written

ESCAPES = "\x1b[2J\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07\a\r\b\x9b"
HOSTILE_HOST = f"box{ESCAPES}\n# Injected heading\n<script>alert(1)</script>\n![x](http://evil.example/t.png)|col"
RAW = ("\x1b", "\x07", "\x08", "\r", "\x9b")


def hostile_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "receipts"
    for build, speed in (("0.32.0", 1.0), ("0.33.0", 1.1)):
        receipt = bench_receipt({"c1": records(6, speed=speed)}, engine_version=build)
        path = written(receipt, folder)
        data = json.loads(path.read_text())
        data["fingerprint"]["hostname"] = HOSTILE_HOST
        data["setting"] = f"plain{ESCAPES}"
        data["body"]["model"] = f"tiny{ESCAPES}"
        data["body"]["cells"][0]["name"] = f"c1{ESCAPES}\n## cell heading"
        for record in data["body"]["cells"][0]["requests"]:
            record["prompt_id"] += ESCAPES
        path.write_text(json.dumps(data))
    return folder


def forklift(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "forklift", *args], capture_output=True, text=True, timeout=120)


def test_compare_prints_no_control_character_raw(tmp_path):
    folder = hostile_folder(tmp_path)
    [a, b] = sorted(folder.glob("*.json"))
    for args in ((str(a), str(b)), (str(a), str(b), "--json")):
        result = forklift("compare", *args)
        assert result.returncode == 0, result.stderr
        for char in RAW:
            assert char not in result.stdout + result.stderr, (args, repr(char))
    shown = forklift("compare", str(a), str(b)).stdout
    assert "\\e[2J" in shown and "# Injected heading" not in shown.splitlines()


def test_report_md_keeps_hostile_text_as_text(tmp_path):
    folder = hostile_folder(tmp_path)
    result = forklift("report", str(folder))
    assert result.returncode == 0, result.stderr
    text = (folder / "report.md").read_text()
    for char in RAW:
        assert char not in text, repr(char)
    lines = text.splitlines()
    assert not any(line.startswith(("# Injected", "## cell heading", "<script", "![x]")) for line in lines)
    assert "<script>" not in text
    assert text.count("](http://evil.example") == text.count("\\](http://evil.example")  # never an image or link
    assert "&lt;script&gt;" in text
    # a table row keeps its column count: the hostile pipe is escaped
    header = next(line for line in lines if line.startswith("| receipt |"))
    row = lines[lines.index(header) + 2]
    assert row.replace("\\|", "").count("|") == header.count("|")


def test_one_escaper_per_destination():
    assert terminal("a\x1b[2Jb\x07\r\n\x9b") == "a\\e[2Jb\\a\\r\\n\\x9b"
    assert terminal("line\n", keep="\n") == "line\n"
    assert markdown("x\n# h <b>|![i](u)\\") == "x\\n# h &lt;b&gt;\\|\\!\\[i\\](u)\\\\"
    assert sh_word("$(id) `x`") == "'$(id) `x`'" and sh_word("a\nb") == "$'a\\nb'"
