"""The two pages (the speed drill's ``index.html``, the board's ``board.html``) as served:
each body put in the one shell (``static/_shell.html``: the head, the refusal and status
lines, the end screen), as ``reader.web.server.page_files`` reads them from the package."""
from __future__ import annotations

import re

from reader.web.server import page_files


def test_each_page_is_served_whole_in_the_one_shell_and_the_shell_alone_is_not():
    files = page_files()
    assert "_shell.html" not in files
    for name, title, style, script, own in (
            ("index.html", "speed drill", "style.css", "app.js", 'id="choices"'),
            ("board.html", "practice", "board.css", "board.js", 'id="takeover"')):
        body, ctype = files[name]
        page = body.decode("utf-8")
        assert ctype == "text/html; charset=utf-8"
        assert page.startswith('<!doctype html>\n<html lang="ja">\n<head>\n<meta charset="utf-8">')
        assert f"<title>karuta · {title}</title>" in page
        assert f'<link rel="stylesheet" href="/{style}">' in page
        assert f'<script type="module" src="/{script}"></script>' in page
        assert style in files and script in files
        # (the page's own parts between the status line and the end screen, each id once)
        assert page.index('id="status"') < page.index(own) < page.index('<section id="end"')
        ids = re.findall(r'id="([^"]+)"', page)
        assert len(ids) == len(set(ids)) and {"refusal", "status", "join", "endlines"} <= set(ids)
        assert "karuta page:" not in page and "{" not in page
        assert page.endswith("</main>\n</body>\n</html>\n")
