"""The journal file's folder: made when missing, as docs/admin-api.md says; a file where a folder goes is said so.

Found by a new user's trial: `--journal afile/calls.jsonl`, where afile is a file, stopped with `cannot open for
writing (File exists)`, and the docs' example of a path that stops the start was one whose folder is simply made.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request

from plantstub import Stub


def test_missing_folders_of_the_journal_are_made(tmp_path):
    journal = tmp_path / "out" / "ci" / "calls.jsonl"
    with Stub(journal=journal) as stub:
        request = urllib.request.Request(stub.url + "plants", data=b'{"id": 1, "name": "Fern"}', method="POST",
                                         headers={"Authorization": "Bearer t", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5) as answer:
            assert answer.status == 200
    [line] = journal.read_text().splitlines()
    assert json.loads(line)["body"] == {"id": 1, "name": "Fern"}


def test_a_file_where_the_journal_s_folder_goes_stops_the_start_saying_so(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    started = subprocess.run([sys.executable, "-m", "plantstub", "serve", "--port", "0", "--journal",
                              "notes.txt/calls.jsonl"], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert (started.returncode, started.stdout) == (1, "")
    assert started.stderr == ("plantstub: --journal='notes.txt/calls.jsonl': cannot open for writing (a part of its "
                              "folder is a file, not a folder)\n")
