"""`python -m plantstub` is the `plantstub` command."""

from plantstub.cli import main

raise SystemExit(main())
