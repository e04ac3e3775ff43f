#!/usr/bin/env bash
# System packages that `make install` needs on a fresh Debian/Ubuntu machine, installed only when missing:
# - a C/C++ toolchain and cmake: scripts/build-llama.sh compiles llama.cpp once (llama-server and the shared
#   libraries of llama-cpp-python, the [llm] extra) on the machine's first install;
# - Debian's chromium (+ chromium-driver): the browser tests (HTML report, labelling app) drive it through
#   Playwright with executable_path=/usr/bin/chromium (Playwright never downloads a browser here).
# Uses sudo when not root. BAKEOFF_SKIP_SYSTEM_DEPS=1 skips this step (e.g. a machine without apt; the
# browser tests then fail loudly under `make test`, which requires the browser).
set -euo pipefail
[ "${BAKEOFF_SKIP_SYSTEM_DEPS:-0}" = "1" ] && exit 0
need=()
command -v g++ >/dev/null 2>&1 || need+=(build-essential)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
[ -x /usr/bin/chromium ] || need+=(chromium chromium-driver)
[ ${#need[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: missing ${need[*]} and no apt-get here; install them with your package manager" >&2
  exit 1
fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "system-deps: installing ${need[*]} (apt)"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
