"""One log line per request for CI logs: `text` for people, `json` for machines, `none` for speed."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from plantstub.recording.call import Record

# A decoded path may hold a newline (`/plants%0A`): escaped, so one request is one line and no request
# can write a line of its own into the log.
_ESCAPED = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F)} | {0x2028: "\\u2028", 0x2029: "\\u2029"}


class RequestLogger:
    def __init__(self, log_format: str, stream: TextIO | None = None) -> None:
        self.format = log_format
        self.enabled = log_format in ("text", "json")
        self.stream = stream

    def log(self, call: Record) -> None:
        stream = self.stream or sys.stderr
        status = call.status
        shown = call.fault if status is None else status
        if self.format == "json":
            line = json.dumps({
                "time": call.time, "seq": call.seq, "method": call.method, "path": call.path,
                "status": status, "fault": call.fault, "scenario": call.scenario,
                "rule": call.rule, "valid": call.valid, "errors": list(call.errors),
                "stub_errors": list(call.stub_errors), "answered_by": call.answered_by,
            })
        else:
            verdict = "valid" if call.valid else "INVALID: " + "; ".join(call.errors)
            rule = f"{call.scenario}/{call.rule}" if call.rule else (call.scenario or "-")
            line = f"plantstub: #{call.seq} {call.method} {call.path} -> {shown} [{rule}] {verdict}"
            if call.stub_errors:
                line += " STUB ERROR: " + "; ".join(call.stub_errors)
            service = call.problems.get("upstream") if call.upstream is not None else None
            if service:  # --proxy: the real service's answer broke the contract (recording/verdict.py)
                line += " REAL SERVICE BROKE THE CONTRACT: " + "; ".join(service)
            line = line.translate(_ESCAPED)
        stream.write(line + "\n")
        stream.flush()
