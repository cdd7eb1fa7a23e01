"""``python -m nodewright.commands``: the ``nodewright`` command."""

import sys

from nodewright.commands import main

sys.exit(main())
