"""Build the native decoder step now: `python -m modelcore.decoding.native` (exit 1 with the reason on failure)."""

from __future__ import annotations

import sys
import time

from modelcore.decoding.native import build, enabled


def main() -> int:
    if not enabled():
        print("native decoder step: disabled (MODELCORE_NATIVE=0)")
        return 0
    started = time.perf_counter()
    try:
        module = build()
    except Exception as error:
        print(f"native decoder step: build failed: {str(error).splitlines()[-1] if str(error) else error!r}",
              file=sys.stderr)
        return 1
    print(f"native decoder step: ready in {time.perf_counter() - started:.1f} s ({module.__file__})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
