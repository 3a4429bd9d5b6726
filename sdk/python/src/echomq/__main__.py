"""``python -m echomq``: see echomq._cli (``python -m echomq worker --help``)."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
