#!/usr/bin/env bash
# Build llama.cpp's own server, llama-server, and install it as <venv>/bin/llama-server, where bakeoff's
# local LLM looks first (bakeoff.truth.local_llm.llama_server_binary).
#
# The sources are the llama.cpp tree vendored in the source distribution of the llama-cpp-python version
# installed in the venv (downloaded from the package index, as pip does for that package), so the server
# and the Python bindings are one llama.cpp. Built for this CPU (llama.cpp's default GGML_NATIVE=ON), static,
# without curl/OpenSSL (it only serves local files on 127.0.0.1). Skipped when the installed binary was built
# from that same version (<venv>/share/bakeoff/llama-server.source). Usage: build-llama-server.sh [VENV]
set -euo pipefail
venv=${1:-.venv}
py="$venv/bin/python"
version=$("$py" -c 'import importlib.metadata as m; print(m.version("llama-cpp-python"))')
out="$venv/bin/llama-server"
stamp="$venv/share/bakeoff/llama-server.source"
if [ -x "$out" ] && [ "$(cat "$stamp" 2>/dev/null)" = "llama-cpp-python-$version" ]; then
  exit 0
fi
command -v cmake >/dev/null || { echo "build-llama-server: cmake is missing (scripts/system-deps.sh installs it)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "build-llama-server: building llama-server from llama-cpp-python $version's llama.cpp (a few minutes)"
"$py" -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$work"
tar -xzf "$work/llama_cpp_python-$version.tar.gz" -C "$work"
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$work/llama_cpp_python-$version/vendor/llama.cpp" -B "$work/build" "${gen[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_COMMIT="llama-cpp-python-$version" >"$work/cmake.log" 2>&1 \
  || { tail -20 "$work/cmake.log" >&2; exit 1; }
cmake --build "$work/build" --target llama-server -j "$(nproc 2>/dev/null || echo 2)" >>"$work/cmake.log" 2>&1 \
  || { tail -20 "$work/cmake.log" >&2; exit 1; }
mkdir -p "$(dirname "$stamp")"
install -m 755 "$work/build/bin/llama-server" "$out.tmp"
mv -f "$out.tmp" "$out"
echo "llama-cpp-python-$version" >"$stamp"
"$out" --version 2>&1 | grep -m1 version
