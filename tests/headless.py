"""Headless Chromium driven over the DevTools protocol on a pipe (no websocket, no extra package).

``--remote-debugging-pipe`` makes Chromium read NUL-terminated JSON commands from fd 3 and write
its answers and events to fd 4. :class:`Page` opens one file URL, evaluates expressions in it
(DevTools evaluation is not subject to the page's CSP, so a page that allows no script can still
be inspected) and clicks as a user does (mouse events at an element's centre), so a test sees
what CSS alone does with the page. Chromium runs in its own process group, killed at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["CHROMIUM", "Page"]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
POLLS = 3000  # evaluations while waiting for the page to load: a hang becomes a failure


class Page:
    """One page in headless Chromium: ``Page(url, profile)`` as a context manager."""

    def __init__(self, url: str, profile: Path, width: int = 1200, height: int = 1600) -> None:
        assert CHROMIUM is not None
        to_child, self._writer = os.pipe()
        self._reader, from_child = os.pipe()
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe"]
        flags += ["--no-first-run", "--disable-background-networking", "--disable-sync"]
        flags += [f"--user-data-dir={profile}", f"--window-size={width},{height}"]

        def fds() -> None:
            os.dup2(to_child, 3)
            os.dup2(from_child, 4)

        self._proc = subprocess.Popen(
            [CHROMIUM, *flags, "about:blank"],
            pass_fds=(3, 4),
            preexec_fn=fds,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        os.close(to_child)
        os.close(from_child)
        self._buffer, self._id = b"", 0
        target = self._call("Target.createTarget", {"url": url})["targetId"]
        attached = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})
        self._session = attached["sessionId"]
        for _ in range(POLLS):
            loaded = f"document.readyState === 'complete' && location.href === {json.dumps(url)}"
            if self.evaluate(loaded):
                break
        else:
            raise AssertionError(f"{url} never finished loading")

    def __enter__(self) -> Page:
        return self

    def __exit__(self, *_: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc.wait()
        os.close(self._writer)
        os.close(self._reader)

    def _call(self, method: str, params: dict[str, Any], session: str | None = None) -> Any:
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._writer, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" in self._buffer:
                line, self._buffer = self._buffer.split(b"\0", 1)
                answer = json.loads(line)
                if answer.get("id") == self._id:
                    assert "error" not in answer, answer["error"]
                    return answer["result"]
            chunk = os.read(self._reader, 1 << 16)
            assert chunk, "chromium closed its DevTools pipe"
            self._buffer += chunk

    def evaluate(self, expression: str) -> Any:
        """The JSON value of ``expression`` in the page."""
        params = {"expression": expression, "returnByValue": True}
        result = self._call("Runtime.evaluate", params, self._session)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def click(self, selector: str) -> None:
        """A left click at the centre of the element ``selector`` names, as a mouse makes it."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        x, y = box
        for kind in ("mousePressed", "mouseReleased"):
            event = {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}
            self._call("Input.dispatchMouseEvent", event, self._session)

    def screenshot(self, path: Path) -> None:
        import base64

        data = self._call("Page.captureScreenshot", {"format": "png"}, self._session)["data"]
        path.write_bytes(base64.b64decode(data))
