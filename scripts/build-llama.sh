#!/usr/bin/env bash
# llama.cpp compiled once for bakeoff: one build of the llama.cpp sources vendored in llama-cpp-python's source
# distribution gives both llama-server (the local LLM's server, <venv>/bin/llama-server, where
# bakeoff.truth.llm.local_server.llama_server_binary looks first) and the shared libraries the Python binding loads
# (the in-process specificity and likelihood scorers), so `pip` never compiles llama.cpp a second time.
#
# The build is cached outside the venv, in ${BAKEOFF_LLAMA_CACHE:-${XDG_CACHE_HOME:-~/.cache}/bakeoff/llama-server}/
# <llama-cpp-python version>-<hash of the CPU flags and build options>/ (built for this CPU: llama.cpp's default
# GGML_NATIVE=ON, Intel AMX kernels off: see below), so a second clone, `make clean` or CI on the same machine
# reuses it. It is built in a temporary folder and moved into place only when complete (a lock serialises
# concurrent installs); a failed build leaves nothing behind but its log. The binding is installed from the same source distribution with its own compile turned off
# (CMAKE_ARGS=-DLLAMA_BUILD=OFF, --no-cache-dir so pip's wheel cache never holds a library-less wheel), then the
# cached libraries are copied into it. The version is the newest llama-cpp-python that pyproject.toml's [llm]
# extra allows (or LLAMA_CPP_PYTHON_VERSION). Usage: build-llama.sh [VENV]
set -euo pipefail
venv=${1:-.venv}
py="$venv/bin/python"
here=$(cd "$(dirname "$0")/.." && pwd)
say() { echo "build-llama: $*" >&2; }
fail() { say "$*"; exit 1; }

command -v cmake >/dev/null || fail "cmake is missing; install it (Debian/Ubuntu: apt-get install cmake; scripts/system-deps.sh does)"
cxx=$(command -v c++ || command -v g++ || command -v clang++ || true)
[ -n "$cxx" ] || fail "no C++ compiler; install one (Debian/Ubuntu: apt-get install build-essential; scripts/system-deps.sh does)"

spec=$("$py" - "$here/pyproject.toml" <<'EOF'
import sys, tomllib
deps = tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]["llm"]
print(next(d for d in deps if d.startswith("llama-cpp-python")).replace("[server]", ""))
EOF
)
[ -n "${LLAMA_CPP_PYTHON_VERSION:-}" ] && spec="llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"

root=${BAKEOFF_LLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bakeoff/llama-server}
mkdir -p "$root/sdist"
# the version: the newest on the index that the spec allows (offline: the newest source already cached)
versions=$("$py" -m pip index versions llama-cpp-python 2>/dev/null | sed -n 's/^Available versions: //p' || true)
[ -n "$versions" ] || versions=$(ls "$root/sdist" 2>/dev/null | sed -n 's/^llama_cpp_python-\(.*\)\.tar\.gz$/\1/p' | paste -sd, -)
version=$("$py" - "$spec" "$versions" <<'EOF'
import sys
from pip._vendor.packaging.requirements import Requirement
from pip._vendor.packaging.version import InvalidVersion, Version

def v(s):
    try:
        return Version(s)
    except InvalidVersion:
        return None

req = Requirement(sys.argv[1])
ok = [x for x in (v(s.strip()) for s in sys.argv[2].split(",")) if x and not x.is_prerelease and x in req.specifier]
print(max(ok) if ok else "")
EOF
)
[ -n "$version" ] || fail "no llama-cpp-python version matches $spec (is the package index reachable?)"
sdist="$root/sdist/llama_cpp_python-$version.tar.gz"
if [ ! -f "$sdist" ]; then
  dl=$(mktemp -d "$root/.download.XXXXXX")
  "$py" -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$dl" \
    || { rm -rf "$dl"; fail "cannot download the source of llama-cpp-python $version (pip download failed)"; }
  mv -f "$dl/llama_cpp_python-$version.tar.gz" "$sdist"; rm -rf "$dl"
fi
if [ -r /proc/cpuinfo ]; then flags=$(grep -m1 -E '^(flags|Features)' /proc/cpuinfo || uname -m)
else flags=$(sysctl -n machdep.cpu.features machdep.cpu.leaf7_features hw.optional 2>/dev/null || uname -m); fi
# Intel AMX kernels off: where -march=native (GGML_NATIVE) turns AMX on, ggml compiles its AMX matmul, whose
# 64-byte tile configuration lives on the stack and is loaded with _tile_loadconfig; GCC 12's intrinsic declares
# an 8-byte memory operand, so the optimiser drops the stores of the tile shapes and ldtilecfg reads stack garbage:
# a general protection fault (or an illegal tile instruction) on the first completion through the AMX weight
# buffer (the binding's default; llama-server with repacking on). Every other ISA extension stays on, and the
# numeric path without weight repacking (llama-server --no-repack, bakeoff's default) is unchanged. The options
# join the cache key, so a build made without them is never reused; a CPU without AMX builds as before.
nocflags=""
if "$cxx" -march=native -dM -E -x c++ /dev/null 2>/dev/null | grep -q '__AMX_TILE__'; then
  nocflags="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
fi
ident=$(printf '%s\n%s' "$(uname -m)" "$flags")
[ -z "$nocflags" ] || ident=$(printf '%s\nflags %s' "$ident" "$nocflags")
key="$version-$(printf '%s' "$ident" | sha256sum | cut -c1-12)"
cache="$root/$key"

if [ ! -f "$cache/BUILD_INFO" ]; then
  exec 9>"$root/.lock-$key"
  flock 9  # another install building the same key: wait for it, then reuse its build
  if [ ! -f "$cache/BUILD_INFO" ]; then
    work=$(mktemp -d "$root/.build-$key.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    log="$root/build-$key.log"
    say "compiling llama.cpp from llama-cpp-python $version for this CPU, once (a few minutes); cached in $cache"
    tar -xzf "$sdist" -C "$work"
    gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
    started=$(date +%s)
    { cmake -S "$work/llama_cpp_python-$version/vendor/llama.cpp" -B "$work/build" "${gen[@]}" \
        -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON \
        -DCMAKE_INSTALL_RPATH='$ORIGIN' -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
        -DLLAMA_BUILD_COMMIT="llama-cpp-python-$version" \
        ${nocflags:+"-DCMAKE_C_FLAGS=${CFLAGS:-} $nocflags" "-DCMAKE_CXX_FLAGS=${CXXFLAGS:-} $nocflags"} \
      && cmake --build "$work/build" --target llama-server llama mtmd -j "$(nproc 2>/dev/null || echo 2)"; } \
      >"$log" 2>&1 \
      || fail "compiling llama.cpp failed ($(sed -n 's/^ *//; /error:\|fatal error/{p;q}' "$log" | grep . || tail -1 "$log")); the log: $log"
    mkdir -p "$work/out/bin"
    cp -a "$work/build/bin/llama-server" "$work/out/bin/"
    find "$work/build" -name 'lib*.so*' \( -type f -o -type l \) -exec cp -a {} "$work/out/bin/" \;
    "$work/out/bin/llama-server" --version >"$work/out/VERSION" 2>&1 \
      || fail "the llama-server just built does not start ($(tail -1 "$work/out/VERSION")); the log: $log"
    printf 'llama-cpp-python %s\nbuilt %s in %ss with %s\nextra flags: %s\n' "$version" "$(date -u +%FT%TZ)" \
      "$(( $(date +%s) - started ))" "$("$cxx" --version | head -1)" "${nocflags:-none}" >"$work/out/BUILD_INFO"
    mv -T "$work/out" "$cache"
    rm -f "$log"
  fi
  exec 9>&-
fi

# the binding, without its own compile, then the cached libraries in it
stamp="$venv/share/bakeoff/llama.source"
site=$("$py" -c 'import importlib.util, os; s = importlib.util.find_spec("llama_cpp"); print(os.path.dirname(s.origin) if s else "")')
if [ "$(cat "$stamp" 2>/dev/null)" != "$key" ] || [ -z "$site" ] || [ ! -e "$site/lib/libllama.so" ]; then
  CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF" "$py" -m pip install --quiet --no-deps --no-cache-dir \
    --force-reinstall "$sdist" || fail "installing the llama-cpp-python $version binding failed"
  site=$("$py" -c 'import importlib.util, os; print(os.path.dirname(importlib.util.find_spec("llama_cpp").origin))')
  mkdir -p "$site/lib"
  cp -a "$cache"/bin/lib*.so* "$site/lib/"
  ln -sfn "$cache/bin/llama-server" "$venv/bin/llama-server.tmp"
  mv -fT "$venv/bin/llama-server.tmp" "$venv/bin/llama-server"
  mkdir -p "$(dirname "$stamp")"
  echo "$key" >"$stamp"
fi
# the binding's Python dependencies come with bakeoff's extras later; here, the libraries must load from its folder
"$py" -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "$site/lib/libllama.so" \
  || fail "the libraries copied into $site/lib do not load"
echo "llama.cpp: llama-cpp-python $version, $(grep -m1 version "$cache/VERSION") ($cache)"
