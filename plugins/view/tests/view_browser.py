"""A real headless Chromium for the page tests: Debian's ``chromium`` driven through its
``chromium-driver`` by selenium (``.ci/run`` installs both; nothing is downloaded at run time)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.wait import WebDriverWait

INSTALL = "apt-get install -y --no-install-recommends chromium chromium-driver"


def _program(*names: str) -> str:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError(f"no {' or '.join(names)} on PATH: the page tests need a real browser ({INSTALL})")


@contextmanager
def chromium(window: tuple[int, int] = (1400, 1000)) -> Iterator[webdriver.Chrome]:
    """A headless Chromium that keeps the page's console messages for ``console_errors``."""
    options = webdriver.ChromeOptions()
    options.binary_location = _program("chromium", "chromium-browser")
    for argument in (
        "--headless=new",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        f"--window-size={window[0]},{window[1]}",
    ):
        options.add_argument(argument)
    if os.geteuid() == 0:
        options.add_argument("--no-sandbox")  # Chromium refuses to start its sandbox as root
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # the driver named explicitly: selenium then never tries to fetch one
    service = Service(executable_path=_program("chromedriver"))
    driver = webdriver.Chrome(options=options, service=service)
    try:
        yield driver
    finally:
        driver.quit()


def console_errors(driver: webdriver.Chrome) -> list[dict[str, Any]]:
    """The page's console messages of level SEVERE since the last call (errors, CSP refusals)."""
    return [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]


def open_page(driver: webdriver.Chrome, page: Path) -> None:
    """Load ``page`` from disk and wait until its script has built everything."""
    driver.get(page.resolve().as_uri())
    WebDriverWait(driver, 60).until(
        lambda current: current.execute_script("return window.rewardkitViewReady === true")
    )
