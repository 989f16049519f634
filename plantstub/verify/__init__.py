"""`plantstub verify`: each scenario rule sent to the real service as a request, and the answer judged against the
contract and against the rule's own reply, so a stub's scenarios are known to stay true."""
