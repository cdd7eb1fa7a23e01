"""Settings for every test in the repository (core and providers)."""

import os

from nodewright.cluster.memory import CHECK_READ_ONLY_ENV

# Every in-memory cluster a test makes checks that no reader changes a shared object in place.
os.environ[CHECK_READ_ONLY_ENV] = "1"
