"""What happened: the journal of calls, filters over it, coverage, assertions and the request log."""
