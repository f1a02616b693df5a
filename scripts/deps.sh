#!/usr/bin/env bash
# Installs the Debian packages this project needs, only those missing. Idempotent:
# a machine that already has everything makes no network access at all.
#   scripts/deps.sh          what building and running need
#   scripts/deps.sh --test   also what only the tests and checks use (headless Chromium and its
#                            driver, Universal Ctags for scripts/check-shape.sh, nginx as the
#                            load balancer in front of replicas: tests/nginx_balancer.h)
set -euo pipefail

PACKAGES=(
  g++ cmake ninja-build ccache pkg-config
  libsimdjson-dev libre2-dev libyaml-cpp-dev libyaml-dev libcli11-dev
  libspdlog-dev libfmt-dev libssl-dev libboost1.81-dev libtomlplusplus-dev
  libcurl4-openssl-dev zlib1g-dev libdeflate-dev libjemalloc2
  prometheus prometheus-alertmanager libarchive-dev docker-registry apache2-utils openssl
  libgpgme-dev gnupg libgit2-dev git libsqlite3-dev libpqxx-dev postgresql
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-14 libclang-rt-14-dev llvm-14
  libgraphviz-dev
)
if [ "${1:-}" = "--test" ]; then
  PACKAGES+=(chromium chromium-driver python3 universal-ctags nginx-light)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
