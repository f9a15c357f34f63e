#!/usr/bin/env bash
# forklift in a distribution's CI, one job a call (the workflow beside this file calls it; so can any CI):
#   forklift-ci.sh check          every push: the series on the pin at fuzz 0, JUnit + a markdown summary
#                                 (and `forklift lint`'s rules once forklift.toml sets [series] lint = true)
#   forklift-ci.sh upstream-main  nightly: the series tried on upstream's branch head (a git pin's repository),
#                                 so a break shows before the release; a dry run, nothing is written
# Run from the distribution's folder (where forklift.toml is). Outputs:
#   $FORKLIFT_CI_OUT (default forklift-ci/): check.xml (JUnit), flip.md; receipts/ under it
#   $GITHUB_STEP_SUMMARY (default $FORKLIFT_CI_OUT/summary.md): the markdown job summary, appended to
# $FORKLIFT_UPSTREAM_REF: the branch upstream-main tries (default main). Exit status: forklift's own.
set -euo pipefail
results=${FORKLIFT_CI_OUT:-forklift-ci}
mkdir -p "$results"
summary=${GITHUB_STEP_SUMMARY:-$results/summary.md}
case ${1:-} in
  check)
    exec forklift check --junit "$results/check.xml" --summary "$summary" --receipts "$results/receipts"
    ;;
  upstream-main)
    status=0
    forklift flip --git-ref "${FORKLIFT_UPSTREAM_REF:-main}" --report "$results/flip.md" --receipts "$results/receipts" || status=$?
    [ -f "$results/flip.md" ] && cat "$results/flip.md" >>"$summary"
    exit "$status"
    ;;
  *)
    echo "usage: forklift-ci.sh check|upstream-main" >&2
    exit 2
    ;;
esac
