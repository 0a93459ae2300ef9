"""Headless Chromium for the browser tests: Debian's `chromium` and `chromium-driver`, driven by Selenium.

Nothing is downloaded: the driver and browser are the system's (Selenium Manager is never asked), and
the launch flags keep Chromium off the network. Without them, `browser_or_skip` says what to install.
Screenshots go to the artefact folder: $TINYFLOW_TEST_ARTIFACTS, or a temporary folder that the test
run's summary names.
"""
import os
import shutil
import tempfile
import time

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
DRIVER_CANDIDATES = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,900")
_ARTIFACTS = []


def missing():
    """What is missing to run the browser tests, as the install instruction to show ('' when nothing is)."""
    needs = []
    try:
        import selenium  # noqa: F401
    except ImportError:
        needs.append("the Python package selenium (pip install -e '.[dev]')")
    if not _first_existing(CHROMIUM_CANDIDATES):
        needs.append("Debian's chromium (as root: apt-get install chromium; scripts/setup.sh does it)")
    if not _first_existing(DRIVER_CANDIDATES):
        needs.append("Debian's chromium-driver (as root: apt-get install chromium-driver; scripts/setup.sh does it)")
    return "; ".join(needs)


def _first_existing(paths):
    return next((p for p in paths if os.path.exists(p)), None) or shutil.which(os.path.basename(paths[0]))


def launch():
    """A headless Chromium WebDriver with a fresh profile (the caller quits it)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = _first_existing(CHROMIUM_CANDIDATES)
    profile = tempfile.mkdtemp(prefix="tinyflow-chromium-")
    for flag in FLAGS + (f"--user-data-dir={profile}",):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=_first_existing(DRIVER_CANDIDATES)), options=options)
    driver.set_page_load_timeout(30)
    driver.profile_dir = profile
    return driver


def goto(driver, url):
    """Open `url` with a clean console log: what the previous page logged (a board polling a server that has
    stopped) is dropped, so `severe_console_errors` speaks of this page only."""
    driver.get("about:blank")
    driver.get_log("browser")
    driver.get(url)


def artifacts_dir():
    """The folder screenshots and pages are saved to (created on first use)."""
    if not _ARTIFACTS:
        folder = os.environ.get("TINYFLOW_TEST_ARTIFACTS") or tempfile.mkdtemp(prefix="tinyflow-artifacts-")
        os.makedirs(folder, exist_ok=True)
        _ARTIFACTS.append(folder)
    return _ARTIFACTS[0]


def used_artifacts_dir():
    """The artefact folder if a test wrote into it, else None (for the run's summary)."""
    return _ARTIFACTS[0] if _ARTIFACTS else None


def screenshot(driver, name):
    """Save a PNG of the window as an artefact; returns its path."""
    path = os.path.join(artifacts_dir(), f"{name}.png")
    if not driver.save_screenshot(path):
        raise AssertionError(f"the browser saved no screenshot to {path}")
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return path


def wait_for(predicate, timeout=10.0, interval=0.05, what="the condition"):
    """Poll `predicate` until it returns something truthy; AssertionError naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def severe_console_errors(driver):
    """JavaScript errors the page logged (a page that throws is broken even if it still shows something)."""
    return [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]
