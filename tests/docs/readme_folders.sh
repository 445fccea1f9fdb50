#!/usr/bin/env bash
# The README's folder table matches the tree: every top-level folder of the source tree has a
# row (| `name/` | ...) and every row names a folder that is there. Build trees (a folder
# holding CMakeCache.txt) and hidden folders are not part of the source.
#   readme_folders.sh SOURCE_DIR
set -euo pipefail
root="$1"
readme="$root/README.md"
rows=$(sed -n 's/^| `\([a-z_A-Z0-9.-]*\)\/` |.*/\1/p' "$readme" | sort)
folders=$(cd "$root" && for d in */; do
  d=${d%/}
  [[ -f "$d/CMakeCache.txt" ]] && continue
  echo "$d"
done | sort)
missing=$(comm -23 <(echo "$folders") <(echo "$rows"))
stale=$(comm -13 <(echo "$folders") <(echo "$rows"))
status=0
for d in $missing; do echo "FAIL: README.md has no row for $d/"; status=1; done
for d in $stale; do echo "FAIL: README.md has a row for $d/, which is not in the tree"; status=1; done
((status == 0)) && echo "README.md's folder table names all $(echo "$folders" | wc -l) folders"
exit $status
