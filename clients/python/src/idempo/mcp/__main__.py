"""``python -m idempo.mcp``: the guard, as ``idempo-mcp-guard``."""

import sys

from idempo.mcp._serve import main

sys.exit(main())
