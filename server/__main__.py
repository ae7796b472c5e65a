"""``python -m torchward.server``: the same as ``torchward lsp``."""

import sys

from . import main

sys.exit(main())
