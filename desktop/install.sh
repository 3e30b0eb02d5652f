#!/usr/bin/env bash
# Install Foldline into ./.venv (the first README command), and with --test everything the
# test suite needs (the second one). Safe to run again: a second run checks and returns in
# about a second without touching the network.
#
#   bash desktop/install.sh           # app: .venv, `pip install -e .`, Qt's system libraries
#   bash desktop/install.sh --test    # + test extras, chromium, xvfb, xauth, the MCP
#                                     #   conformance suite and reference server, and
#                                     #   TypeScript for the UI's type check (npm)
#
# System packages are installed with apt-get when running as root or with passwordless
# sudo; otherwise the exact apt-get line is printed and the install goes on (the app then
# serves in the browser instead of opening a window). When another apt or unattended
# upgrades hold the dpkg lock, apt-get waits for it (FOLDLINE_APT_LOCK_TIMEOUT seconds,
# 600 by default). A failed system install stops `--test` (the suite would fail later on
# a missing browser or Xvfb); the app install goes on and says what to run.
set -euo pipefail

APT_LOCK_TIMEOUT="${FOLDLINE_APT_LOCK_TIMEOUT:-600}"

# The Debian packages Qt WebEngine needs on a minimal Debian 12, the supported platform. Keep in step
# with QT_APT_PACKAGES in desktop/foldline_desktop/display.py (a test compares them).
QT_APT_PACKAGES=(
  libgl1 libegl1 libfontconfig1 libglib2.0-0 libdbus-1-3 libnss3 libasound2
  libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1
  libxcb-randr0 libxcb-render-util0 libxcb-shape0 libxcb-xkb1 libxcomposite1
  libxdamage1 libxrandr2 libxtst6 libxkbfile1
)
# Browser tests drive Debian's Chromium (never a downloaded browser); the desktop tests run
# the real window under a virtual X server.
TEST_APT_PACKAGES=(chromium xvfb xauth)

usage() {
  echo "usage: bash desktop/install.sh [--test]" >&2
}

with_tests=0
for argument in "$@"; do
  case "$argument" in
    --test) with_tests=1 ;;
    -h | --help)
      usage
      exit 0
      ;;
    *)
      usage
      exit 2
      ;;
  esac
done

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

say() { printf 'install: %s\n' "$*"; }
fail() {
  printf 'install: error: %s\n' "$*" >&2
  exit 1
}

# --- system packages -------------------------------------------------------------------

missing_apt_packages() {
  local package status
  for package in "$@"; do
    status="$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)"
    if [[ "$status" != "install ok installed" ]]; then
      printf '%s\n' "$package"
    fi
  done
}

install_system_packages() {
  local wanted=("${QT_APT_PACKAGES[@]}")
  if ((with_tests)); then
    wanted+=("${TEST_APT_PACKAGES[@]}")
    # npm installs the MCP test programs (tests/node); any Node.js that brings npm will do.
    if [[ -f tests/node/package-lock.json ]] && ! command -v npm >/dev/null 2>&1; then
      wanted+=(nodejs npm)
    fi
  fi
  if ! command -v dpkg-query >/dev/null 2>&1; then
    say "not a Debian-like system: make sure Qt WebEngine's libraries are installed" \
      "(on Debian: ${wanted[*]})"
    return 0
  fi
  local missing
  mapfile -t missing < <(missing_apt_packages "${wanted[@]}")
  if ((${#missing[@]} == 0)); then
    return 0
  fi
  local apt_line="apt-get install -y --no-install-recommends ${missing[*]}"
  local runner=()
  if [[ "$(id -u)" != 0 ]]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      runner=(sudo -n)
    else
      say "cannot install system packages without root; run this, then run the install again:"
      say "  sudo $apt_line"
      return 0
    fi
  fi
  say "installing system packages: ${missing[*]}"
  say "(if another apt or an unattended upgrade holds the dpkg lock, waiting up to" \
    "${APT_LOCK_TIMEOUT} s for it to finish)"
  local apt_log
  apt_log="$(mktemp)"
  # apt's own lock timeout: it waits for the lock instead of failing at once.
  local lock=(-o "DPkg::Lock::Timeout=${APT_LOCK_TIMEOUT}")
  # `apt-get update` only now that something is missing, so a repeat run stays offline.
  if "${runner[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${lock[@]}" update -qq \
    >"$apt_log" 2>&1 \
    && "${runner[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${lock[@]}" \
      ${apt_line#apt-get } -qq >>"$apt_log" 2>&1; then
    rm -f "$apt_log"
    return 0
  fi
  tail -n 20 "$apt_log" >&2
  rm -f "$apt_log"
  if ((with_tests)); then
    fail "apt-get failed (see above), so the test suite cannot run; fix that, then run" \
      "the install again (by hand: sudo $apt_line)"
  fi
  say "apt-get failed (see above); to retry by hand: sudo $apt_line"
  return 0
}

# --- the virtual environment -------------------------------------------------------------

find_python() {
  local candidate
  for candidate in python3 python3.13 python3.12 python3.11; do
    if command -v "$candidate" >/dev/null 2>&1 \
      && "$candidate" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' \
        >/dev/null 2>&1; then
      printf '%s\n' "$candidate"
      return 0
    fi
  done
  return 1
}

ensure_venv() {
  if [[ -x .venv/bin/python ]] && .venv/bin/python -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    return 0
  fi
  if [[ -e .venv ]]; then
    fail ".venv exists but its Python is missing or older than 3.11; remove .venv and rerun"
  fi
  local python
  python="$(find_python)" \
    || fail "Python 3.11 or newer with venv is needed (on Debian: apt-get install python3 python3-venv)"
  say "creating .venv with $("$python" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
  "$python" -m venv .venv || fail "could not create .venv (on Debian: apt-get install python3-venv)"
}

stamp_for() {
  printf '%s\n' "$1" | cat - pyproject.toml | sha256sum | cut -d' ' -f1
}

install_python_packages() {
  local target="." stamp_file=".venv/.foldline-install"
  if ((with_tests)); then
    target=".[test]"
  fi
  # What was installed, from which pyproject: unchanged means nothing to do, so a second
  # run needs neither the network nor pip's resolver. The test install includes the app.
  local stamp accepted
  stamp="$(stamp_for "$target")"
  accepted=("$stamp")
  if ((!with_tests)); then
    accepted+=("$(stamp_for ".[test]")")
  fi
  if [[ -f "$stamp_file" ]] && .venv/bin/python -c 'import foldline, foldline_desktop' 2>/dev/null; then
    local installed candidate
    installed="$(cat "$stamp_file")"
    for candidate in "${accepted[@]}"; do
      if [[ "$installed" == "$candidate" ]]; then
        return 0
      fi
    done
  fi
  say "installing Python packages ($target) into .venv"
  local pip_log
  pip_log="$(mktemp)"
  if ! .venv/bin/python -m pip install --quiet --disable-pip-version-check -e "$target" \
    >"$pip_log" 2>&1; then
    cat "$pip_log" >&2
    rm -f "$pip_log"
    fail "pip install -e \"$target\" failed (output above)"
  fi
  rm -f "$pip_log"
  printf '%s\n' "$stamp" >"$stamp_file"
}

# --- the MCP test programs (npm) -----------------------------------------------------------

install_node_packages() {
  # The official MCP conformance suite and reference server, and TypeScript (the UI's
  # type check, a devDependency), pinned by tests/node's package-lock.json; `npm ci` again
  # only when that lock file changed. `--include=dev` keeps TypeScript even where npm is
  # set to leave development packages out (NODE_ENV=production, `omit=dev`).
  local folder="tests/node" stamp_file="tests/node/node_modules/.foldline-install"
  [[ -f "$folder/package-lock.json" ]] || return 0
  if ! command -v npm >/dev/null 2>&1; then
    say "npm is missing: the MCP conformance tests and the UI's type check cannot run (on Debian: apt-get install npm)"
    return 0
  fi
  local stamp
  stamp="$(sha256sum "$folder/package-lock.json" | cut -d' ' -f1)"
  if [[ -f "$stamp_file" && "$(cat "$stamp_file")" == "$stamp" ]]; then
    return 0
  fi
  say "installing the MCP test programs and TypeScript (npm ci in $folder)"
  local npm_log
  npm_log="$(mktemp)"
  if ! (cd "$folder" && npm ci --include=dev --no-audit --no-fund) >"$npm_log" 2>&1; then
    cat "$npm_log" >&2
    rm -f "$npm_log"
    fail "npm ci in $folder failed (output above)"
  fi
  rm -f "$npm_log"
  printf '%s\n' "$stamp" >"$stamp_file"
}

install_system_packages
ensure_venv
install_python_packages
if ((with_tests)); then
  install_node_packages
  say "ready: run the tests with .venv/bin/python -m pytest"
else
  say "ready: start Foldline with .venv/bin/foldline"
fi
