#!/usr/bin/env bash
# Install Debian packages the project needs when they are missing (chromium and fonts-noto-cjk for browser tests,
# nginx-light for the rolling-restart test behind the documented proxy, gettext for compiling
# translations). Needs root, as on the CI machines.
set -euo pipefail
need=()
for pkg in "$@"; do
  case "$pkg" in
    chromium) [ -x /usr/bin/chromium ] || need+=(chromium) ;;
    gettext) command -v msgfmt >/dev/null || need+=(gettext) ;;
    *) dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg") ;;
  esac
done
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "error: missing system packages: ${need[*]} (install them with: sudo apt-get install -y ${need[*]})" >&2
  exit 1
fi
echo "installing system packages: ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq "${need[@]}" >/dev/null
