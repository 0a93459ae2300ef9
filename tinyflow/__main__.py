"""`python -m tinyflow ...` is the `tinyflow` command."""
import sys

from .cli import main

sys.exit(main())
