#!/usr/bin/env bash
# The build refuses a reference or view that outlives its owner: each snippet below holds one
# such mistake and must fail to compile with the flags every kubestat source is built with.
# A snippet is checked where the compiler has the warning that catches it: a pointer to a
# local out of scope (gcc's -Wdangling-pointer), a reference returned by a function whose
# ABSL_ATTRIBUTE_LIFETIME_BOUND parameter was a temporary shared_ptr (clang's -Wdangling,
# gcc's -Wdangling-reference), a string_view of a temporary string (clang's -Wdangling-gsl).
#   dangling_warning_test.sh COMPILER_ID CXX FLAGS...
set -euo pipefail
compiler_id="$1"
cxx="$2"
shift 2
flags=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
has() { local f; for f in "${flags[@]}"; do [[ "$f" == "$1" ]] && return 0; done; return 1; }

checked=0
# expect_refused NAME: the snippet on standard input must not compile, for a dangling reason.
expect_refused() {
  local name="$1"
  cat >"$work/$name.cc"
  if "$cxx" -std=c++20 "${flags[@]}" -c -o "$work/$name.o" "$work/$name.cc" >"$work/$name.log" 2>&1; then
    echo "FAIL: $name compiled: the build does not catch it"
    exit 1
  fi
  if ! grep -q "dangling\|destroyed at the end of the full-expression" "$work/$name.log"; then
    echo "FAIL: $name was refused for another reason:"
    cat "$work/$name.log"
    exit 1
  fi
  echo "ok: $name refused: $(grep -m1 -o 'error: .*' "$work/$name.log")"
  checked=$((checked + 1))
}

if [[ "$compiler_id" == GNU ]]; then
  expect_refused pointer_to_local_out_of_scope <<'CC'
int Use(int);
int Read(int y) {
  const int* p;
  {
    int x = y + 1;
    p = &x;
    Use(x);
  }
  return *p;
}
CC
fi
if has -Wdangling || has -Wdangling-reference; then
  expect_refused part_of_a_temporary_owner <<'CC'
#include <memory>
#include <string>
#include "absl/base/attributes.h"
struct Cache { std::string gzip; };
std::shared_ptr<Cache> Newest();
const std::string& Gzip(const std::shared_ptr<Cache>& cache ABSL_ATTRIBUTE_LIFETIME_BOUND);
size_t Size() {
  const std::string& gzip = Gzip(Newest());
  return gzip.size();
}
CC
fi
if has -Wdangling-gsl; then
  expect_refused view_of_a_temporary_string <<'CC'
#include <string>
#include <string_view>
std::string Render();
size_t Size() {
  std::string_view body = Render();
  return body.size();
}
CC
fi
((checked > 0)) || { echo "FAIL: no snippet applies to $compiler_id with ${flags[*]}"; exit 1; }
echo "$checked dangling snippets refused by $compiler_id"
