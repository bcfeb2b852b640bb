"""Entry point of `python -m modelcore`."""

from __future__ import annotations

import sys

from modelcore.cli import main

sys.exit(main())
