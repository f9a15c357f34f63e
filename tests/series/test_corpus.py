"""forklift's engine held to quilt (GNU patch) and git apply on real Debian series (network: the archive).

The fixed CI subset of tests/series/data/debian-corpus.toml (the packages marked `ci`: ~180 patches of 8
packages); `scripts/corpus` runs all 45 packages (1,673 patches). Every verdict, offset, whitespace rule
(git apply's run) and the whole patched tree (bytes, exec bits, links, folders, as `forklift tree`
writes it) must agree. Downloads are cached under the test cache (FORKLIFT_TEST_CACHE or
~/.cache/forklift-tests) through a private apt configuration on the system's own mirror; later runs
only extract and apply.
"""

from __future__ import annotations

import shutil

import pytest

from tests.series import corpus

pytestmark = pytest.mark.network

CI = corpus.packages(ci_only=True)


def _pristine(package: corpus.Package):
    try:
        return corpus.pristine(package)
    except corpus.ArchiveUnreachable as exc:
        pytest.skip(f"SKIPPED: {exc}")


def test_the_ci_subset_is_at_least_100_patches():
    tools = [t for t in ("apt-get", "dpkg-source", "quilt", "patch", "git") if shutil.which(t) is None]
    if tools:
        pytest.skip(f"SKIPPED: the corpus needs {', '.join(tools)} (apt-get install quilt dpkg-dev)")
    assert sum(len(corpus.series_entries(_pristine(p))) for p in CI) >= 100


@pytest.mark.parametrize("applier", ["gnu-patch", "git-apply"])
@pytest.mark.parametrize("package", CI, ids=[p.name for p in CI])
def test_every_verdict_offset_and_byte_agrees_with_the_real_tool(tmp_path, package, applier):
    if shutil.which("quilt") is None:
        pytest.skip("SKIPPED: quilt is not installed (apt-get install quilt)")
    _pristine(package)
    outcome = corpus.compare(package, applier, tmp_path)
    assert outcome.patches == len(corpus.series_entries(_pristine(package)))
    assert outcome.disagreements == [], "\n".join(outcome.disagreements)
    assert outcome.agree == outcome.patches and outcome.files > 0
