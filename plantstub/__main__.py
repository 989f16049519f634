"""`python -m plantstub` is the `plantstub` command."""

from .cli import main

raise SystemExit(main())
