# SPDX-License-Identifier: Apache-2.0
"""python -m recur: see recur.cli."""
import sys

from .cli import main

sys.exit(main())
