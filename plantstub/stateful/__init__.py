"""`--stateful`: what a spec implies of resources, read once at load: the collections and items, each record's key,
the shape of each answer (wrappers, branches, pages). The store (plantstub/store/) holds records by it; scenario
files' `state:` is checked against it."""

MAX_RECORDS = 10_000  # records one stub keeps, all collections together
MAX_BYTES = 64 * 2**20  # and the bytes they take as held (compact JSON, parsed when read), within --max-bytes
