#!/usr/bin/env bash
# cli/test-failures.sh [ROOT]: after a failed ./csi test, the failed and errored test methods of every module with the
# first lines of each one's message, read from the Surefire and Failsafe reports under ROOT (default: the checkout).
# ./csi test prints it last, so the tail of a CI log (all a CI record may keep) names what failed, not only
# Maven's "There are test failures" of the module.
set -uo pipefail
root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
shopt -s nullglob
reports=("$root"/*/target/surefire-reports/*.txt "$root"/*/target/failsafe-reports/*.txt)
failed=0
for report in "${reports[@]}"; do
  grep -q '<<< \(FAILURE\|ERROR\)!' "$report" || continue
  failed=$((failed + 1))
  module="${report#"$root"/}"
  echo "== ${module%%/*}: $(basename "$report" .txt)"
  # each failed method's line, then the first 3 lines of its message (the stack below them is in the report)
  awk '/<<< (FAILURE|ERROR)!/ && !/^Tests run:/ { print "  " $1; left = 3; next }
       left > 0 && !/^\tat / { print "    " substr($0, 1, 400); left--; next }
       /^\tat / { left = 0 }' "$report"
done
if [[ $failed -eq 0 ]]; then
  echo "== no failed test in the reports under $root (the build failed elsewhere: see Maven's errors above)"
fi
