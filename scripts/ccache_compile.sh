#!/usr/bin/env bash
# The compiler launcher of poslab's builds (CMakeLists.txt) and of the fuzzers (scripts/fuzz.sh): runs one compile
# command through ccache, with the paths under the source folder hashed relative to it, so that a clone in another
# folder reuses what a build of the same sources stored.
# A precompiled header (-o X.gch) is compiled afresh: a previous X.gch at the output path would be read as the
# -include'd header's precompiled form, and ccache would key the new one on the old one's bytes, so a header rebuilt
# in a developer's folder would never match the one a fresh clone builds.
#
# Usage: scripts/ccache_compile.sh SOURCE_DIR CCACHE COMPILER ARGS...
root=$1 ccache=$2
shift 2
prev=
for arg in "$@"; do
  if [ "$prev" = -o ]; then
    case "$arg" in *.gch) rm -f "$arg" ;; esac
  fi
  prev=$arg
done
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
exec "$ccache" "$@"
