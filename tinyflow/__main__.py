"""`python -m tinyflow ...` is the `tinyflow` command."""
from .cli import main

raise SystemExit(main())
