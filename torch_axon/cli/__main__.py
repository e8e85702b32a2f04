"""`python -m torch_axon.cli`, the same as the `axon` console script."""

import sys

from torch_axon.cli import main

sys.exit(main())
