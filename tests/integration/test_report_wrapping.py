"""The report's failure texts wrap at word boundaries (issue 39): `pytest --plantstub-report` of a run whose failure
says a long sentence, opened in a real browser (tests/browser.py), shows every word of it on one line, and a token
longer than the line wraps inside the box instead of widening it."""

from __future__ import annotations

import pytest

from tests.browser import start_chromium

pytestmark = pytest.mark.slow  # a browser, through its driver's process

SUITE = '''
def test_fails(plantstub):
    words = " ".join(f"contract{i} problem{i} explained" for i in range(40))
    assert False, words + " " + "x" * 600
'''
# Each word of the failure box's text: [the words drawn on more than one line], how many lines the box has, and
# whether its text is wider than the box.
WORDS = """
document.querySelectorAll('details').forEach(d => { d.open = true; });
const pre = document.querySelector('pre.failure');
const broken = [], tops = new Set();
const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
  for (const m of node.data.matchAll(/\\S+/g)) {
    if (m[0].length > 100) continue;  // longer than a line: it must wrap inside, checked by the width below
    const range = document.createRange();
    range.setStart(node, m.index);
    range.setEnd(node, m.index + m[0].length);
    const lines = new Set(Array.from(range.getClientRects(), r => Math.round(r.top)));
    lines.forEach(top => tops.add(top));
    if (lines.size > 1) broken.push(m[0]);
  }
}
return [broken, tops.size, pre.scrollWidth > pre.clientWidth];
"""


def test_a_failure_text_wraps_between_words_and_stays_in_its_box(pytester):
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--plantstub-report", "report.html")
    result.assert_outcomes(failed=1)
    browser = start_chromium()
    try:
        browser.set_window_size(900, 1000)
        browser.get((pytester.path / "report.html").as_uri())
        broken, lines, overflows = browser.execute_script(WORDS)
    finally:
        browser.quit()
    assert lines > 3, "the failure text did not wrap at all: nothing was checked"
    assert broken == [], f"words split across lines: {broken[:5]}"
    assert not overflows  # the 600-character token wrapped inside the box
