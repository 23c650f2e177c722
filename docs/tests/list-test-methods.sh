#!/usr/bin/env bash
# The test methods a `./mvnw -B verify` ran, from its surefire and failsafe reports (issue 32: the list before and
# after a change of the suite is committed here, and the after list must hold every before entry).
# usage: docs/tests/list-test-methods.sh [REPO_DIR] > docs/tests/test-methods-<date>-<commit>.txt
# One line per test case: "<module> <kind> <class>#<method> <result>", kind = unit (surefire) or it (failsafe),
# result = passed, failed, error or skipped; sorted, so two lists compare with `comm` or `diff`.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root"
for report in */target/surefire-reports/TEST-*.xml */target/failsafe-reports/TEST-*.xml; do
  [ -e "$report" ] || continue
  module=${report%%/*}
  case "$report" in *failsafe*) kind=it ;; *) kind=unit ;; esac
  # each <testcase .../> or <testcase ...>...</testcase>: its classname and name, then whether a failure,
  # error or skipped element follows before the next test case
  /usr/bin/python3 - "$report" "$module" "$kind" <<'PY'
import sys, xml.etree.ElementTree as ET
path, module, kind = sys.argv[1:4]
for case in ET.parse(path).getroot().iter("testcase"):
    result = "passed"
    for tag in ("failure", "error", "skipped"):
        if case.find(tag) is not None:
            result = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
    print(f"{module} {kind} {case.get('classname')}#{case.get('name')} {result}")
PY
done | sort -u
