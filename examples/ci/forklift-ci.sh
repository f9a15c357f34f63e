#!/usr/bin/env bash
# forklift in a distribution's CI, one job a call (the workflow beside this file calls it; so can any CI):
#   forklift-ci.sh check          every push: the series on the pin at fuzz 0, JUnit + a markdown summary
#                                 (and `forklift lint`'s rules once forklift.toml sets [series] lint = true)
#   forklift-ci.sh source         every push, for a series kept as a fork: SOURCE's commit is published, descends
#                                 from the pin and its tree is exactly the series on the pin (`source verify`)
#   forklift-ci.sh upstream-main  nightly: the series tried on upstream's branch head (a git pin's repository),
#                                 so a break shows before the release; a dry run, nothing is written
#   forklift-ci.sh watch          nightly: a newer release than the pin (the index pip reads, or the git upstream's
#                                 tags) flipped onto, dry run; the pull-request body into the summary; step outputs
#                                 verdict=current|moves|blocked|unreachable and newest=VERSION; red only when blocked
#   forklift-ci.sh pull-request   after watch said moves: flip --write onto $FORKLIFT_NEWEST on a branch
#                                 forklift/pin-VERSION, push it, open the pull request with gh (GH_TOKEN)
# Run from the distribution's folder (where forklift.toml is). Outputs:
#   $FORKLIFT_CI_OUT (default forklift-ci/): check.xml (JUnit), flip.md; receipts/ under it
#   $GITHUB_STEP_SUMMARY (default $FORKLIFT_CI_OUT/summary.md): the markdown job summary, appended to
# $FORKLIFT_UPSTREAM_REF: the branch upstream-main tries (default main). $FORKLIFT_FORK: the fork's clone that
# source verifies (default ci-fork). Exit status: forklift's own.
set -euo pipefail
results=${FORKLIFT_CI_OUT:-forklift-ci}
mkdir -p "$results"
summary=${GITHUB_STEP_SUMMARY:-$results/summary.md}
case ${1:-} in
  check)
    exec forklift check --junit "$results/check.xml" --summary "$summary" --receipts "$results/receipts"
    ;;
  source)
    exec forklift source verify --repo "${FORKLIFT_FORK:-ci-fork}"
    ;;
  upstream-main)
    status=0
    forklift flip --git-ref "${FORKLIFT_UPSTREAM_REF:-main}" --report "$results/flip.md" --receipts "$results/receipts" || status=$?
    [ -f "$results/flip.md" ] && cat "$results/flip.md" >>"$summary"
    exit "$status"
    ;;
  watch)
    status=0
    forklift watch --json --out "$results/watch" --receipts "$results/receipts" >"$results/watch.json" || status=$?
    case $status in
      0) verdict=current ;;
      10) verdict=moves ;;
      11) verdict=blocked ;;
      75) verdict=unreachable ;;
      *) exit "$status" ;;
    esac
    [ -f "$results/watch/pull-request.md" ] && cat "$results/watch/pull-request.md" >>"$summary"
    newest=$(python -c 'import json, sys; print(json.load(open(sys.argv[1]))["newest"])' "$results/watch.json" 2>/dev/null || true)
    printf 'verdict=%s\nnewest=%s\n' "$verdict" "$newest" >>"${GITHUB_OUTPUT:-$results/outputs}"
    [ "$verdict" != blocked ]  # blocked: patches to re-cut before the pin can move, a red nightly
    ;;
  pull-request)
    version=${FORKLIFT_NEWEST:?set FORKLIFT_NEWEST to the release the watch step found}
    branch="forklift/pin-$version"
    forklift flip "$version" --write --receipts "$results/receipts"
    git switch -c "$branch"
    git add -u  # what flip --write moved: forklift.toml, the series, re-cut patches, PATCHES.md (no new files)
    git -c user.name=forklift -c user.email=forklift@users.noreply.github.com commit -qm "Move the pin to $version"
    git push --force origin "$branch"
    gh pr create --title "Move the pin to $version" --body-file "$results/watch/pull-request.md" --head "$branch"
    ;;
  *)
    echo "usage: forklift-ci.sh check|source|upstream-main|watch|pull-request" >&2
    exit 2
    ;;
esac
